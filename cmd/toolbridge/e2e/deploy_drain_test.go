package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// probe is one GET of a health endpoint: its status and body, or the
// error when the request got no answer (the port closed).
type probe struct {
	status int
	body   string
	err    error
}

func getProbe(base, path string) probe {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(base + path)
	if err != nil {
		return probe{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return probe{status: resp.StatusCode, body: string(b)}
}

// TestSIGTERMDrainsBeforeClosing: on SIGTERM an HTTP gateway first turns
// /readyz to 503 ("draining": true) for serve.drain_delay while /healthz,
// the sessions it has and the calls in flight are still served, so a
// load balancer takes it out of rotation before its port closes; then it
// shuts down as before (calls still stuck are answered with an error)
// and exits.
func TestSIGTERMDrainsBeforeClosing(t *testing.T) {
	// The delay only has to outlast the checks below (milliseconds each);
	// it is long so that a slow machine does not end it under them.
	const delay = 20 * time.Second
	cfg, called := stuckConfig(t, "serve: {shutdown_grace: 2s}\ntimeouts: {call: 5m}\n")
	g := startGateway(t, testEnv(t, []string{"TOOLBRIDGE_SERVE__DRAIN_DELAY=" + delay.String()}),
		testenv.FreePort(t), "serve", "--config", cfg, "--mode", "off")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(g.url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	// Ready before: the positive case that shows the 503 below is news.
	if p := waitProbe(t, g.base, func(p probe) bool { return p.status == http.StatusOK }); !strings.Contains(p.body, `"ready":true`) {
		t.Fatalf("/readyz before SIGTERM: %d %s", p.status, p.body)
	}

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	stuck := make(chan outcome, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "stuck_forever"
		res, err := c.CallTool(ctx, req)
		stuck <- outcome{res, err}
	}()
	waitCalled(t, called)

	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p := waitProbe(t, g.base, func(p probe) bool { return p.status != http.StatusOK })
	var ready struct {
		Ready    bool `json:"ready"`
		Draining bool `json:"draining"`
	}
	if p.err != nil || p.status != http.StatusServiceUnavailable || json.Unmarshal([]byte(p.body), &ready) != nil || ready.Ready || !ready.Draining {
		t.Fatalf("/readyz after SIGTERM: %d %q (%v), want 503 with ready false and draining true\nstderr:\n%s", p.status, p.body, p.err, g.stderr)
	}
	// While draining, everything but /readyz is served as before.
	if h := getProbe(g.base, "/healthz"); h.status != http.StatusOK {
		t.Errorf("/healthz while draining: %d %v, want 200", h.status, h.err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "reverse_text"
	req.Params.Arguments = map[string]any{"text": "drain"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || textOf(res) != "niard" {
		t.Errorf("a call on the open session while draining: %+v, %v; want niard", res, err)
	}
	select {
	case o := <-stuck:
		t.Fatalf("the call in flight ended during the drain delay: %+v %v", o.res, o.err)
	default:
	}
	if !strings.Contains(g.stderr.String(), "drain") {
		t.Errorf("stderr does not say the gateway is draining:\n%s", g.stderr)
	}

	// Then the usual shutdown: the stuck call is answered, the port closes,
	// the process exits.
	select {
	case o := <-stuck:
		if o.err != nil || !o.res.IsError || !strings.Contains(textOf(o.res), "gateway shutting down") {
			t.Errorf("the stuck call: %+v, error %v; want an isError result saying the gateway is shutting down", o.res, o.err)
		}
	case <-ctx.Done():
		t.Fatal("the stuck call was never answered")
	}
	deadline := time.Now().Add(delay + time.Minute)
	for testenv.ProcessAlive(g.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("toolbridge still runs long after its drain delay and grace\nstderr:\n%s", g.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p := getProbe(g.base, "/healthz"); p.err == nil {
		t.Errorf("/healthz after exit answered %d", p.status)
	}
}

// waitProbe polls /readyz until ok accepts the answer, for at most a
// minute, and returns it.
func waitProbe(t *testing.T, base string, ok func(probe) bool) probe {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := getProbe(base, "/readyz")
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never changed: last %d %q %v", p.status, p.body, p.err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
