package upstream

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// connCounter counts an HTTP server's connections by state.
type connCounter struct {
	mu         sync.Mutex
	dialed     int
	open       map[net.Conn]bool
	firstRound int // connections dialed by the end of the first round
}

func (c *connCounter) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateNew:
		c.dialed++
		c.open[conn] = true
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
	}
}

func (c *connCounter) counts() (dialed, open int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialed, len(c.open)
}

// barrierServer is an MCP server whose tool "wait" answers only once
// parallel calls to it are waiting, so each round of calls is in flight
// at once however slow the machine.
func barrierServer(parallel int) *server.MCPServer {
	var mu sync.Mutex
	count, gate := 0, make(chan struct{})
	s := server.NewMCPServer("b", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		count++
		g := gate
		if count == parallel {
			close(gate)
			count, gate = 0, make(chan struct{})
		}
		mu.Unlock()
		select {
		case <-g:
			return mcp.NewToolResultText("ok"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return s
}

// TestHTTPUpstreamConnections checks how the gateway holds its connections
// to an HTTP upstream: calls in flight at once reuse the connections the
// previous round opened (net/http's default keeps only 2 idle per host, so
// every round dialed the rest again), and closing the upstream closes
// them (they stayed open in the process-wide default pool).
func TestHTTPUpstreamConnections(t *testing.T) {
	const parallel, rounds = 16, 5
	cc := &connCounter{open: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(server.NewStreamableHTTPServer(barrierServer(parallel)))
	srv.Config.ConnState = cc.track
	srv.Start()
	t.Cleanup(srv.Close)

	cfg := config.Default()
	p := NewPool(&cfg, PoolOptions{}, NewRelay(nil, nil))
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = p.Close()
		}
	})
	spec := Spec{Name: "b", Config: config.Server{URL: srv.URL + "/mcp"}}
	if err := p.Connect(context.Background(), []Spec{spec}, nil); err != nil {
		t.Fatalf("connecting: %v", err)
	}
	u, ok := p.Get("b")
	if !ok {
		t.Fatal("the server is not served after connecting")
	}
	var afterFirst int
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, parallel)
		for range parallel {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := u.Request(ctx, "tools/call", map[string]any{"name": "wait", "arguments": map[string]any{}})
				if err == nil && !strings.Contains(string(res), `"ok"`) {
					err = fmt.Errorf("unexpected answer %s", res)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if round == 0 {
			afterFirst, _ = cc.counts()
		}
	}
	dialed, _ := cc.counts()
	// A connection may come back to the pool a moment after its answer
	// was read, so a round can dial one that the last round left; and the
	// GET stream may come and go. Up to twice the first round's is slack
	// for that; churn dials nearly all of them again every round (73 over
	// 5 rounds, 17 in the first, with net/http's default of 2 idle).
	if dialed > 2*afterFirst {
		t.Errorf("%d connections dialed over %d rounds of %d calls at once, %d by the end of the first: later rounds did not reuse them",
			dialed, rounds, parallel, afterFirst)
	}

	if err := p.Close(); err != nil {
		t.Fatalf("closing the pool: %v", err)
	}
	closed = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, open := cc.counts()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to the upstream still open 30s after closing it", open)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
