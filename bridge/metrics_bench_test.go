package bridge

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// BenchmarkToolCallMetrics is what the operator metrics cost a tool
// call, with telemetry.prometheus off and on:
//
//   - handler: one whole tool_call through the gateway's handler in front
//     of an in-process upstream (as BenchmarkToolCallHandler), where the
//     difference between off and on is the metrics' share;
//   - record: countCall alone, the hook in dispatch (0 allocs/op).
//
// On a shared machine the handler's figures vary by more than the
// metrics cost; compare record, and the cpu-ns/op of the handler pair.
func BenchmarkToolCallMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		cfg := bridgeConfig()
		cfg.CoreTools = nil
		cfg.StateDir = b.TempDir()
		cfg.Telemetry.Prometheus = on
		g, err := New(cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
			b.Fatal(err)
		}
		b.Run("handler/"+name, func(b *testing.B) {
			ctx := context.Background()
			req := mcp.CallToolRequest{}
			req.Params.Name = toolid.MetaCall
			req.Params.RawArguments = json.RawMessage(`{"tool_name":"up::echo","tool_args":{"text":"hello"}}`)
			b.ReportAllocs()
			cpu := startCPU()
			n := 0
			for b.Loop() {
				if err := resultErr(g.handleCall(ctx, req)); err != nil {
					b.Fatal(err)
				}
				n++
			}
			cpu.report(b, n)
		})
		b.Run("record/"+name, func(b *testing.B) {
			c := call{tool: &Tool{ID: "up::echo", Server: "up", Name: "echo"}, via: "tool_call"}
			res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok")}}
			start := time.Now()
			b.ReportAllocs()
			cpu := startCPU()
			n := 0
			for b.Loop() {
				g.countCall(c, start, res, nil)
				n++
			}
			cpu.report(b, n)
		})
		_ = g.Close()
	}
}
