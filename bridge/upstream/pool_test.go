package upstream

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

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

// TestStatusesListServersStillConnecting: a server whose first connect is
// under way is listed (for /readyz) as connecting, and Down says so,
// before it has any outcome.
func TestStatusesListServersStillConnecting(t *testing.T) {
	cfg := config.Default()
	p := NewPool(&cfg, PoolOptions{}, NewRelay(nil, nil))
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// A process that never answers initialize.
		done <- p.Connect(ctx, []Spec{{Name: "mute", Config: config.Server{Command: "sleep", Args: []string{"60"}}}}, nil)
	}()
	var st ServerStatus
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := p.Statuses(); len(s) == 1 {
			st = s[0]
			break
		}
	}
	if st.Name != "mute" || !st.Connecting || st.Connected {
		t.Fatalf("status while connecting = %+v, want mute connecting", st)
	}
	if why, _ := p.Down("mute"); why != "still connecting" {
		t.Errorf("Down while connecting = %q, want still connecting", why)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Connect of a server that never answered returned no error")
	}
	if s := p.Statuses(); len(s) != 1 || s[0].Connecting {
		t.Errorf("status after the connect ended = %+v, want an outcome", s)
	}
}
