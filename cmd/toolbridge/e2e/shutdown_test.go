package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// shutdownBound is how long toolbridge may take to exit after SIGTERM with
// a call that never ends: the grace period, one second to write the
// answers, and the stopping of the servers. It is a bound for a hang, not
// a measurement: the test logs the time taken.
const shutdownBound = 2*time.Second + exitWait

// waitCalled waits until the stuck server has noted a call.
func waitCalled(t *testing.T, called string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(called); len(b) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the stuck server never got the call")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShutdownAnswersTheCallsItCuts sends SIGTERM while a call is stuck in
// its server, over stdio and over HTTP: after serve.shutdown_grace the
// call is answered with an isError result saying so, before the
// connection closes, and the process exits.
func TestShutdownAnswersTheCallsItCuts(t *testing.T) {
	const want = "gateway shutting down: call cancelled after 2s"
	t.Run("stdio", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cfg, called := stuckConfig(t, "serve: {shutdown_grace: 2s}\ntimeouts: {call: 5m}\n")
		p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
		p.initialize(ctx)
		p.send(`{"jsonrpc":"2.0","id":"stuck-1","method":"tools/call","params":{"name":"stuck_forever","arguments":{}}}`)
		waitCalled(t, called)
		start := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		isErr, text := p.toolResult("stuck_forever", p.response(ctx, `"stuck-1"`))
		if !isErr || !strings.Contains(text, want) {
			t.Errorf("the stuck call: isError=%v %q, want %q", isErr, text, want)
		}
		if !p.waitExit(shutdownBound) {
			t.Fatalf("toolbridge did not exit within %s of SIGTERM\nstderr:\n%s", shutdownBound, p.stderrText())
		}
		t.Logf("exited %s after SIGTERM (grace 2s)", time.Since(start).Round(10*time.Millisecond))
	})
	t.Run("http", func(t *testing.T) {
		cfg, called := stuckConfig(t, "serve: {shutdown_grace: 2s}\ntimeouts: {call: 5m}\n")
		h := startHTTPProc(t, "--config", cfg, "--mode", "off")
		tr, err := transport.NewStreamableHTTP(h.base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		type outcome struct {
			res *mcp.CallToolResult
			err error
		}
		got := make(chan outcome, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "stuck_forever"
			res, err := c.CallTool(ctx, req)
			got <- outcome{res, err}
		}()
		waitCalled(t, called)
		start := time.Now()
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		o := <-got
		if o.err != nil || !o.res.IsError || !strings.Contains(textOf(o.res), want) {
			t.Errorf("the stuck call: %+v, error %v; want an isError result containing %q", o.res, o.err, want)
		}
		select {
		case <-h.exited:
			t.Logf("exited %s after SIGTERM (grace 2s)", time.Since(start).Round(10*time.Millisecond))
		case <-time.After(shutdownBound):
			t.Fatalf("toolbridge did not exit within %s of SIGTERM\nstderr:\n%s", shutdownBound, h.stderr.String())
		}
	})
}
