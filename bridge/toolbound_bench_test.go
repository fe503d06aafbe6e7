package bridge

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// BenchmarkOneServerPastTheToolBound is one in-process server that lists
// 100,000 tools (copies of the reference servers' tools, real shapes)
// against the default max_tools_per_server (2000), with pinning to a
// state directory as toolbridge runs by default. It reports:
//
//   - heap-bytes: the growth of HeapInuse+StackInuse from before New to
//     after Connect (the upstream server and its 100,000 tools are built
//     before and not counted)
//   - bytes/tool: heap-bytes over the tools kept: the memory one tool
//     costs the gateway (catalog, token counts, index, pins)
//   - tools: the tools kept
//
// Measured (2 shared cores, go1.26, -benchtime 3x): 4989 bytes/tool, 10
// MB for the 2000 kept; the bound stated in max_tools_per_server's doc is
// 5 KB a tool, so about 10 MB per server whatever it lists. Most of the
// time per op is the in-process upstream marshalling its 100,000 tools,
// not the gateway. Run it alone for clean figures:
//
//	go test ./bridge -run '^$' -bench 'OneServerPastTheToolBound' -benchtime 3x
func BenchmarkOneServerPastTheToolBound(b *testing.B) {
	const offered = 100_000
	base := referenceTools(b)
	up := server.NewMCPServer("huge", "1.0.0", server.WithToolCapabilities(true))
	for i := range offered {
		tool := base[i%len(base)]
		tool.Name += "_" + strconv.Itoa(i)
		up.AddTool(tool, okHandler)
	}
	specs := []upstream.Spec{{Name: "huge", InProcess: up}}
	var heap uint64
	var kept int
	for b.Loop() {
		cfg := config.Default()
		cfg.Mode = config.ModeOn
		cfg.CoreTools = nil
		cfg.StateDir = b.TempDir()
		before := liveHeap()
		g, err := New(&cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Connect(context.Background(), specs); err != nil {
			b.Fatal(err)
		}
		kept = len(g.Catalog().Tools)
		heap = liveHeap() - before
		runtime.KeepAlive(g)
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if kept != config.DefaultMaxToolsPerServer {
		b.Fatalf("kept %d tools, want max_tools_per_server (%d)", kept, config.DefaultMaxToolsPerServer)
	}
	b.ReportMetric(float64(heap), "heap-bytes")
	b.ReportMetric(float64(heap)/float64(kept), "bytes/tool")
	b.ReportMetric(float64(kept), "tools")
}
