package bridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

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

// hourLongEchoGateway is a gateway in mode off over the echo server
// "up", whose calls may run an hour, so that only a cancellation ends
// them; grace is its shutdown grace, 0 for the default.
func hourLongEchoGateway(t *testing.T, grace time.Duration) *Gateway {
	t.Helper()
	cfg := config.Default()
	cfg.Mode = config.ModeOff
	cfg.StateDir = t.TempDir()
	cfg.Timeouts.Call = time.Hour
	if grace > 0 {
		cfg.Serve.ShutdownGrace = grace
	}
	g, err := New(&cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestStdioCancelledFastCall: notifications/cancelled for a tools/call
// the fast path serves cancels it, as mcp-go cancels its own: the call
// (which would wait an hour) is answered at once, and the session goes on.
func TestStdioCancelledFastCall(t *testing.T) {
	g := hourLongEchoGateway(t, 0)
	inR, inW := io.Pipe()
	send, next, served := stdioLines(t, context.Background(), g, inR, inW)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	next("initialize answer")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"}}`)
	for deadline := time.Now().Add(time.Minute); g.calls.Running() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never started")
		}
	}
	if n := g.fastServed.Load(); n != 1 {
		t.Fatalf("fast path answered %d calls, want 1", n)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}`)
	if got := next("answer to the cancelled call"); !strings.Contains(got, `"id":5`) {
		t.Fatalf("got %s, want the answer to id 5", got)
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if got := next("ping answer"); !strings.Contains(got, `"id":6`) {
		t.Fatalf("got %s, want the ping's answer", got)
	}
	_ = inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// TestStdioFastCallsAtOnce: a call read while another runs starts at
// once too, though the reader answers the first call itself (see
// stdioFront.follow), and so does a third; each one's cancellation
// reaches it.
func TestStdioFastCallsAtOnce(t *testing.T) {
	g := hourLongEchoGateway(t, 100*time.Millisecond)
	// A kernel pipe: a line is sent whether or not the gateway reads it.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// On failure, the slow calls are cut before the gateway closes.
	t.Cleanup(func() { cancel(); _, _ = inW.Close(), inR.Close() })
	send, next, served := stdioLines(t, ctx, g, inR, inW)
	running := func(n int) {
		for deadline := time.Now().Add(time.Minute); g.calls.Running() != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d calls running, want %d", g.calls.Running(), n)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	next("initialize answer")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, id := range []int{5, 6, 7} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, id))
		running(i + 1)
	}
	if n := g.fastServed.Load(); n != 3 {
		t.Fatalf("fast path answered %d calls, want 3", n)
	}
	for _, id := range []int{6, 5, 7} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"user"}}`, id))
		if got := next(fmt.Sprintf("answer to cancelled call %d", id)); !strings.Contains(got, fmt.Sprintf(`"id":%d`, id)) {
			t.Fatalf("got %s, want the answer to id %d", got, id)
		}
	}
	_ = inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// stdioLines serves g with ServeStdio(ctx) reading in, and returns send,
// which writes a line to w (in's other end), next, which waits for the
// next line of output a minute at most (the calls of these tests would
// wait an hour), and ServeStdio's result, once the output is closed.
func stdioLines(t *testing.T, ctx context.Context, g *Gateway, in io.Reader, w io.Writer) (send func(msg string), next func(what string) string, served <-chan error) {
	t.Helper()
	outR, outW := io.Pipe()
	result := make(chan error, 1)
	go func() { result <- g.ServeStdio(ctx, in, outW, nil); _ = outW.Close() }()
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(outR)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	send = func(msg string) {
		if _, err := io.WriteString(w, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next = func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended before %s", what)
			}
			return l
		case <-time.After(time.Minute):
			t.Fatalf("no %s within a minute", what)
		}
		return ""
	}
	return send, next, result
}
