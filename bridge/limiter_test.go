package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// recordingLimiter is a CallLimiter that another implementation (shared
// state) could be: it records the keys asked for and the releases, and
// fails when told to.
type recordingLimiter struct {
	mu       sync.Mutex
	keys     []string
	released int
	fail     error
}

func (r *recordingLimiter) Acquire(_ context.Context, caller string) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, caller)
	if r.fail != nil {
		return nil, r.fail
	}
	return func() { r.mu.Lock(); r.released++; r.mu.Unlock() }, nil
}

// TestCallLimiterOption: the gateway counts calls with the limiter in
// Options.CallLimiter, per subject, releases each slot once, and refuses
// a call when the limiter cannot count (fail closed) or says the caller
// is at its limit, without the limiter's error reaching the caller.
func TestCallLimiterOption(t *testing.T) {
	up := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("quick"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("quick ran"), nil
	})
	lim := &recordingLimiter{}
	cfg := testConfig()
	cfg.Serve.MaxInFlight = 3
	g, err := New(cfg, Options{CallLimiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: up}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	h := g.srv.HandleMessage
	_ = h(context.Background(), []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	call := func(sub string) string {
		out, _ := json.Marshal(h(accessContext(sub), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"quick"}}`)))
		return string(out)
	}

	if out := call("alice"); !strings.Contains(out, "quick ran") {
		t.Fatalf("call with a willing limiter: %s", out)
	}
	lim.mu.Lock()
	keys, released := fmt.Sprint(lim.keys), lim.released
	lim.mu.Unlock()
	if keys != "[subject alice]" || released != 1 {
		t.Errorf("limiter saw keys %s and %d releases, want [subject alice] and 1", keys, released)
	}

	lim.mu.Lock()
	lim.fail = fmt.Errorf("counting in shared state: %w", access.ErrLimitReached)
	lim.mu.Unlock()
	if out := call("alice"); strings.Contains(out, "quick ran") || !strings.Contains(out, "already has 3 tool calls running") {
		t.Errorf("call at the limit: %s, want the max_in_flight refusal", out)
	}

	lim.mu.Lock()
	lim.fail = errors.New("dial tcp 10.0.0.7:6379: connection refused (redis-secret-xyz)")
	lim.mu.Unlock()
	out := call("alice")
	if strings.Contains(out, "quick ran") || !strings.Contains(out, "could not count") {
		t.Errorf("call with a failing limiter: %s, want a refusal (fail closed)", out)
	}
	if strings.Contains(out, "redis-secret-xyz") || strings.Contains(out, "6379") {
		t.Errorf("the limiter's error reached the caller: %s", out)
	}
}
