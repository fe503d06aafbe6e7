package bridge

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// gateServer is an upstream whose "wait" tool answers once release is
// closed, or fails when its context ends: a call that is still running
// when the gateway reloads or shuts down, and that shows whether the
// gateway cancelled it. entered receives one value per call that has
// started.
func gateServer(release <-chan struct{}, entered chan<- struct{}) *server.MCPServer {
	s := server.NewMCPServer("gate", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("wait", mcp.WithDescription("Wait for the gate to open")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return mcp.NewToolResultText("opened"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	return s
}

// eventually polls cond until it holds; the deadline only stops a hang.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 20s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gatewayWith connects a gateway for cfg to specs, with a client in process.
func gatewayWith(t *testing.T, cfg *config.Config, specs []upstream.Spec) (*Gateway, *client.Client) {
	t.Helper()
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	c := g.InProcessClient(ClientHandlers{})
	return g, startClient(t, c)
}

func TestReloadAddsRemovesAndKeepsServers(t *testing.T) {
	alpha, beta, gamma := echoServer("alpha"), echoServer("beta"), echoServer("gamma")
	cfg := testConfig()
	g, c := gatewayWith(t, cfg, []upstream.Spec{{Name: "alpha", InProcess: alpha}, {Name: "beta", InProcess: beta}})
	listChanged := make(chan struct{}, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			listChanged <- struct{}{}
		}
	})
	keptBefore, _ := g.pool.Get("alpha")

	next := *cfg
	sum, err := g.Reload(context.Background(), &next, []upstream.Spec{{Name: "alpha", InProcess: alpha}, {Name: "gamma", InProcess: gamma}})
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !slices.Equal(sum.Added, []string{"gamma"}) || !slices.Equal(sum.Removed, []string{"beta"}) ||
		!slices.Equal(sum.Kept, []string{"alpha"}) || len(sum.Changed) != 0 || sum.Failed != nil {
		t.Errorf("summary %+v, want added gamma, removed beta, kept alpha", sum)
	}
	if len(sum.NeedRestart) != 0 {
		t.Errorf("NeedRestart %v for a config whose serve and telemetry are the same", sum.NeedRestart)
	}
	if keptAfter, _ := g.pool.Get("alpha"); keptAfter != keptBefore {
		t.Error("alpha's connection was replaced although its spec did not change")
	}
	select {
	case <-listChanged:
	case <-time.After(10 * time.Second):
		t.Error("no notifications/tools/list_changed after the reload changed the tools")
	}
	names := strings.Join(toolNames(t, c), " ")
	if !strings.Contains(names, "gamma__echo") || strings.Contains(names, "beta__") {
		t.Errorf("tools after reload: %s", names)
	}
	if _, text := callText(t, c, "gamma__echo", map[string]any{"text": "hi"}); text != "gamma:hi" {
		t.Errorf("gamma__echo = %q", text)
	}
	if _, text := callText(t, c, "alpha__echo", map[string]any{"text": "hi"}); text != "alpha:hi" {
		t.Errorf("alpha__echo = %q", text)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "beta__echo"
	if res, err := c.CallTool(context.Background(), req); err == nil && !res.IsError {
		t.Errorf("beta__echo after beta was removed: %+v, want an error", res)
	}
	statuses := g.Pool().Statuses()
	if len(statuses) != 2 || statuses[0].Name != "alpha" || statuses[1].Name != "gamma" {
		t.Errorf("statuses after reload: %+v", statuses)
	}
}

// TestReloadReachesFastPathTools: the fast path keeps each called tool
// with its middlewares composed (fastTool); a reload that removes a tool
// called before must make the next call of it an unknown tool, answered
// by the fast path as mcp-go answers it, not a call of the tool it had.
func TestReloadReachesFastPathTools(t *testing.T) {
	alpha, beta := echoServer("alpha"), echoServer("beta")
	cfg := testConfig()
	g, c := gatewayWith(t, cfg, []upstream.Spec{{Name: "alpha", InProcess: alpha}, {Name: "beta", InProcess: beta}})
	for _, name := range []string{"alpha__echo", "beta__echo"} {
		if _, text := callText(t, c, name, map[string]any{"text": "hi"}); !strings.HasSuffix(text, ":hi") {
			t.Fatalf("%s before the reload = %q", name, text)
		}
	}
	if g.fastServed.Load() != 2 {
		t.Fatalf("fast calls before the reload: %d, want 2", g.fastServed.Load())
	}
	next := *cfg
	if _, err := g.Reload(context.Background(), &next, []upstream.Spec{{Name: "alpha", InProcess: alpha}}); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "beta__echo"
	req.Params.Arguments = map[string]any{"text": "hi"}
	res, err := c.CallTool(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "tool 'beta__echo' not found") {
		t.Errorf("beta__echo after beta was removed: %+v, %v; want mcp-go's tool not found", res, err)
	}
	if _, text := callText(t, c, "alpha__echo", map[string]any{"text": "hi"}); text != "alpha:hi" {
		t.Errorf("alpha__echo after the reload = %q", text)
	}
	if g.fastServed.Load() != 4 {
		t.Errorf("fast calls: %d, want 4 (the reload's calls on the fast path too)", g.fastServed.Load())
	}
}

func TestReloadAppliesNewRulesAndReportsRestartOnlySections(t *testing.T) {
	alpha := echoServer("alpha")
	cfg := testConfig()
	g, c := gatewayWith(t, cfg, []upstream.Spec{{Name: "alpha", InProcess: alpha}})
	if names := toolNames(t, c); slices.Contains(names, toolid.MetaSearch) {
		t.Fatalf("bridge mode before the reload: %v", names)
	}
	next := *cfg
	next.Mode = config.ModeOn
	next.CoreTools = []string{"echo"}
	next.Serve.Listen = "127.0.0.1:9999"
	next.Serve.ShutdownGrace = time.Minute // read at shutdown: no restart needed
	sum, err := g.Reload(context.Background(), &next, []upstream.Spec{{Name: "alpha", InProcess: alpha}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.NeedRestart, []string{"serve"}) {
		t.Errorf("NeedRestart = %v, want [serve]", sum.NeedRestart)
	}
	names := toolNames(t, c)
	if !slices.Contains(names, toolid.MetaSearch) || !slices.Contains(names, "echo") || slices.Contains(names, "slow") {
		t.Errorf("after reloading with mode on and echo core: %v", names)
	}
}

func TestReloadRejectsBrokenConfigAndKeepsServing(t *testing.T) {
	alpha := echoServer("alpha")
	cfg := testConfig()
	g, c := gatewayWith(t, cfg, []upstream.Spec{{Name: "alpha", InProcess: alpha}})
	before := g.Catalog()

	next := *cfg
	next.Mode = config.ModeOn
	next.Hooks = []config.Hook{{Command: "toolbridge-test-no-such-hook-command"}}
	_, err := g.Reload(context.Background(), &next, []upstream.Spec{{Name: "beta", InProcess: echoServer("beta")}})
	if err == nil || !strings.Contains(err.Error(), "rejecting the new config") || !strings.Contains(err.Error(), "toolbridge-test-no-such-hook-command") {
		t.Fatalf("Reload with a hook that does not exist: %v, want a rejection naming it", err)
	}
	if g.Catalog() != before || g.settings().cfg != cfg {
		t.Error("a rejected reload changed the catalog or the config")
	}
	if _, ok := g.pool.Get("beta"); ok {
		t.Error("a rejected reload connected the new server")
	}
	if _, text := callText(t, c, "echo", map[string]any{"text": "still"}); text != "alpha:still" {
		t.Errorf("echo after a rejected reload = %q", text)
	}
}

func TestReloadLetsCallsOnReplacedServerFinish(t *testing.T) {
	g, release, entered := gatedGateway(t, time.Minute)
	c := g.InProcessClient(ClientHandlers{})
	startClient(t, c)
	old, _ := g.pool.Get("gate")
	got := callWait(t, c, entered)

	next := *g.settings().cfg
	sum, err := g.Reload(context.Background(), &next, []upstream.Spec{{Name: "alpha", InProcess: echoServer("alpha2")}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.Removed, []string{"gate"}) || !slices.Equal(sum.Changed, []string{"alpha"}) {
		t.Errorf("summary %+v", sum)
	}
	if old.Closed() {
		t.Fatal("the replaced upstream was closed with a call still running on it")
	}
	if _, text := callText(t, c, "echo", map[string]any{"text": "x"}); text != "alpha2:x" {
		t.Errorf("echo after alpha changed = %q, want the new server's answer", text)
	}
	close(release)
	if o := <-got; o.err != nil || o.text != "opened" {
		t.Errorf("the call in flight during the reload: %+v, want its answer", o)
	}
	eventually(t, "the replaced upstream is closed once its call ended", old.Closed)
}

func TestReloadRestartsOnlyChangedStdioServers(t *testing.T) {
	bin := demoServer(t)
	cfg := testConfig()
	cfg.Servers = map[string]config.Server{
		"math": {Command: bin, Args: []string{"math"}},
		"text": {Command: bin, Args: []string{"text"}},
	}
	g, c := gatewayWith(t, cfg, upstream.SpecsFromConfig(cfg))
	pid := func(name string) int {
		u, ok := g.pool.Get(name)
		if !ok || u.PID() == 0 {
			t.Fatalf("%s is not a connected stdio server", name)
		}
		return u.PID()
	}
	mathPID, textPID := pid("math"), pid("text")
	before := toolNames(t, c)

	next := *cfg
	next.Servers = map[string]config.Server{
		"math": {Command: bin, Args: []string{"math"}},
		"text": {Command: bin, Args: []string{"json"}}, // same name, another server
	}
	sum, err := g.Reload(context.Background(), &next, upstream.SpecsFromConfig(&next))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.Kept, []string{"math"}) || !slices.Equal(sum.Changed, []string{"text"}) {
		t.Errorf("summary %+v, want math kept and text changed", sum)
	}
	if pid("math") != mathPID {
		t.Error("math's process was restarted although its config did not change")
	}
	if pid("text") == textPID {
		t.Error("text's process was kept although its args changed")
	}
	eventually(t, "the replaced text server's process has exited", func() bool {
		return syscall.Kill(textPID, 0) != nil
	})
	if after := toolNames(t, c); slices.Equal(before, after) {
		t.Errorf("the tool list did not change when text became the json server: %v", after)
	}
}

func TestReloadReplacesHooksAndClosesTheOldAuditLog(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")
	cfg := testConfig()
	cfg.Audit.File = first
	alpha := echoServer("alpha")
	g, c := gatewayWith(t, cfg, []upstream.Spec{{Name: "alpha", InProcess: alpha}})
	callText(t, c, "echo", map[string]any{"text": "one"})

	next := *cfg
	next.Audit.File = second
	if _, err := g.Reload(context.Background(), &next, []upstream.Spec{{Name: "alpha", InProcess: alpha}}); err != nil {
		t.Fatal(err)
	}
	callText(t, c, "raw_schema", map[string]any{"n": 2})
	_ = g.Close() // waits for the old hooks to close
	for _, f := range []struct{ path, want, not string }{{first, `"tool":"echo"`, `"tool":"raw_schema"`}, {second, `"tool":"raw_schema"`, `"tool":"echo"`}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), f.want) || strings.Contains(string(b), f.not) {
			t.Errorf("%s:\n%s\nwant the call with %s only", filepath.Base(f.path), b, f.want)
		}
	}
}

// gatedGateway is a gateway, with the given shutdown grace, in front of
// a gate server (see gateServer) and an echo server.
func gatedGateway(t *testing.T, grace time.Duration) (g *Gateway, release, entered chan struct{}) {
	t.Helper()
	release, entered = make(chan struct{}), make(chan struct{}, 1)
	cfg := testConfig()
	cfg.Timeouts.Call = time.Minute
	cfg.Serve.ShutdownGrace = grace
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	specs := []upstream.Spec{{Name: "gate", InProcess: gateServer(release, entered)}, {Name: "alpha", InProcess: echoServer("alpha")}}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	return g, release, entered
}

// waitOutcome is how a call of the gate's wait tool ended.
type waitOutcome struct {
	text string
	err  error // the call's error, or an error naming the result's problem
}

// callWait calls the gate's wait tool on c in the background, once it has
// reached the upstream.
func callWait(t *testing.T, c *client.Client, entered <-chan struct{}) <-chan waitOutcome {
	t.Helper()
	got := make(chan waitOutcome, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "wait"
		res, err := c.CallTool(context.Background(), req)
		switch {
		case err != nil:
			got <- waitOutcome{err: err}
		case res.IsError || len(res.Content) == 0:
			got <- waitOutcome{err: fmt.Errorf("result %+v", res)}
		default:
			text, _ := res.Content[0].(mcp.TextContent)
			got <- waitOutcome{text: text.Text}
		}
	}()
	select {
	case <-entered:
	case o := <-got:
		t.Fatalf("the wait call ended before reaching the upstream: %+v", o)
	case <-time.After(20 * time.Second):
		t.Fatal("the wait call never reached the upstream")
	}
	return got
}

// answeredAfterRelease opens the gate and checks that the call in flight
// at shutdown gets its answer and that serve (named what) then returns
// without an error.
func answeredAfterRelease(t *testing.T, release chan struct{}, got <-chan waitOutcome, served <-chan error, what string) {
	t.Helper()
	close(release)
	if o := <-got; o.err != nil || o.text != "opened" {
		t.Errorf("the call in flight at shutdown: text %q, error %v; want its answer", o.text, o.err)
	}
	if err := <-served; err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestStdioShutdownLetsCallsInFlightFinish(t *testing.T) {
	g, release, entered := gatedGateway(t, time.Minute)
	ctx, stop := context.WithCancel(context.Background())
	c, served := serveStdioPipes(t, ctx, g)
	got := callWait(t, c, entered)
	stop() // SIGTERM
	eventually(t, "new calls are refused while draining", func() bool {
		res, text := callText(t, c, "echo", map[string]any{"text": "late"})
		return res.IsError && strings.Contains(text, "shutting down")
	})
	select {
	case err := <-served:
		t.Fatalf("ServeStdio returned (%v) with a call still running inside the grace period", err)
	default:
	}
	answeredAfterRelease(t, release, got, served, "ServeStdio")
}

func TestStdioShutdownCancelsCallsAfterTheGracePeriod(t *testing.T) {
	g, release, entered := gatedGateway(t, 50*time.Millisecond)
	defer close(release)
	ctx, stop := context.WithCancel(context.Background())
	c, served := serveStdioPipes(t, ctx, g)
	got := callWait(t, c, entered)
	stop()
	// The gate never opens: only the grace period can end ServeStdio.
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio did not return after its grace period with a call that never ends")
	}
	wantCut(t, got, "50ms")
}

// wantCut checks that a call still running when the grace period ended
// was answered, with an isError result saying so.
func wantCut(t *testing.T, got <-chan waitOutcome, grace string) {
	t.Helper()
	want := "gateway shutting down: call cancelled after " + grace
	select {
	case o := <-got:
		if o.err == nil || !strings.Contains(o.err.Error(), want) {
			t.Errorf("the call cut off by the end of the grace period: text %q, error %v; want an isError result containing %q", o.text, o.err, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call cut off by the end of the grace period got no answer")
	}
}

// serveGatedHTTP serves g over streamable HTTP on 127.0.0.1 and connects
// a client; stop shuts the server down, and served gets ServeHTTP's error.
func serveGatedHTTP(t *testing.T, g *Gateway) (c *client.Client, ln net.Listener, stop func(), served chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served = make(chan error, 1)
	go func() { served <- g.ServeHTTP(ctx, ln) }()
	tr, err := transport.NewStreamableHTTP("http://" + ln.Addr().String() + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	return startClient(t, client.NewClient(tr)), ln, stop, served
}

func TestHTTPShutdownAnswersCallsCutByTheGracePeriod(t *testing.T) {
	for range 3 {
		g, release, entered := gatedGateway(t, 50*time.Millisecond)
		c, _, stop, served := serveGatedHTTP(t, g)
		got := callWait(t, c, entered)
		stop()
		wantCut(t, got, "50ms")
		if err := <-served; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
		close(release)
	}
}

func TestHTTPShutdownLetsCallsInFlightFinish(t *testing.T) {
	g, release, entered := gatedGateway(t, time.Minute)
	c, ln, stop, served := serveGatedHTTP(t, g)
	got := callWait(t, c, entered)
	stop()
	eventually(t, "the listener is closed", func() bool {
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	})
	answeredAfterRelease(t, release, got, served, "ServeHTTP")
}

func TestReloadReconnectsOnlyWhatAChangeReaches(t *testing.T) {
	alpha := echoServer("alpha")
	specs := []upstream.Spec{{Name: "alpha", InProcess: alpha}}
	cfg := testConfig()
	g, _ := gatewayWith(t, cfg, specs)

	backoff := *cfg
	backoff.Restart.Max = time.Minute // read by the supervisor at each step
	sum, err := g.Reload(context.Background(), &backoff, specs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.Kept, []string{"alpha"}) {
		t.Errorf("a new restart backoff reconnected servers: %+v", sum)
	}
	bound := backoff
	bound.MaxResultBytes = 1 << 20 // fixed when a connection is made
	if sum, err = g.Reload(context.Background(), &bound, specs); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum.Changed, []string{"alpha"}) {
		t.Errorf("a new max_result_bytes did not reconnect alpha: %+v", sum)
	}
	if u, _ := g.pool.Get("alpha"); u.MessageLimit() != 1<<20 {
		t.Errorf("alpha's bound is %d after the reload, want %d", u.MessageLimit(), 1<<20)
	}
}
