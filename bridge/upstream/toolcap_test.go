package upstream

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// manyTools is an in-process server with n tools named tool_00, tool_01,
// ..., and broken more whose names have a control character; pageSize,
// when above 0, paginates tools/list.
func manyTools(n, broken, pageSize int) *server.MCPServer {
	var opts []server.ServerOption
	opts = append(opts, server.WithToolCapabilities(true))
	if pageSize > 0 {
		opts = append(opts, server.WithPaginationLimit(pageSize))
	}
	s := server.NewMCPServer("many", "1.0.0", opts...)
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	for i := range broken {
		s.AddTool(mcp.NewTool(fmt.Sprintf("a_broken\x01%02d", i)), handler)
	}
	for i := range n {
		s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%02d", i)), handler)
	}
	return s
}

// TestToolBound: a server keeps at most max_tools_per_server tools (or its
// own max_tools), the first it sent; /readyz's status says how many were
// dropped, and Skipped says so in one line (#24, item 9).
func TestToolBound(t *testing.T) {
	tests := []struct {
		name        string
		server      *server.MCPServer
		global, own int
		kept        int
		dropped     int // at least
		exact       bool
		skipped     int // lines in Skipped
	}{
		{"under the bound", manyTools(8, 0, 0), 10, 0, 8, 0, true, 0},
		{"exactly the bound", manyTools(10, 0, 0), 10, 0, 10, 0, true, 0},
		{"one page over", manyTools(25, 0, 0), 10, 0, 10, 15, true, 1},
		{"the server's own bound wins", manyTools(25, 0, 0), 10, 3, 3, 22, true, 1},
		// Pages of 4: the third fills the bound with 2 to spare, and the
		// pages after it are not fetched.
		{"paginated", manyTools(25, 0, 4), 10, 0, 10, 3, false, 1},
		// Broken tools are named one by one up to 20, then counted.
		{"broken ones do not count", manyTools(5, 30, 0), 10, 0, 5, 0, true, 21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.MaxToolsPerServer = tt.global
			p := NewPool(&cfg, PoolOptions{}, NewRelay(nil, nil))
			t.Cleanup(func() { _ = p.Close() })
			spec := Spec{Name: "many", Config: config.Server{MaxTools: tt.own}, InProcess: tt.server}
			if err := p.Connect(context.Background(), []Spec{spec}, nil); err != nil {
				t.Fatal(err)
			}
			u, _ := p.Get("many")
			tools, _, _, _ := u.Snapshot()
			if len(tools) != tt.kept {
				t.Fatalf("kept %d tools, want %d", len(tools), tt.kept)
			}
			for i, tool := range tools {
				if want := fmt.Sprintf("tool_%02d", i); tool.Name != want {
					t.Errorf("tool %d is %s, want %s: the first ones sent are kept", i, tool.Name, want)
				}
			}
			st := p.Statuses()[0]
			switch {
			case tt.dropped == 0 && (st.ToolsDropped != 0 || st.ToolLimit != 0):
				t.Errorf("status %+v says tools were dropped", st)
			case tt.exact && st.ToolsDropped != tt.dropped, !tt.exact && st.ToolsDropped < tt.dropped:
				t.Errorf("status says %d tools dropped, want %d", st.ToolsDropped, tt.dropped)
			case tt.dropped > 0 && st.ToolLimit != tt.kept:
				t.Errorf("status says the limit is %d, want %d", st.ToolLimit, tt.kept)
			}
			skipped := u.Skipped()
			if len(skipped) != tt.skipped {
				t.Errorf("Skipped has %d lines, want %d: %q", len(skipped), tt.skipped, skipped)
			}
			if tt.dropped > 0 && !strings.Contains(strings.Join(skipped, "\n"), fmt.Sprintf("kept the first %d", tt.kept)) {
				t.Errorf("Skipped does not say the bound bit: %q", skipped)
			}
		})
	}
}

// TestSlowPrepareHoldsNoOtherServerBack: while the server that came up
// first is still being prepared (ready has not returned), one that comes
// up after it is prepared and served all the same. Handing outcomes over
// one at a time made a server with 100000 tools hold every later one out
// of the catalog that startup_wait publishes (#24, item 9).
func TestSlowPrepareHoldsNoOtherServerBack(t *testing.T) {
	cfg := config.Default()
	p := NewPool(&cfg, PoolOptions{}, NewRelay(nil, nil))
	t.Cleanup(func() { _ = p.Close() })
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // a failed test must not leave ready blocked
	first := make(chan string, 1)
	secondServed := make(chan string, 1)
	var mu sync.Mutex
	var held string
	connected := make(chan error, 1)
	go func() {
		specs := []Spec{{Name: "alpha", InProcess: toolServer("alpha")}, {Name: "beta", InProcess: toolServer("beta")}}
		connected <- p.Connect(context.Background(), specs, func(u *Conn) {
			mu.Lock()
			if held == "" {
				held = u.Name()
				mu.Unlock()
				first <- u.Name()
				<-release // the first is slow to prepare
				return
			}
			mu.Unlock()
			secondServed <- u.Name()
		})
	}()
	slow := <-first
	select {
	case other := <-secondServed:
		if other == slow {
			t.Fatalf("%s handed over twice", other)
		}
	case <-time.After(time.Minute): // a hang, not a measurement
		t.Fatalf("the second server was not prepared while %s was", slow)
	}
	releaseOnce()
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, ok := p.Get(name); !ok {
			t.Errorf("%s is not served", name)
		}
	}
}
