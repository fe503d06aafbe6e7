package upstream

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// toolServer is an in-process server with one tool, "echo".
func toolServer(name string) *server.MCPServer {
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(name + ":" + req.GetString("text", "")), nil
	})
	return s
}

// TestConnectHandsEachServerOverAsItComesUp checks the pool's side of
// preparing servers early: ready sees every server that connects, once,
// before the pool serves it, OnJoin after, and neither one that failed.
func TestConnectHandsEachServerOverAsItComesUp(t *testing.T) {
	cfg := config.Default()
	var mu sync.Mutex
	var ready, joined []string
	var p *Pool
	p = NewPool(&cfg, PoolOptions{OnJoin: func(u *Conn) {
		mu.Lock()
		defer mu.Unlock()
		if _, served := p.Get(u.Name()); !served {
			t.Errorf("%s joined before the pool serves it", u.Name())
		}
		if !slices.Contains(ready, u.Name()) {
			t.Errorf("%s joined before it was handed to ready", u.Name())
		}
		joined = append(joined, u.Name())
	}}, NewRelay(nil, nil))
	t.Cleanup(func() { _ = p.Close() })
	specs := []Spec{
		{Name: "alpha", InProcess: toolServer("alpha")},
		{Name: "beta", InProcess: toolServer("beta")},
		{Name: "broken", Config: config.Server{Command: "/nonexistent/toolbridge-test-server"}},
	}
	err := p.Connect(context.Background(), specs, func(u *Conn) {
		mu.Lock()
		defer mu.Unlock()
		if _, served := p.Get(u.Name()); served {
			t.Errorf("%s handed over after the pool serves it", u.Name())
		}
		if tools, _, _, _ := u.Snapshot(); len(tools) == 0 {
			t.Errorf("%s handed over before its tools are listed", u.Name())
		}
		ready = append(ready, u.Name())
	})
	if err == nil {
		t.Error("Connect did not report the broken server")
	}
	slices.Sort(ready)
	slices.Sort(joined)
	if want := []string{"alpha", "beta"}; !slices.Equal(ready, want) || !slices.Equal(joined, want) {
		t.Errorf("handed over %v, joined %v, want %v for both", ready, joined, want)
	}
}
