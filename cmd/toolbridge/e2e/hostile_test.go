package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// hostileServer is cmd/toolbridge/e2e/hostileserver: a stdio MCP server
// written on the wire, for what SDK servers would not send.
var hostileServer = &testenv.GoBinary{Package: "github.com/toolbridge/toolbridge/cmd/toolbridge/e2e/hostileserver"}

// hostileConfig writes a config with one hostileserver, started with args.
func hostileConfig(t *testing.T, top string, args ...string) string {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = yamlString(a)
	}
	return writeConfig(t, "toolbridge.yaml", top+"mcpServers:\n  hostile:\n    command: "+yamlString(hostileServer.Path(t))+
		"\n    args: ["+strings.Join(quoted, ", ")+"]\n")
}

// TestSamplingToAClientWithoutTheCapability: an upstream sends
// sampling/createMessage and elicitation/create during a call from a stdio
// client that declared neither capability. The client never sees them; the
// upstream is answered at once with -32601 (#24, item 10). It used to get
// the requests forwarded to the client, which cannot answer them.
func TestSamplingToAClientWithoutTheCapability(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", hostileConfig(t, "timeouts: {call: 5m}\n", "ask"), "--mode", "off")
	p.initialize(ctx) // declares no capabilities
	p.send(`{"jsonrpc":"2.0","id":"ask-1","method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	m := p.expect(ctx, "the answer to ask, or a request forwarded to the client", func(m rpcMessage) bool {
		return string(m.ID) == `"ask-1"` && m.Method == "" || m.Method == "sampling/createMessage" || m.Method == "elicitation/create"
	})
	if m.Method != "" {
		t.Fatalf("toolbridge forwarded %s to a client that did not declare the capability", m.Method)
	}
	isErr, text := p.toolResult("ask", m)
	if isErr {
		t.Fatalf("ask: isError %q", text)
	}
	lines := strings.Split(text, "\n")
	if len(lines) != 2 {
		t.Fatalf("ask answered %q, want one line per request", text)
	}
	for i, method := range []string{"sampling/createMessage", "elicitation/create"} {
		var got struct {
			Method string    `json:"method"`
			Error  *rpcError `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("decoding %q: %v", lines[i], err)
		}
		if got.Method != method || got.Error == nil || got.Error.Code != -32601 {
			t.Errorf("the upstream's %s was answered %s, want error -32601", method, lines[i])
			continue
		}
		if capability := strings.SplitN(method, "/", 2)[0]; !strings.Contains(got.Error.Message, capability+" capability") {
			t.Errorf("the error for %s does not name the missing capability: %q", method, got.Error.Message)
		}
	}
}

// TestHundredThousandTools: one upstream lists 100000 tools. The gateway
// keeps max_tools_per_server (2000 by default) of them, in the order the
// server sent them, says so once on stderr and in /readyz, and pins only
// those (#24, item 9). It used to take them all: 1.09 GB, a 31 MB pin
// file and 22 s before the first tools/list.
func TestHundredThousandTools(t *testing.T) {
	state := t.TempDir()
	cfg := hostileConfig(t, "state_dir: "+yamlString(state)+"\n", "tools", "100000")
	h := startHTTPProc(t, "--config", cfg, "--mode", "off")
	start := time.Now()
	code, r := waitReadyz(t, h.base, "hostile")
	t.Logf("hostile up after %s", time.Since(start).Round(10*time.Millisecond))
	if code != http.StatusOK || len(r.Servers) != 1 || !r.Servers[0].Connected {
		t.Fatalf("/readyz: %d %+v\nstderr:\n%s", code, r, h.stderr.String())
	}
	var full struct {
		Servers []map[string]any `json:"servers"`
	}
	body := getReadyzBody(t, h.base)
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	s := full.Servers[0]
	// Pages past the bound are not fetched: tools_dropped is a lower bound.
	if dropped, _ := s["tools_dropped"].(float64); s["tools"] != float64(2000) || s["tool_limit"] != float64(2000) || dropped < 1 {
		t.Errorf("/readyz hostile: %s, want tools 2000, tool_limit 2000, tools_dropped at least 1", body)
	}

	c := httpMCPClient(t, h.base+"/mcp")
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2000 {
		t.Errorf("tools/list has %d tools, want the 2000 kept", len(res.Tools))
	}
	// The first ones the server sent are the ones kept.
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"echo", "hold", "generated_tool_000000", "generated_tool_001997"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s, one of the first 2000 the server sent", want)
		}
	}
	if names["generated_tool_001998"] {
		t.Error("tools/list has generated_tool_001998, the 2001st tool the server sent")
	}

	said := strings.Count(h.stderr.String(), "kept the first 2000")
	if said != 1 {
		t.Errorf("stderr says %d times that the bound bit, want once:\n%s", said, h.stderr.String())
	}
	pins, err := os.Stat(filepath.Join(state, "pins", "hostile.json"))
	if err != nil {
		t.Fatalf("no pin file: %v", err)
	}
	// About 300 bytes a tool: far from the 31 MB of 100000.
	if pins.Size() > 2000*1024 {
		t.Errorf("the pin file is %d bytes for 2000 tools", pins.Size())
	}
	// Taking all 100000 peaked at 1287 MB; the 2000 kept at about 60 MB.
	rss := peakRSS(t, h.cmd.Process.Pid)
	if rss > 400<<20 {
		t.Errorf("the gateway's peak RSS is %d MB, want far less than taking all 100000 tools (1287 MB)", rss>>20)
	}
	t.Logf("pin file %d bytes; gateway peak RSS %d MB", pins.Size(), rss>>20)
}

