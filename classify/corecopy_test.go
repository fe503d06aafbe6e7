package classify

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
)

// TestVisibleCopyOfASharedCoreName is the rule a user can predict for a
// core name that several servers have: the server named like the tool,
// then the order of the config file; before, the server whose name sorted
// first kept it, so biomcp's fetch was listed and the fetch server's own
// was deferred.
func TestVisibleCopyOfASharedCoreName(t *testing.T) {
	cfg := config.Default()
	cfg.Servers = map[string]config.Server{}
	order := []string{"zeta-files", "biomcp", "mcp-server-fetch", "alpha-files", "web-search"}
	for _, n := range order {
		cfg.Servers[n] = config.Server{Command: "x"}
	}
	cfg.SetServerOrder(order)
	c, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tools []Tool
	add := func(server string, names ...string) {
		for _, n := range names {
			tools = append(tools, Tool{Server: server, Tool: mcp.NewTool(n)})
		}
	}
	add("alpha-files", "read_file", "fetch", "web_search")
	add("biomcp", "fetch", "read_file")
	add("mcp-server-fetch", "fetch")
	add("web-search", "web_search")
	add("zeta-files", "read_file")
	add("unconfigured", "read_file", "bash")
	got := c.ClassifyAll(tools)
	core := map[string]string{}
	for i, tl := range tools {
		if got[i].Class == config.ClassCore {
			if prev, ok := core[tl.Tool.Name]; ok {
				t.Errorf("%s is core on %s and %s", tl.Tool.Name, prev, tl.Server)
			}
			core[tl.Tool.Name] = tl.Server
		}
	}
	want := map[string]string{
		"fetch":      "mcp-server-fetch", // named like the tool, though biomcp comes first
		"web_search": "web-search",       // named like it, separators aside
		"read_file":  "zeta-files",       // first in the config file, not by name
		"bash":       "unconfigured",     // the only one
	}
	for name, server := range want {
		if core[name] != server {
			t.Errorf("%s is core on %q, want %q", name, core[name], server)
		}
	}
	reason := func(server, name string) string { return got[slicesIndex(tools, server, name)].Reason }
	if r := reason("biomcp", "fetch"); !strings.Contains(r, `is core on server "mcp-server-fetch" (the server named like the tool)`) {
		t.Errorf("biomcp::fetch reason %q", r)
	}
	if r := reason("alpha-files", "read_file"); !strings.Contains(r, `is core on server "zeta-files" (first of them in the config file)`) {
		t.Errorf("alpha-files::read_file reason %q", r)
	}
	if r := reason("zeta-files", "read_file"); !strings.Contains(r, "listed here, not on the 3 other servers that have it (first of them in the config file)") {
		t.Errorf("zeta-files::read_file reason %q", r)
	}
	if r := reason("unconfigured", "bash"); r != `core set: "bash" in core_tools` {
		t.Errorf("a core name on one server has reason %q", r)
	}
}

// TestDeprecatedCoreToolGivesWayToItsReplacement: the filesystem server's
// read_file says "DEPRECATED: Use read_text_file instead"; before, the core
// set kept it listed while read_text_file was deferred.
func TestDeprecatedCoreToolGivesWayToItsReplacement(t *testing.T) {
	c, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := []Tool{
		{Server: "filesystem", Tool: mcp.NewTool("read_file", mcp.WithDescription("Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."))},
		{Server: "filesystem", Tool: mcp.NewTool("read_text_file", mcp.WithDescription("Read the complete contents of a file from the file system as text."))},
		{Server: "filesystem", Tool: mcp.NewTool("write_file", mcp.WithDescription("Create a new file."))},
		{Server: "old", Tool: mcp.NewTool("bash", mcp.WithDescription("deprecated, kept for old clients"))},
	}
	got := c.ClassifyAll(tools)
	want := []config.Class{config.ClassDeferrable, config.ClassCore, config.ClassCore, config.ClassDeferrable}
	for i := range tools {
		if got[i].Class != want[i] {
			t.Errorf("%s::%s: %s (%s), want %s", tools[i].Server, tools[i].Tool.Name, got[i].Class, got[i].Reason, want[i])
		}
	}
	if r := got[0].Reason; !strings.HasPrefix(r, `core set: "read_file" is deprecated (core in its place: "read_text_file"); `) {
		t.Errorf("read_file reason %q", r)
	}
	if r := got[1].Reason; r != `core set: replaces the deprecated "read_file" in core_tools` {
		t.Errorf("read_text_file reason %q", r)
	}
}

func TestDeprecated(t *testing.T) {
	for _, tc := range []struct {
		desc, name string
		dep        bool
		repl       string
	}{
		{"Read a file. DEPRECATED: Use read_text_file instead.", "read_file", true, "read_text_file"},
		{"Deprecated: use `search_v2` instead", "search", true, "search_v2"},
		{"**Deprecated** — kept for compatibility", "x", true, ""},
		{"(deprecated) Use 'new_tool' instead of this one", "x", true, "new_tool"},
		{"Old tool (deprecated). Please use new_tool instead.", "x", true, "new_tool"},
		{"Lists deprecated packages of a project", "x", false, ""},
		{"Use this instead of grep", "x", false, ""},
		{"", "x", false, ""},
		{"DEPRECATED", "x", true, ""},
		{"Lists NONDEPRECATED and DEPRECATEDS packages", "x", false, ""},
		{strings.Repeat("Thinks step by step, revising earlier thoughts. ", 60), "x", false, ""},
		{strings.Repeat("Thinks step by step. ", 60) + "DEPRECATED, use think_v2 instead", "x", true, "think_v2"},
	} {
		dep, repl := Deprecated(mcp.Tool{Name: tc.name, Description: tc.desc})
		if dep != tc.dep || repl != tc.repl {
			t.Errorf("Deprecated(%q) = %v, %q; want %v, %q", tc.desc, dep, repl, tc.dep, tc.repl)
		}
	}
}

// BenchmarkDeprecated measures the deprecation check over a long
// description that does not say it (the sequential-thinking server's is
// 2.8 KB): tool_search makes it for every hit it answers.
func BenchmarkDeprecated(b *testing.B) {
	tool := mcp.Tool{Name: "sequentialthinking", Description: strings.Repeat("A detailed tool for dynamic and reflective problem-solving through thoughts. ", 36)}
	for b.Loop() {
		if dep, _ := Deprecated(tool); dep {
			b.Fatal("deprecated")
		}
	}
}
