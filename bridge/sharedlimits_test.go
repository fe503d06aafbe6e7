package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// TestMaxInFlightAcrossReplicas: with redis.url, serve.max_in_flight
// counts a caller's calls on every replica: alice's call running on one
// replica takes her only slot on the other too, bob's are his own, and
// the slot is free again once the call ends.
func TestMaxInFlightAcrossReplicas(t *testing.T) { statetest.ForEach(t, testMaxInFlightAcrossReplicas) }

func testMaxInFlightAcrossReplicas(t *testing.T, srv *statetest.Server) {
	unblock := make(chan struct{})
	started := make(chan struct{}, 4)
	newUp := func() *server.MCPServer {
		up := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
		up.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("wait ran"), nil
		})
		return up
	}
	replica := func() func(sub string) string {
		cfg := sharedConfig(t, srv)
		cfg.Trust.Mode = "off"
		cfg.Serve.MaxInFlight = 1
		cfg.Timeouts.Call = 5 * time.Minute // the calls end when the test says
		g, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: newUp()}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		h := g.srv.HandleMessage
		_ = h(context.Background(), []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		return func(sub string) string {
			out, _ := json.Marshal(h(accessContext(sub), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)))
			return string(out)
		}
	}
	call1, call2 := replica(), replica()
	first := make(chan string, 1)
	go func() { first <- call1("alice") }()
	<-started
	refused := make(chan string, 1)
	go func() { refused <- call2("alice") }()
	select {
	case out := <-refused:
		if !strings.Contains(out, "already has 1 tool calls running") {
			close(unblock)
			t.Fatalf("alice's second call, on the other replica: %s, want the max_in_flight refusal", out)
		}
	case <-time.After(30 * time.Second):
		close(unblock)
		t.Fatal("alice's second call, on the other replica, ran instead of being refused: each replica counts alone")
	}
	second := make(chan string, 1)
	go func() { second <- call2("bob") }()
	<-started
	close(unblock)
	for _, ch := range []chan string{first, second} {
		if out := <-ch; !strings.Contains(out, "wait ran") {
			t.Errorf("a call within its caller's limit: %s", out)
		}
	}
	if out := call2("alice"); !strings.Contains(out, "wait ran") {
		t.Errorf("alice's call once her first ended: %s", out)
	}
}
