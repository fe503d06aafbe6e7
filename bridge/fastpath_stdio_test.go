package bridge

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// TestStdioTakesTheFastPath: over stdio, an mcp-go client's tools/call
// (2026-07-28, its protocol in _meta) is answered by the fast path, in
// mode off and through tool_call, and a call the fast path does not take
// (tool_search with a task) still gets mcp-go's answer.
func TestStdioTakesTheFastPath(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeOff, config.ModeOn} {
		t.Run(string(mode), func(t *testing.T) {
			g := newTestGateway(t, mode, []upstream.Spec{{Name: "up", InProcess: echoServer("up")}})
			c := stdioPipeClient(t, g)
			res, err := c.CallTool(context.Background(), echoCall("echo", mode == config.ModeOn))
			if err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "up:hello") {
				t.Fatalf("call: %v %+v", err, res)
			}
			if n := g.fastServed.Load(); n != 1 {
				t.Errorf("fast path answered %d calls, want 1", n)
			}
			if _, err := c.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
				t.Errorf("tools/list after a fast call: %v", err)
			}
		})
	}
}

// BenchmarkToolCallServedOverStdio is a tools/call through ServeStdio,
// over OS pipes, with an in-process upstream: the downstream stdio path
// (the fast path's line loop and answer), the gateway's pipeline and the
// client's own work, without a second process. It reports allocations
// and this process's CPU time per call (client, gateway and upstream).
//
//	go test ./bridge -run '^$' -bench ToolCallServedOverStdio -count 6 -benchmem
func BenchmarkToolCallServedOverStdio(b *testing.B) {
	for _, mode := range []config.Mode{config.ModeOff, config.ModeOn} {
		b.Run("mode="+string(mode), func(b *testing.B) {
			g := newTestGateway(b, mode, []upstream.Spec{{Name: "up", InProcess: echoServer("up")}})
			runCalls(b, stdioPipeClient(b, g), echoCall("echo", mode == config.ModeOn))
		})
	}
}
