package bridge

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// The 13 MCP reference servers of testdata/reference-servers, as tests and
// benchmarks serve them: their real tools, schemas byte for byte.

// referenceServer is one MCP reference server's tools as its catalog
// records them.
type referenceServer struct {
	name  string
	tools []mcp.Tool
}

// referenceServers reads the 13 servers of testdata/reference-servers.
func referenceServers(tb testing.TB) []referenceServer {
	tb.Helper()
	return catalogServers(tb, "testdata/reference-servers/catalog.json")
}

// catalogServers reads a catalog file of the shared format,
// {"servers":[{"name","tools":[MCP tool]}]}, decoding each tool as the
// gateway does.
func catalogServers(tb testing.TB, path string) []referenceServer {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var cat struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		tb.Fatal(err)
	}
	servers := make([]referenceServer, len(cat.Servers))
	for i, s := range cat.Servers {
		servers[i].name = s.Name
		for _, r := range s.Tools {
			t, err := upstream.DecodeTool(r)
			if err != nil {
				tb.Fatal(err)
			}
			servers[i].tools = append(servers[i].tools, t)
		}
	}
	return servers
}

// serve returns a fresh in-process server with s's tools (each answers
// "ok") that waits startTime before it answers its first request, as a
// process does while it starts. (Not initialize: mcp-go's client asks a
// server/discover first.)
func (s referenceServer) serve(startTime time.Duration) *server.MCPServer {
	hooks := &server.Hooks{}
	if startTime > 0 {
		var started sync.Once
		hooks.AddOnRequestInitialization(func(context.Context, any, any) error {
			started.Do(func() { time.Sleep(startTime) })
			return nil
		})
	}
	srv := server.NewMCPServer(s.name, "1.0.0", server.WithToolCapabilities(true), server.WithHooks(hooks))
	for _, t := range s.tools {
		srv.AddTool(t, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	return srv
}

// referenceUpstreams serves each reference server in process, starting at
// once.
func referenceUpstreams(tb testing.TB) []upstream.Spec {
	tb.Helper()
	var specs []upstream.Spec
	for _, s := range referenceServers(tb) {
		specs = append(specs, upstream.Spec{Name: s.name, InProcess: s.serve(0)})
	}
	return specs
}

// referenceTools decodes the 99 tools of testdata/reference-servers with
// their raw schemas.
func referenceTools(tb testing.TB) []mcp.Tool {
	tb.Helper()
	var tools []mcp.Tool
	for _, s := range referenceServers(tb) {
		tools = append(tools, s.tools...)
	}
	return tools
}

// BenchmarkDecodeTool decodes the 99 tools of the 13 reference servers
// (testdata), as listing them does.
func BenchmarkDecodeTool(b *testing.B) {
	var raws []json.RawMessage
	for _, tool := range referenceTools(b) {
		raw, err := json.Marshal(tool)
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range raws {
			if _, err := upstream.DecodeTool(raw); err != nil {
				b.Fatal(err)
			}
		}
	}
}
