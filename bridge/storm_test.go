package bridge

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// listDelay is how long the storming server takes to answer a list: it
// makes the bound on refreshes a matter of counting, not of timing.
const listDelay = 20 * time.Millisecond

// TestNotificationStormIsCoalesced has an upstream send 20,000
// list_changed notifications of each kind: the gateway refetches each list
// at most once per list answer time plus one, and its clients get no more
// list_changed than that.
func TestNotificationStormIsCoalesced(t *testing.T) {
	var lists atomic.Int64
	slowList := func(context.Context, any, any) { lists.Add(1); time.Sleep(listDelay) }
	hooks := &server.Hooks{}
	hooks.AddBeforeListTools(func(ctx context.Context, id any, r *mcp.ListToolsRequest) { slowList(ctx, id, r) })
	hooks.AddBeforeListPrompts(func(ctx context.Context, id any, r *mcp.ListPromptsRequest) { slowList(ctx, id, r) })
	hooks.AddBeforeListResources(func(ctx context.Context, id any, r *mcp.ListResourcesRequest) { slowList(ctx, id, r) })
	up := server.NewMCPServer("storm", "1.0.0", server.WithToolCapabilities(true), server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(false, true), server.WithHooks(hooks))
	up.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	up.AddPrompt(mcp.NewPrompt("p"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})

	var logs bytes.Buffer
	var logMu sync.Mutex
	cfg := testConfig()
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&lockedBuffer{mu: &logMu, b: &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "storm", InProcess: up}}); err != nil {
		t.Fatal(err)
	}
	c := g.InProcessClient(ClientHandlers{})
	c = startClient(t, c)
	var downstream atomic.Int64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if strings.HasSuffix(n.Method, "/list_changed") {
			downstream.Add(1)
		}
	})

	listsBefore := lists.Load()
	start := time.Now()
	const storm = 20000
	for range storm {
		for _, m := range []mcp.MCPMethod{mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationResourcesListChanged} {
			up.SendNotificationToAllClients(string(m), nil)
		}
	}
	sent := time.Since(start)
	// Let the last refreshes run.
	eventually(t, "the refreshes end", func() bool {
		n := lists.Load()
		time.Sleep(5 * listDelay)
		return lists.Load() == n
	})
	refreshes := lists.Load() - listsBefore
	// One refresh per list at a time, each taking listDelay, plus the one
	// pending at the end; resources also list their templates.
	bound := 4 * (int64(time.Since(start)/listDelay) + 2)
	t.Logf("%d notifications of each kind sent in %s: %d list requests upstream (bound %d), %d list_changed downstream",
		storm, sent.Round(time.Millisecond), refreshes, bound, downstream.Load())
	if refreshes < 3 {
		t.Errorf("only %d list requests: the notifications were not acted on", refreshes)
	}
	if refreshes > bound {
		t.Errorf("%d list requests for %d notifications over %s: not coalesced (at most %d)", refreshes, 3*storm, time.Since(start), bound)
	}
	if downstream.Load() > refreshes {
		t.Errorf("%d list_changed to the client for %d refreshes", downstream.Load(), refreshes)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func TestLogThrottle(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	now := time.Unix(0, 0)
	th := newLogThrottle(10 * time.Second)
	th.now = func() time.Time { return now }
	for range 20000 {
		th.warn(logger, "a", "refresh failed", "server", "a")
		th.warn(logger, "b", "refresh failed", "server", "b")
	}
	now = now.Add(11 * time.Second)
	th.warn(logger, "a", "refresh failed", "server", "a")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for 40,001 warnings over two keys and two intervals, want 3:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[2], "repeated=19999") {
		t.Errorf("the line after the interval does not count what it stood for: %s", lines[2])
	}
}

func TestCoalescer(t *testing.T) {
	var c coalescer
	var runs, running, most atomic.Int64
	release := make(chan struct{})
	fn := func() {
		n := running.Add(1)
		if n > most.Load() {
			most.Store(n)
		}
		<-release
		running.Add(-1)
		runs.Add(1)
	}
	for range 1000 {
		c.do("k", fn)
	}
	close(release)
	eventually(t, "the runs end", func() bool { return runs.Load() == 2 })
	time.Sleep(10 * time.Millisecond)
	if runs.Load() != 2 || most.Load() != 1 {
		t.Errorf("%d runs, %d at once; want 2 (the first and one pending), 1 at once", runs.Load(), most.Load())
	}
}

// TestDownstreamListChangedIsDebounced: an upstream whose tool list really
// changes in a loop (each notification brings a new tool) makes the
// clients a few list_changed a second, not one per change, and the last
// change still reaches them.
func TestDownstreamListChangedIsDebounced(t *testing.T) {
	up := server.NewMCPServer("churn", "1.0.0", server.WithToolCapabilities(true))
	noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	up.AddTool(mcp.NewTool("tool_0"), noop)
	cfg := testConfig()
	cfg.Mode = config.ModeOff // every tool listed: each change is one clients see
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "churn", InProcess: up}}); err != nil {
		t.Fatal(err)
	}
	c := g.InProcessClient(ClientHandlers{})
	c = startClient(t, c)
	var told atomic.Int64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			told.Add(1)
		}
	})

	start := time.Now()
	const changes = 300
	for i := 1; i <= changes; i++ {
		up.AddTool(mcp.NewTool(fmt.Sprintf("tool_%d", i)), noop) // sends list_changed
		time.Sleep(time.Millisecond)
	}
	last := fmt.Sprintf("tool_%d", changes)
	eventually(t, "the last change reaches the catalog", func() bool {
		_, ok := g.Catalog().ByExposed(last)
		return ok
	})
	// Give a list_changed still held back its time to be sent.
	time.Sleep(2 * listChangedInterval)
	elapsed := time.Since(start)
	// At most one republishing per interval, plus the first and the last.
	bound := int64(elapsed/listChangedInterval) + 2
	t.Logf("%d tool changes over %s: %d list_changed downstream (bound %d)", changes, elapsed.Round(time.Millisecond), told.Load(), bound)
	if told.Load() == 0 {
		t.Fatal("the client was never told the tools changed")
	}
	if told.Load() > bound {
		t.Fatalf("%d list_changed for %d changes over %s: not debounced (at most %d)", told.Load(), changes, elapsed, bound)
	}
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Tools, func(tl mcp.Tool) bool { return tl.Name == last }) {
		t.Fatalf("the client's list lacks the last change %s", last)
	}
}