// getReadyzBody returns GET /readyz's raw body.
func getReadyzBody(t *testing.T, base string) []byte {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// httpMCPClient is an initialized MCP client of a gateway serving HTTP.
func httpMCPClient(t testing.TB, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStdinClosedMidCall: a client closes stdin while a tool call is in
// flight. The call gets serve.shutdown_grace, as on SIGTERM: one that
// ends within it is answered as usual, one that does not is answered with
// the shutdown error once the grace is over (#24, item 13). The call used
// to be cancelled the moment stdin closed.
func TestStdinClosedMidCall(t *testing.T) {
	hold := func(t *testing.T, p *stdioProc, dir string) (called, release string) {
		called, release = filepath.Join(dir, "called"), filepath.Join(dir, "release")
		args, _ := json.Marshal(map[string]any{"called": called, "release": release})
		p.send(`{"jsonrpc":"2.0","id":"hold-1","method":"tools/call","params":{"name":"hold","arguments":` + string(args) + `}}`)
		waitCalled(t, called)
		return called, release
	}
	t.Run("ends within the grace", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		p := startRaw(t, nil, "serve", "--config", hostileConfig(t, "serve: {shutdown_grace: 10m}\ntimeouts: {call: 10m}\n", "tools", "0"), "--mode", "off")
		p.initialize(ctx)
		_, release := hold(t, p, t.TempDir())
		p.closeStdin()
		// Only once stdin is closed does the call end.
		if err := os.WriteFile(release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		isErr, text := p.toolResult("hold", p.response(ctx, `"hold-1"`))
		if isErr || text != "released" {
			t.Errorf("the call in flight when stdin closed: isError=%v %q, want its own answer \"released\"", isErr, text)
		}
		if !p.waitExit(exitWait) {
			t.Fatalf("toolbridge did not exit within %s of the call's answer\nstderr:\n%s", exitWait, p.stderrText())
		}
		exitedCleanly(t, p.cmd.ProcessState, p.waitErr, p.stderrText())
	})
	t.Run("outlasts the grace", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		p := startRaw(t, nil, "serve", "--config", hostileConfig(t, "serve: {shutdown_grace: 2s}\ntimeouts: {call: 10m}\n", "tools", "0"), "--mode", "off")
		p.initialize(ctx)
		hold(t, p, t.TempDir()) // never released
		p.closeStdin()
		isErr, text := p.toolResult("hold", p.response(ctx, `"hold-1"`))
		if want := "gateway shutting down: call cancelled after 2s"; !isErr || !strings.Contains(text, want) {
			t.Errorf("the call in flight when stdin closed: isError=%v %q, want %q", isErr, text, want)
		}
		if !p.waitExit(shutdownBound) {
			t.Fatalf("toolbridge did not exit within %s of stdin closing\nstderr:\n%s", shutdownBound, p.stderrText())
		}
	})
}

// TestInitializeCapabilitiesOnTheWire: the raw initialize answer over
// stdio lists only capabilities the spec defines for servers; sampling,
// elicitation and roots are client capabilities (#24, item 15).
func TestInitializeCapabilitiesOnTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", hostileConfig(t, "", "tools", "0"), "--mode", "off")
	m := p.request(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}},
		"clientInfo":      map[string]any{"name": "toolbridge-e2e-raw", "version": "0"},
	})
	if m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	server := map[string]bool{"experimental": true, "logging": true, "completions": true, "prompts": true, "resources": true, "tools": true, "tasks": true}
	for key := range res.Capabilities {
		if !server[key] {
			t.Errorf("initialize lists %q among the server's capabilities: %s", key, m.Result)
		}
	}
	if _, ok := res.Capabilities["tools"]; !ok {
		t.Errorf("initialize lacks tools: %s", m.Result)
	}
}
