package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// TestCoreNameOnManyServersIsListedOnce: four file servers each have the
// core name read_file; bridge mode lists one of them, and tool_search
// finds the other three, and the listed one marked already_listed.
func TestCoreNameOnManyServersIsListedOnce(t *testing.T) {
	_, c := startGateway(t, bridgeConfig(), map[string]*server.MCPServer{
		"fs1": fileServer(), "fs2": fileServer(), "fs3": fileServer(), "fs4": fileServer(),
	})
	var reads []string
	for _, n := range toolNames(t, c) {
		if strings.Contains(n, "read_file") {
			reads = append(reads, n)
		}
	}
	if len(reads) != 1 {
		t.Errorf("tools/list has %v, want one read_file", reads)
	}
	res, _ := callText(t, c, toolid.MetaSearch, map[string]any{"query": "read file", "limit": 10})
	var sr SearchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range sr.Tools {
		if h.AlreadyListed != (h.ID == "fs1::read_file") {
			t.Errorf("%s already_listed = %v", h.ID, h.AlreadyListed)
		}
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	if want := []string{"fs1::read_file", "fs2::read_file", "fs3::read_file", "fs4::read_file"}; !slices.Equal(ids, want) {
		t.Errorf("tool_search finds %v, want %v", ids, want)
	}
}

// namedServer offers tools of the given names, each with a description
// that says what it is, under server name.
func namedServer(name string, tools ...string) *server.MCPServer {
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
	for _, n := range tools {
		s.AddTool(mcp.NewTool(n, mcp.WithDescription(strings.ReplaceAll(n, "_", " ")+" on "+name), mcp.WithString("arg")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name), nil
			})
	}
	return s
}

// TestSharedCoreNamesFollowTheDocumentedRule is the issue's 527-tool case
// in small: several servers share core names (fetch, read_file,
// write_file). The listed copy is the one on the server named like the
// tool, else on the first server of the config file; before, the first by
// name kept it (biomcp's fetch over the fetch server's own). tool_search
// finds the listed copies too, marked already_listed and without a second
// definition; before, "write a file" could not find write_file.
func TestSharedCoreNamesFollowTheDocumentedRule(t *testing.T) {
	cfg := bridgeConfig()
	order := []string{"zeta-files", "biomcp", "fetch", "alpha-files"}
	cfg.Servers = map[string]config.Server{}
	for _, n := range order {
		cfg.Servers[n] = config.Server{Command: "unused"}
	}
	cfg.SetServerOrder(order)
	g, c := startGateway(t, cfg, map[string]*server.MCPServer{
		"zeta-files":  namedServer("zeta-files", "read_file", "write_file", "zip_files"),
		"biomcp":      namedServer("biomcp", "fetch", "search_articles", "get_gene"),
		"fetch":       namedServer("fetch", "fetch"),
		"alpha-files": namedServer("alpha-files", "read_file", "write_file", "fetch"),
	})
	// A name several servers have is exposed qualified (docs/names.md).
	listed := toolNames(t, c)
	if want := []string{"fetch__fetch", "tool_call", "tool_describe", "tool_search", "zeta-files__read_file", "zeta-files__write_file"}; !slices.Equal(listed, want) {
		t.Errorf("tools/list = %v, want %v", listed, want)
	}
	cat := g.Catalog()
	for name, server := range map[string]string{"fetch": "fetch", "read_file": "zeta-files", "write_file": "zeta-files"} {
		var got []string
		for _, tl := range cat.Visible {
			if tl.Name == name {
				got = append(got, tl.Server)
			}
		}
		if !slices.Equal(got, []string{server}) {
			t.Errorf("%s is listed from %v, want [%s]", name, got, server)
		}
	}
	bio, _ := cat.ByID("biomcp::fetch")
	if bio == nil || !bio.Deferred || !strings.Contains(bio.Verdict.Reason, `is core on server "fetch" (the server named like the tool)`) {
		t.Errorf("biomcp::fetch: %+v", bio)
	}

	res, text := callText(t, c, toolid.MetaSearch, map[string]any{"query": "write file", "limit": 5})
	var sr SearchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	var sawListed, sawOther bool
	for _, h := range sr.Tools {
		switch h.ID {
		case "zeta-files::write_file":
			sawListed = true
			if !h.AlreadyListed || h.Name != "zeta-files__write_file" || h.Description != "" || h.Parameters != nil {
				t.Errorf("the listed write_file: %+v, want already_listed without its definition", h)
			}
		case "alpha-files::write_file":
			sawOther = true
			if h.AlreadyListed || h.Description == "" || len(h.Parameters) != 1 {
				t.Errorf("the deferred write_file: %+v, want its definition", h)
			}
		}
	}
	if !sawListed || !sawOther {
		t.Errorf("search finds %+v; want both write_file copies", sr.Tools)
	}
	if !strings.Contains(text, "zeta-files__write_file — already listed: call it directly") || strings.Contains(text, "write file on zeta-files") {
		t.Errorf("text:\n%s", text)
	}
}

