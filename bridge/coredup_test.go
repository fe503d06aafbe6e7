package bridge

import (
	"context"
	"encoding/json"
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

// TestSharedCoreNamesFollowTheDocumentedRule is the 527-tool case
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
