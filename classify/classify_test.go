package classify

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolbridge/toolbridge/config"
)

func withMeta(t mcp.Tool, fields map[string]any) mcp.Tool {
	t.Meta = &mcp.Meta{AdditionalFields: fields}
	return t
}

func TestClassify(t *testing.T) {
	tool := func(name string) mcp.Tool { return mcp.NewTool(name) }
	deferLoading := func(name string) mcp.Tool {
		tl := mcp.NewTool(name)
		tl.DeferLoading = true
		return tl
	}
	servers := map[string]config.Server{
		"auto":     {Defer: config.DeferAuto},
		"implicit": {},
		"always":   {Defer: config.DeferAlways},
		"never":    {Defer: config.DeferNever},
		"unmarked": {Defer: config.DeferUnmarked},
	}
	tests := []struct {
		name   string
		edit   func(*config.Config) // applied to config.Default() with servers
		server string
		tool   mcp.Tool
		class  config.Class
		reason string
		always bool
	}{
		// 0. A server's deny_tools and allow_tools disable tools first.
		{
			name: "deny_tools beats everything",
			edit: func(c *config.Config) {
				c.Servers = map[string]config.Server{"gh": {DenyTools: []string{"delete_*"}}}
				c.Tools = []config.ToolRule{{Match: "gh::*", Class: config.ClassCore}}
			},
			server: "gh", tool: tool("delete_repo"),
			class: config.ClassDisabled, reason: `server "gh" deny_tools "delete_*"`,
		},
		{
			name: "deny_tools matches the bare name only",
			edit: func(c *config.Config) {
				c.Servers = map[string]config.Server{"gh": {DenyTools: []string{"gh::*"}}}
			},
			server: "gh", tool: tool("delete_repo"),
			class: config.ClassDeferrable, reason: `server "gh" defer: auto (MCP-origin marker)`,
		},
		{
			name: "allow_tools leaves out the rest",
			edit: func(c *config.Config) {
				c.Servers = map[string]config.Server{"gh": {AllowTools: []string{"get_*", "search_*"}}}
			},
			server: "gh", tool: tool("create_issue"),
			class: config.ClassDisabled, reason: `server "gh" allow_tools does not list it`,
		},
		{
			name: "allow_tools keeps what it lists",
			edit: func(c *config.Config) {
				c.Servers = map[string]config.Server{"gh": {AllowTools: []string{"get_*", "search_*"}}}
			},
			server: "gh", tool: tool("search_code"),
			class: config.ClassDeferrable, reason: `server "gh" defer: auto (MCP-origin marker)`,
		},
		{
			name: "deny beats allow",
			edit: func(c *config.Config) {
				c.Servers = map[string]config.Server{"gh": {AllowTools: []string{"*"}, DenyTools: []string{"get_secret"}}}
			},
			server: "gh", tool: tool("get_secret"),
			class: config.ClassDisabled, reason: `server "gh" deny_tools "get_secret"`,
		},
		{
			name: "lists apply to their server only",
			edit: func(c *config.Config) {
				c.Servers = map[string]config.Server{"gh": {AllowTools: []string{"get_*"}}, "auto": {}}
			},
			server: "auto", tool: tool("create_issue"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},

		// 1. Config tool rules come first, first match wins.
		{
			name: "tool rule disables",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "auto::delete_*", Class: config.ClassDisabled}, {Match: "auto::*", Class: config.ClassCore}}
			},
			server: "auto", tool: tool("delete_file"),
			class: config.ClassDisabled, reason: `tool rule 1 "auto::delete_*"`,
		},
		{
			name: "tool rule beats core set",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "auto::read_file", Class: config.ClassDeferrable}}
			},
			server: "auto", tool: tool("read_file"),
			class: config.ClassDeferrable, reason: `tool rule 1 "auto::read_file"`,
		},
		{
			name: "tool rule beats server defer never",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "never::*", Class: config.ClassUnknown}}
			},
			server: "never", tool: tool("x"),
			class: config.ClassUnknown, reason: `tool rule 1 "never::*"`,
		},
		{
			name: "tool rule beats _meta marker",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "auto::x", Class: config.ClassCore}}
			},
			server: "auto", tool: withMeta(deferLoading("x"), map[string]any{MetaDeferrable: true}),
			class: config.ClassCore, reason: `tool rule 1 "auto::x"`,
		},
		{
			name: "first matching rule wins",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{
					{Match: "github::*_issue*", Class: config.ClassCore},
					{Match: "github::*", Class: config.ClassUnknown},
				}
			},
			server: "github", tool: tool("create_issue"),
			class: config.ClassCore, reason: `tool rule 1 "github::*_issue*"`,
		},
		{
			name: "later rule when the first does not match",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{
					{Match: "github::*_issue*", Class: config.ClassCore},
					{Match: "github::*", Class: config.ClassUnknown},
				}
			},
			server: "github", tool: tool("list_commits"),
			class: config.ClassUnknown, reason: `tool rule 2 "github::*"`,
		},
		{
			name: "rule glob over servers",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "*::delete_?ile", Class: config.ClassCore}}
			},
			server: "auto", tool: tool("delete_bile"),
			class: config.ClassCore, reason: `tool rule 1 "*::delete_?ile"`,
		},
		{
			name: "rule glob is case-sensitive",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "auto::Foo", Class: config.ClassCore}}
			},
			server: "auto", tool: tool("foo"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name: "rule star does not cross a slash",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "auto::*", Class: config.ClassCore}}
			},
			server: "auto", tool: tool("a/b"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name: "rule making a defer always tool deferrable keeps Always",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "always::*", Class: config.ClassDeferrable}}
			},
			server: "always", tool: tool("x"),
			class: config.ClassDeferrable, reason: `tool rule 1 "always::*"`, always: true,
		},
		{
			name: "rule deferrable on an auto server is not Always",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "auto::*", Class: config.ClassDeferrable}}
			},
			server: "auto", tool: tool("x"),
			class: config.ClassDeferrable, reason: `tool rule 1 "auto::*"`,
		},

		// 2. The core set.
		{
			name:   "default core set",
			server: "auto", tool: tool("read_file"),
			class: config.ClassCore, reason: `core set: "read_file" in core_tools`,
		},
		{
			name:   "core set beats server defer always",
			server: "always", tool: tool("bash"),
			class: config.ClassCore, reason: `core set: "bash" in core_tools`,
		},
		{
			name:   "core set beats _meta false",
			server: "unmarked", tool: withMeta(tool("fetch"), map[string]any{MetaDeferrable: false}),
			class: config.ClassCore, reason: `core set: "fetch" in core_tools`,
		},
		{
			name:   "core set ignores case",
			server: "auto", tool: tool("Read_FILE"),
			class: config.ClassCore, reason: `core set: "Read_FILE" in core_tools`,
		},
		{
			name:   "server-prefixed name is not core",
			server: "auto", tool: tool("fs__read_file"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "core_tools replaces the default set",
			edit:   func(c *config.Config) { c.CoreTools = []string{"my_tool"} },
			server: "auto", tool: tool("read_file"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "replaced core_tools is core",
			edit:   func(c *config.Config) { c.CoreTools = []string{"My_Tool"} },
			server: "auto", tool: tool("my_tool"),
			class: config.ClassCore, reason: `core set: "my_tool" in core_tools`,
		},
		{
			name:   "empty core_tools has no core name",
			edit:   func(c *config.Config) { c.CoreTools = nil },
			server: "auto", tool: tool("bash"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "never_defer adds to the core set",
			edit:   func(c *config.Config) { c.NeverDefer = []string{"create_issue"} },
			server: "always", tool: tool("create_issue"),
			class: config.ClassCore, reason: `core set: "create_issue" in never_defer`,
		},
		{
			name:   "never_defer keeps the default set",
			edit:   func(c *config.Config) { c.NeverDefer = []string{"create_issue"} },
			server: "auto", tool: tool("write_file"),
			class: config.ClassCore, reason: `core set: "write_file" in core_tools`,
		},
		{
			name:   "never_defer names the source when in both lists",
			edit:   func(c *config.Config) { c.NeverDefer = []string{"bash"} },
			server: "auto", tool: tool("bash"),
			class: config.ClassCore, reason: `core set: "bash" in never_defer`,
		},

		// 3. Explicit server defer.
		{
			name:   "server defer never",
			server: "never", tool: tool("create_issue"),
			class: config.ClassCore, reason: `server "never" defer: never`,
		},
		{
			name:   "server defer never beats _meta true and defer_loading",
			server: "never", tool: withMeta(deferLoading("x"), map[string]any{MetaDeferrable: true}),
			class: config.ClassCore, reason: `server "never" defer: never`,
		},
		{
			name:   "server defer always",
			server: "always", tool: tool("create_issue"),
			class: config.ClassDeferrable, reason: `server "always" defer: always`, always: true,
		},
		{
			name:   "server defer always beats _meta false",
			server: "always", tool: withMeta(tool("x"), map[string]any{MetaDeferrable: false}),
			class: config.ClassDeferrable, reason: `server "always" defer: always`, always: true,
		},
		{
			name:   "server defer unmarked",
			server: "unmarked", tool: tool("create_issue"),
			class: config.ClassUnknown, reason: `server "unmarked" defer: unmarked`,
		},
		{
			name:   "server defer unmarked beats _meta true",
			server: "unmarked", tool: withMeta(tool("x"), map[string]any{MetaDeferrable: true}),
			class: config.ClassUnknown, reason: `server "unmarked" defer: unmarked`,
		},
		{
			name:   "server defer unmarked beats the mcp_ prefix",
			server: "unmarked", tool: tool("mcp_x"),
			class: config.ClassUnknown, reason: `server "unmarked" defer: unmarked`,
		},

		// 4. The tool's own marker.
		{
			name:   "_meta true",
			server: "auto", tool: withMeta(tool("x"), map[string]any{MetaDeferrable: true}),
			class: config.ClassDeferrable, reason: `_meta "io.toolbridge/deferrable": true`,
		},
		{
			name:   "_meta false beats the MCP-origin marker",
			server: "auto", tool: withMeta(tool("x"), map[string]any{MetaDeferrable: false}),
			class: config.ClassUnknown, reason: `_meta "io.toolbridge/deferrable": false`,
		},
		{
			name:   "_meta false beats defer_loading",
			server: "implicit", tool: withMeta(deferLoading("x"), map[string]any{MetaDeferrable: false}),
			class: config.ClassUnknown, reason: `_meta "io.toolbridge/deferrable": false`,
		},
		{
			name:   "_meta false beats the mcp_ prefix",
			server: "", tool: withMeta(tool("mcp_x"), map[string]any{MetaDeferrable: false}),
			class: config.ClassUnknown, reason: `_meta "io.toolbridge/deferrable": false`,
		},
		{
			name:   "_meta non-boolean is ignored",
			server: "", tool: withMeta(tool("x"), map[string]any{MetaDeferrable: "true"}),
			class: config.ClassUnknown, reason: "no rule matched",
		},
		{
			name:   "_meta other keys are ignored",
			server: "auto", tool: withMeta(tool("x"), map[string]any{"other": false}),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "defer_loading",
			server: "auto", tool: deferLoading("x"),
			class: config.ClassDeferrable, reason: "defer_loading: true",
		},
		{
			name:   "defer_loading without a server",
			server: "", tool: deferLoading("x"),
			class: config.ClassDeferrable, reason: "defer_loading: true",
		},

		// 5. The implicit MCP-origin marker.
		{
			name:   "server defer auto",
			server: "auto", tool: tool("create_issue"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "server defer empty is auto",
			server: "implicit", tool: tool("create_issue"),
			class: config.ClassDeferrable, reason: `server "implicit" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "server missing from the config is auto",
			server: "elsewhere", tool: tool("create_issue"),
			class: config.ClassDeferrable, reason: `server "elsewhere" defer: auto (MCP-origin marker)`,
		},
		{
			name:   "MCP-origin marker beats the prefix",
			server: "auto", tool: tool("mcp_x"),
			class: config.ClassDeferrable, reason: `server "auto" defer: auto (MCP-origin marker)`,
		},

		// 6. The prefix: only a tool without a server reaches it.
		{
			name:   "mcp_ prefix",
			server: "", tool: tool("mcp_search"),
			class: config.ClassDeferrable, reason: `name prefix "mcp_"`,
		},
		{
			name:   "prefix is case-sensitive",
			server: "", tool: tool("MCP_search"),
			class: config.ClassUnknown, reason: "no rule matched",
		},
		{
			name:   "deferrable_prefixes replaces mcp_",
			edit:   func(c *config.Config) { c.DeferrablePrefixes = []string{"ext_", "x_"} },
			server: "", tool: tool("x_search"),
			class: config.ClassDeferrable, reason: `name prefix "x_"`,
		},
		{
			name:   "replaced prefixes drop mcp_",
			edit:   func(c *config.Config) { c.DeferrablePrefixes = []string{"x_"} },
			server: "", tool: tool("mcp_search"),
			class: config.ClassUnknown, reason: "no rule matched",
		},
		{
			name:   "empty prefix matches nothing",
			edit:   func(c *config.Config) { c.DeferrablePrefixes = []string{""} },
			server: "", tool: tool("search"),
			class: config.ClassUnknown, reason: "no rule matched",
		},

		// 7. Unknown.
		{
			name:   "nothing matched",
			server: "", tool: tool("search"),
			class: config.ClassUnknown, reason: "no rule matched",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Servers = servers
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			c, err := New(&cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got := c.Classify(tt.server, tt.tool)
			want := Verdict{Class: tt.class, Reason: tt.reason, Always: tt.always}
			if got != want {
				t.Errorf("Classify(%q, %q) = %+v, want %+v", tt.server, tt.tool.Name, got, want)
			}
		})
	}
}

func TestNewNilConfigUsesDefaults(t *testing.T) {
	c, err := New(nil)
	if err != nil {
		t.Fatalf("New(nil): %v", err)
	}
	if got := c.Classify("s", mcp.NewTool("read_file")); got.Class != config.ClassCore {
		t.Errorf("read_file = %+v, want core", got)
	}
	if got := c.Classify("", mcp.NewTool("mcp_x")); got.Class != config.ClassDeferrable {
		t.Errorf("mcp_x = %+v, want deferrable", got)
	}
}

func TestNewBrokenConfig(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*config.Config)
		wants []string // substrings of the error
	}{
		{
			name:  "unclosed class",
			edit:  func(c *config.Config) { c.Tools = []config.ToolRule{{Match: "github::[", Class: config.ClassCore}} },
			wants: []string{"tool rule 1", `"github::["`, "bad glob", "syntax error in pattern"},
		},
		{
			name:  "trailing backslash",
			edit:  func(c *config.Config) { c.Tools = []config.ToolRule{{Match: `github::x\`, Class: config.ClassCore}} },
			wants: []string{"tool rule 1", "bad glob"},
		},
		{
			name: "bad glob after a good one, behind a prefix that never matches",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{
					{Match: "a::*", Class: config.ClassCore},
					{Match: "zzz::[]a]x[", Class: config.ClassCore},
				}
			},
			wants: []string{"tool rule 2", `"zzz::[]a]x["`, "bad glob"},
		},
		{
			name:  "empty match",
			edit:  func(c *config.Config) { c.Tools = []config.ToolRule{{Match: "", Class: config.ClassCore}} },
			wants: []string{"tool rule 1", "empty match"},
		},
		{
			name:  "unknown class",
			edit:  func(c *config.Config) { c.Tools = []config.ToolRule{{Match: "a::*", Class: "visible"}} },
			wants: []string{"tool rule 1", `"visible"`, "unknown class"},
		},
		{
			name:  "empty class",
			edit:  func(c *config.Config) { c.Tools = []config.ToolRule{{Match: "a::*"}} },
			wants: []string{"tool rule 1", "unknown class"},
		},
		{
			name:  "bad deny_tools glob",
			edit:  func(c *config.Config) { c.Servers = map[string]config.Server{"gh": {DenyTools: []string{"[x"}}} },
			wants: []string{`server "gh"`, `"[x"`, "syntax error in pattern"},
		},
		{
			name:  "unknown server defer",
			edit:  func(c *config.Config) { c.Servers = map[string]config.Server{"gh": {Defer: "sometimes"}} },
			wants: []string{`server "gh"`, `"sometimes"`},
		},
		{
			name: "every error is reported",
			edit: func(c *config.Config) {
				c.Tools = []config.ToolRule{{Match: "[", Class: config.ClassCore}, {Match: "ok", Class: "nope"}}
				c.Servers = map[string]config.Server{"gh": {Defer: "later"}}
			},
			wants: []string{"tool rule 1", "tool rule 2", `server "gh"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			tt.edit(&cfg)
			c, err := New(&cfg)
			if err == nil {
				t.Fatalf("New = %v, nil; want an error", c)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func BenchmarkClassify(b *testing.B) {
	cfg := config.Default()
	cfg.Servers = map[string]config.Server{"github": {Defer: config.DeferAlways}, "slack": {Defer: config.DeferNever}}
	cfg.Tools = []config.ToolRule{
		{Match: "github::*_issue*", Class: config.ClassCore},
		{Match: "gitlab::*_merge_request", Class: config.ClassUnknown},
		{Match: "memory::*", Class: config.ClassDeferrable},
	}
	c, err := New(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	servers, tools := manyTools(b, 10_000)
	for b.Loop() {
		for i, t := range tools {
			c.Classify(servers[i], t)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tools)), "ns/tool")
}

// TestClassifyAllKeepsOneCopyOfACoreName checks the cross-server rule: a
// core_tools name on several servers is core on one server only (one that
// lists it anyway, by defer: never, before the others; then the first by
// name when the config names none of them), so the listed set does not
// grow with the servers sharing it, while never_defer, tool rules and
// `defer: never` keep every copy core.
func TestClassifyAllKeepsOneCopyOfACoreName(t *testing.T) {
	cfg := config.Default()
	cfg.NeverDefer = []string{"pinned"}
	cfg.Servers = map[string]config.Server{"local": {Defer: config.DeferNever}, "zz-always": {Defer: config.DeferAlways}}
	cfg.Tools = []config.ToolRule{{Match: "fs3::list_directory", Class: config.ClassCore}}
	c, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tools []Tool
	// Servers out of name order: the keeper is the first by name, not by
	// position.
	for _, s := range []string{"fs4", "fs2", "fs3", "fs1", "local", "zz-always"} {
		for _, n := range []string{"read_file", "list_directory", "pinned", "create_issue"} {
			tools = append(tools, Tool{Server: s, Tool: mcp.NewTool(n)})
		}
	}
	got := c.ClassifyAll(tools)
	want := map[string]config.Class{}
	for _, s := range []string{"fs4", "fs2", "fs3", "fs1", "local", "zz-always"} {
		want[s+"::read_file"] = config.ClassDeferrable
		want[s+"::list_directory"] = config.ClassDeferrable
		want[s+"::pinned"] = config.ClassCore // never_defer: every copy
		want[s+"::create_issue"] = config.ClassDeferrable
	}
	// local lists them anyway (defer: never), so it keeps the core
	// names; a tool rule keeps its copy.
	for _, id := range []string{"fs3::list_directory",
		"local::read_file", "local::list_directory", "local::create_issue"} {
		want[id] = config.ClassCore
	}
	core := 0
	for i, tl := range tools {
		id := tl.Server + "::" + tl.Tool.Name
		if got[i].Class != want[id] {
			t.Errorf("%s: %s (%s), want %s", id, got[i].Class, got[i].Reason, want[id])
		}
		if one := c.Classify(tl.Server, tl.Tool); (tl.Tool.Name == "pinned" || tl.Tool.Name == "create_issue") && got[i] != one {
			t.Errorf("%s: %+v, but Classify says %+v", id, got[i], one)
		}
		if got[i].Class == config.ClassCore && tl.Tool.Name == "read_file" {
			core++
		}
	}
	if core != 1 { // local, which lists it anyway
		t.Errorf("%d servers list read_file as core, want 1", core)
	}
	fs2 := got[slicesIndex(tools, "fs2", "read_file")]
	if want := `core set: "read_file" is core on server "local" (listed there anyway: defer: never); server "fs2" defer: auto (MCP-origin marker)`; fs2.Reason != want {
		t.Errorf("fs2::read_file reason %q, want %q", fs2.Reason, want)
	}
	za := got[slicesIndex(tools, "zz-always", "read_file")]
	if !za.Always || za.Class != config.ClassDeferrable {
		t.Errorf("zz-always::read_file: %+v, want deferrable and Always", za)
	}
	if len(c.ClassifyAll(nil)) != 0 {
		t.Error("ClassifyAll(nil) is not empty")
	}
}

func slicesIndex(tools []Tool, server, name string) int {
	for i, t := range tools {
		if t.Server == server && t.Tool.Name == name {
			return i
		}
	}
	return -1
}