// TestSharedCoreNamesAtTheIssuesScale is the issue's try in the same
// shape: 527 tools on 40 servers, several of which share core names
// (fetch on biomcp and fetch, read_file and write_file on three file
// servers, web_search on two, bash on two), listed in a config order
// unlike their name order. Each shared core name is listed once, from the
// server the documented rule names, and tool_search finds the listed
// copies marked already_listed.
func TestSharedCoreNamesAtTheIssuesScale(t *testing.T) {
	shared := map[string][]string{
		"biomcp":            {"fetch", "search_articles", "get_gene"},
		"mcp-server-fetch":  {"fetch"},
		"desktop-commander": {"read_file", "write_file", "execute_command", "bash"},
		"filesystem":        {"read_file", "write_file", "list_directory", "move_file"},
		"afs":               {"read_file", "write_file"},
		"brave":             {"web_search"},
		"web-search":        {"web_search"},
		"shell":             {"bash"},
	}
	// The config lists them so that neither name order nor map order
	// gives the rule's answer.
	order := []string{"desktop-commander", "biomcp", "brave", "web-search", "afs", "filesystem", "mcp-server-fetch", "shell"}
	total := 0
	for _, tools := range shared {
		total += len(tools)
	}
	ups := map[string]*server.MCPServer{}
	for name, tools := range shared {
		ups[name] = namedServer(name, tools...)
	}
	for i := 0; total < 527; i++ {
		name := fmt.Sprintf("svc%02d", i)
		var tools []string
		for j := 0; j < 16 && total < 527; j++ {
			tools = append(tools, fmt.Sprintf("%s_op%02d", name, j))
			total++
		}
		ups[name] = namedServer(name, tools...)
		order = append(order, name)
	}
	if len(ups) != 40 {
		t.Fatalf("%d servers, want 40", len(ups))
	}
	cfg := bridgeConfig()
	cfg.Servers = map[string]config.Server{}
	for _, n := range order {
		cfg.Servers[n] = config.Server{Command: "unused"}
	}
	cfg.SetServerOrder(order)
	g, c := startGateway(t, cfg, ups)
	cat := g.Catalog()
	if len(cat.Tools) != 527 {
		t.Fatalf("%d tools, want 527", len(cat.Tools))
	}
	want := map[string]string{
		"fetch":           "mcp-server-fetch",  // named like the tool, listed 7th
		"web_search":      "web-search",        // named like it, after brave
		"bash":            "desktop-commander", // shell is not named like it: the first in the file
		"read_file":       "desktop-commander", // first in the file, not afs (first by name)
		"write_file":      "desktop-commander",
		"execute_command": "desktop-commander", // one copy only
		"list_directory":  "filesystem",
		"move_file":       "filesystem",
	}
	got := map[string][]string{}
	for _, tl := range cat.Visible {
		got[tl.Name] = append(got[tl.Name], tl.Server)
	}
	for name, server := range want {
		if !slices.Equal(got[name], []string{server}) {
			t.Errorf("%s is listed from %v, want [%s]", name, got[name], server)
		}
	}
	if len(cat.Visible) != len(want) {
		t.Errorf("%d tools listed, want %d: %v", len(cat.Visible), len(want), got)
	}
	for _, q := range []struct{ query, id string }{
		{"write a file", "desktop-commander::write_file"},
		{"fetch", "mcp-server-fetch::fetch"},
		{"web search", "web-search::web_search"},
	} {
		sr, _ := searchFor(t, c, map[string]any{"query": q.query, "limit": 10})
		i := hitIndex(sr, q.id)
		if i < 0 || !sr.Tools[i].AlreadyListed {
			t.Errorf("%q: %s is not an already_listed hit: %+v", q.query, q.id, sr.Tools)
		}
		for _, h := range sr.Tools {
			if h.AlreadyListed != !slices.ContainsFunc(cat.Deferred, func(d *Tool) bool { return d.ID == h.ID }) {
				t.Errorf("%q: %s already_listed = %v", q.query, h.ID, h.AlreadyListed)
			}
		}
	}
}
