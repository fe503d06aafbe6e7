package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// exitWait bounds how long toolbridge may take to exit after a signal or
// after stdin closes. Stopping upstreams gracefully takes up to a few
// seconds (mcp-go gives a child 2s after closing its stdin); this leaves
// room for a loaded machine without letting a hang pass.
const exitWait = 15 * time.Second

// demoServer is examples/servers/demo-server: a real stdio MCP server
// that starts in milliseconds. TestMain removes it.
var demoServer = &testenv.GoBinary{Package: "github.com/toolbridge/toolbridge/examples/servers/demo-server"}

func demoServerBinary(t testing.TB) string {
	t.Helper()
	return demoServer.Path(t)
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// rpcMessage is any JSON-RPC 2.0 message toolbridge writes on stdout.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// parseRPCLine parses one stdout line strictly: a JSON object with
// "jsonrpc":"2.0" that is a request or notification (method) or a response
// (id with exactly one of result and error). Anything else breaks the stdio
// rule: on stdout only JSON-RPC.
func parseRPCLine(line string) (rpcMessage, error) {
	var m rpcMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return m, fmt.Errorf("not JSON: %w", err)
	}
	if m.JSONRPC != "2.0" {
		return m, fmt.Errorf("jsonrpc is %q, want 2.0", m.JSONRPC)
	}
	if m.Method != "" {
		return m, nil
	}
	if m.ID == nil {
		return m, errors.New("neither a method nor an id")
	}
	if (m.Result != nil) == (m.Error != nil) {
		return m, errors.New("a response needs exactly one of result and error")
	}
	return m, nil
}

// stdioProc is a toolbridge process spoken to in raw JSON-RPC lines over its
// stdin and stdout. Every stdout line is checked against the stdio rule.
type stdioProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *testenv.SyncBuffer

	msgs   chan rpcMessage // every valid message, in order
	stash  []rpcMessage    // read from msgs but not yet asked for
	nextID int

	mu     sync.Mutex
	badOut []string // stdout lines that are not JSON-RPC

	exited  chan struct{} // closed once Wait returned
	waitErr error

	stdinClosed bool
}

// startRaw starts toolbridge with args, stdin and stdout as pipes. At
// cleanup it closes stdin, waits for the exit and checks that no stdout line
// broke the stdio rule and that no process toolbridge started is left.
func startRaw(t *testing.T, env []string, args ...string) *stdioProc {
	t.Helper()
	p := &stdioProc{
		t: t, stderr: &testenv.SyncBuffer{},
		msgs: make(chan rpcMessage, 4096), exited: make(chan struct{}),
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = testEnv(t, env)
	p.cmd.Stderr = p.stderr
	testenv.SetProcessGroup(p.cmd)
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting toolbridge: %v", err)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(p.msgs)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if line = strings.TrimRight(line, "\r\n"); line != "" {
				m, perr := parseRPCLine(line)
				if perr != nil {
					p.mu.Lock()
					p.badOut = append(p.badOut, fmt.Sprintf("%q: %v", line, perr))
					p.mu.Unlock()
				} else {
					p.msgs <- m
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		<-readerDone // Wait closes stdout: read it all first
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.finish() })
	return p
}

// finish closes stdin (if the test did not), waits for the exit and checks
// the stdio rule and the children.
func (p *stdioProc) finish() {
	t := p.t
	select {
	case <-p.exited:
	default:
		descendants := testenv.DescendantProcesses(p.cmd.Process.Pid)
		p.closeStdin()
		if !p.waitExit(exitWait) {
			t.Errorf("toolbridge did not exit within %s of its stdin closing\nstderr:\n%s", exitWait, p.stderrText())
			killAll(append(descendants, p.cmd.Process.Pid))
			<-p.exited
		}
		waitGone(t, descendants)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, bad := range p.badOut {
		t.Errorf("stdout carried a line that is not JSON-RPC: %s", bad)
	}
}

// killAll SIGKILLs each pid's process group and the pid itself: the last
// resort after a failed check, so one failure does not leak into the next
// test.
func killAll(pids []int) {
	for _, pid := range pids {
		_ = testenv.KillProcessGroup(pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func (p *stdioProc) stderrText() string { return p.stderr.String() }

func (p *stdioProc) pid() int { return p.cmd.Process.Pid }

// send writes one raw line to toolbridge's stdin.
func (p *stdioProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to toolbridge's stdin: %v\nstderr:\n%s", err, p.stderrText())
	}
}

func (p *stdioProc) closeStdin() {
	if !p.stdinClosed {
		p.stdinClosed = true
		_ = p.stdin.Close()
	}
}

// waitExit reports whether the process exited within d.
func (p *stdioProc) waitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// expect returns the first message, stashed or new, that match accepts. It
// fails the test if none comes before ctx ends (a hang) or stdout closes.
func (p *stdioProc) expect(ctx context.Context, what string, match func(rpcMessage) bool) rpcMessage {
	p.t.Helper()
	for i, m := range p.stash {
		if match(m) {
			p.stash = slices.Delete(p.stash, i, i+1)
			return m
		}
	}
	for {
		select {
		case m, ok := <-p.msgs:
			if !ok {
				p.t.Fatalf("toolbridge closed stdout while waiting for %s\nstderr:\n%s", what, p.stderrText())
			}
			if match(m) {
				return m
			}
			p.stash = append(p.stash, m)
		case <-ctx.Done():
			p.t.Fatalf("no %s from toolbridge: %v (it hangs)\nstderr:\n%s", what, ctx.Err(), p.stderrText())
		}
	}
}

// response waits for the response with the given raw JSON id.
func (p *stdioProc) response(ctx context.Context, id string) rpcMessage {
	p.t.Helper()
	return p.expect(ctx, "response to id "+id, func(m rpcMessage) bool {
		return m.Method == "" && string(m.ID) == id
	})
}

// request sends a request with a fresh id and waits for its response.
func (p *stdioProc) request(ctx context.Context, method string, params any) rpcMessage {
	p.t.Helper()
	p.nextID++
	id := strconv.Quote("e2e-" + strconv.Itoa(p.nextID))
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(string(line))
	return p.response(ctx, id)
}

// initialize does the MCP handshake.
func (p *stdioProc) initialize(ctx context.Context) {
	p.t.Helper()
	m := p.request(ctx, "initialize", map[string]any{
		"protocolVersion": mcp.LATEST_PROTOCOL_VERSION,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "toolbridge-e2e-raw", "version": "0"},
	})
	if m.Error != nil {
		p.t.Fatalf("initialize: %+v", m.Error)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// toolNames lists the tools the client sees.
func (p *stdioProc) toolNames(ctx context.Context) []string {
	p.t.Helper()
	m := p.request(ctx, "tools/list", map[string]any{})
	if m.Error != nil {
		p.t.Fatalf("tools/list: %+v\nstderr:\n%s", m.Error, p.stderrText())
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		p.t.Fatalf("decoding tools/list: %v", err)
	}
	names := make([]string, len(res.Tools))
	for i, tool := range res.Tools {
		names[i] = tool.Name
	}
	return names
}

// callTool calls a tool and returns isError and the text of the result.
// A JSON-RPC error fails the test: tool failures must be isError results.
func (p *stdioProc) callTool(ctx context.Context, name string, args any) (bool, string) {
	p.t.Helper()
	return p.toolResult(name, p.request(ctx, "tools/call", map[string]any{"name": name, "arguments": args}))
}

// toolResult decodes the response to a tools/call of name.
func (p *stdioProc) toolResult(name string, m rpcMessage) (bool, string) {
	p.t.Helper()
	if m.Error != nil {
		p.t.Fatalf("tools/call %s: JSON-RPC error %+v, want a result\nstderr:\n%s", name, m.Error, p.stderrText())
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		p.t.Fatalf("decoding tools/call %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	return res.IsError, strings.Join(texts, "\n")
}

// demoConfig writes a config with the demo-server's math and text servers
// over stdio, plus extra YAML under mcpServers.
func demoConfig(t testing.TB, top, extraServers string) string {
	t.Helper()
	demo := demoServerBinary(t)
	return writeConfig(t, "toolbridge.yaml", top+"mcpServers:\n"+
		"  math:\n    command: "+demo+"\n    args: [math]\n"+
		"  text:\n    command: "+demo+"\n    args: [text]\n"+extraServers)
}

// childCommands returns the command lines of pid's descendants.
func childCommands(pid int) map[int]string {
	out := map[int]string{}
	for _, d := range testenv.DescendantProcesses(pid) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d), "cmdline"))
		if err != nil {
			continue
		}
		out[d] = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// waitForDemoChildren waits until toolbridge runs both demo servers and
// returns every descendant: the positive case that proves the later "all
// gone" check can fail.
func waitForDemoChildren(t *testing.T, pid int) []int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		cmds := childCommands(pid)
		n := 0
		for _, c := range cmds {
			if strings.Contains(c, "demo-server math") || strings.Contains(c, "demo-server text") {
				n++
			}
		}
		if n == 2 {
			pids := make([]int, 0, len(cmds))
			for p := range cmds {
				pids = append(pids, p)
			}
			slices.Sort(pids)
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolbridge %d did not start both demo servers; its descendants: %v", pid, cmds)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitedCleanly fails the test unless the process exited on its own with
// code 0: a signal it did not handle would show as "signal: terminated".
func exitedCleanly(t *testing.T, state *os.ProcessState, waitErr error, stderr string) {
	t.Helper()
	if state == nil {
		t.Fatalf("no exit state (wait: %v)", waitErr)
	}
	if !state.Exited() || state.ExitCode() != 0 {
		t.Errorf("toolbridge ended with %v, want exit code 0 after handling the signal\nstderr:\n%s", state, stderr)
	}
}

// TestStdioSignalsStopEverything sends SIGTERM and SIGINT to a stdio
// gateway in the middle of a session: it must exit within exitWait, on its
// own (exit code 0), with every child process gone.
func TestStdioSignalsStopEverything(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p := startRaw(t, nil, "serve", "--config", demoConfig(t, "", ""), "--mode", "off")
			p.initialize(ctx)
			if names := p.toolNames(ctx); !slices.Contains(names, "add") || !slices.Contains(names, "reverse_text") {
				t.Fatalf("tools/list lacks the demo tools: %v", names)
			}
			children := waitForDemoChildren(t, p.pid())
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if !p.waitExit(exitWait) {
				t.Fatalf("toolbridge did not exit within %s of %v\nstderr:\n%s", exitWait, sig, p.stderrText())
			}
			exitedCleanly(t, p.cmd.ProcessState, p.waitErr, p.stderrText())
			waitGone(t, children)
		})
	}
}

// TestStdinCloseStopsEverything: a client that closes stdin ends the
// session; toolbridge exits with code 0 and stops every child.
func TestStdinCloseStopsEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", demoConfig(t, "", ""), "--mode", "off")
	p.initialize(ctx)
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 2, "b": 3}); isErr || text != "5" {
		t.Fatalf("add: isError=%v %q", isErr, text)
	}
	children := waitForDemoChildren(t, p.pid())
	p.closeStdin()
	if !p.waitExit(exitWait) {
		t.Fatalf("toolbridge did not exit within %s of its stdin closing\nstderr:\n%s", exitWait, p.stderrText())
	}
	exitedCleanly(t, p.cmd.ProcessState, p.waitErr, p.stderrText())
	waitGone(t, children)
}

// pidFileScript is a shell script for an upstream that writes its own pid
// and the pid of a background grandchild (sleep 600) to file and then runs
// body. The grandchild shows whether stopping the server kills its whole
// process group, not just the shell.
func pidFileScript(file, body string) string {
	return fmt.Sprintf("echo $$ >> %s; sleep 600 & echo $! >> %s; %s", file, file, body)
}

// yamlString quotes s for a YAML config value: a double-quoted string
// with every "$" doubled, so toolbridge's ${VAR} expansion leaves it as is.
func yamlString(s string) string {
	return strconv.Quote(strings.ReplaceAll(s, "$", "$$"))
}

// readPids waits until file holds want pids and returns them.
func readPids(t *testing.T, file string, want int) []int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, _ := os.ReadFile(file)
		var pids []int
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		if len(pids) >= want {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %d pids", file, data, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSignalWhileConnecting sends SIGTERM while an upstream has not yet
// answered initialize: toolbridge (which serves while it connects) must
// stop connecting rather than report a finished start, exit within
// exitWait, and kill the half-started server's whole process group.
func TestSignalWhileConnecting(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "silent.pids")
	cfg := demoConfig(t, "timeouts:\n  connect: 2m\n",
		"  silent:\n    command: sh\n    args: [-c, "+yamlString(pidFileScript(pidFile, "wait"))+"]\n")
	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	pids := readPids(t, pidFile, 2)
	for _, pid := range pids {
		if !testenv.ProcessAlive(pid) {
			t.Fatalf("upstream process %d is not running before the signal", pid)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !p.waitExit(exitWait) {
		t.Fatalf("toolbridge did not exit within %s of SIGTERM while connecting\nstderr:\n%s", exitWait, p.stderrText())
	}
	exitedCleanly(t, p.cmd.ProcessState, p.waitErr, p.stderrText())
	waitGone(t, pids)
	if stderr := p.stderrText(); strings.Contains(stderr, "servers up") || !strings.Contains(stderr, "stopped while connecting") {
		t.Errorf("toolbridge reported a finished start after SIGTERM during connect, or did not say it stopped connecting:\n%s", stderr)
	}
	if stderr := p.stderrText(); strings.Contains(stderr, "✗ silent") {
		t.Errorf("the server stopped by the signal was reported as failed:\n%s", stderr)
	}
}

// httpProc is a toolbridge process serving streamable HTTP on loopback.
type httpProc struct {
	cmd    *exec.Cmd
	base   string
	stdout *testenv.SyncBuffer
	stderr *testenv.SyncBuffer
	exited chan struct{}
}

// startHTTPProc starts `toolbridge serve --transport http` on a free port
// and waits for /healthz. Unlike startHTTP it leaves stopping to the test;
// at cleanup it only kills what is left.
func startHTTPProc(t testing.TB, args ...string) *httpProc {
	t.Helper()
	port := testenv.FreePort(t)
	h := &httpProc{
		base:   fmt.Sprintf("http://127.0.0.1:%d", port),
		stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{},
		exited: make(chan struct{}),
	}
	h.cmd = exec.Command(binary, append([]string{"serve", "--transport", "http", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, args...)...)
	h.cmd.Stdout, h.cmd.Stderr = h.stdout, h.stderr
	testenv.SetProcessGroup(h.cmd)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-h.exited:
		default:
			descendants := testenv.DescendantProcesses(h.cmd.Process.Pid)
			killAll(append(descendants, h.cmd.Process.Pid))
			<-h.exited
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := client.Get(h.base + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
				t.Fatalf("/healthz: %s %q", resp.Status, body)
			}
			return h
		}
		select {
		case <-h.exited:
			t.Fatalf("toolbridge exited before serving: %v\nstderr:\n%s", h.cmd.ProcessState, h.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz within 2 minutes\nstderr:\n%s", h.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readyz is GET /readyz decoded.
type readyz struct {
	Ready   bool `json:"ready"`
	Servers []struct {
		Name       string `json:"name"`
		Transport  string `json:"transport"`
		Connected  bool   `json:"connected"`
		Connecting bool   `json:"connecting"`
		Tools      int    `json:"tools"`
		Error      string `json:"error"`
	} `json:"servers"`
}

func getReadyz(t testing.TB, base string) (int, readyz) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("/readyz Content-Type %q, want application/json", ct)
	}
	var r readyz
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decoding /readyz: %v", err)
	}
	return resp.StatusCode, r
}

// waitReadyz polls /readyz until every server in names is listed with the
// outcome of its first connect (not "connecting"), and returns that answer
// (or the last one, when they never all have one). A start does not wait
// for the servers (initialize is answered at once), so /healthz answers
// before /readyz knows how each server's connect ended.
func waitReadyz(t testing.TB, base string, names ...string) (int, readyz) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, r := getReadyz(t, base)
		listed := map[string]bool{}
		for _, s := range r.Servers {
			listed[s.Name] = !s.Connecting
		}
		all := true
		for _, n := range names {
			all = all && listed[n]
		}
		if all || time.Now().After(deadline) {
			return code, r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPHealthReadyAndSignals runs the HTTP gateway with two working
// servers and one whose port refuses connections: /healthz is 200, /readyz
// is 200 and lists all three with their state, the working tools answer
// over MCP, and SIGTERM or SIGINT stops it within exitWait with every child
// gone.
func TestHTTPHealthReadyAndSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			refused := fmt.Sprintf("http://127.0.0.1:%d/mcp", testenv.FreePort(t))
			cfg := demoConfig(t, "", "  refused:\n    url: "+refused+"\n")
			h := startHTTPProc(t, "--config", cfg, "--mode", "off")

			code, r := waitReadyz(t, h.base, "math", "refused", "text")
			if code != http.StatusOK || !r.Ready {
				t.Fatalf("/readyz: %d ready=%v, want 200 and ready with two servers up: %+v", code, r.Ready, r)
			}
			got := map[string]bool{}
			for _, s := range r.Servers {
				got[s.Name] = s.Connected
				switch s.Name {
				case "math", "text":
					if !s.Connected || s.Tools == 0 || s.Transport != "stdio" {
						t.Errorf("/readyz %s: %+v, want connected stdio with tools", s.Name, s)
					}
				case "refused":
					if s.Connected || !strings.Contains(s.Error, "connection refused") {
						t.Errorf("/readyz refused: %+v, want not connected with the dial error", s)
					}
				}
			}
			if len(got) != 3 {
				t.Errorf("/readyz lists %v, want math, refused and text", got)
			}

			c, err := client.NewStreamableHttpClient(h.base + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
			init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge-e2e", Version: "0"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatalf("initialize over HTTP: %v\nstderr:\n%s", err, h.stderr.String())
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "reverse_text"
			req.Params.Arguments = map[string]any{"text": "abc"}
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError || textOf(res) != "cba" {
				t.Fatalf("reverse_text over HTTP: %v %+v", err, res)
			}
			_ = c.Close()

			children := waitForDemoChildren(t, h.cmd.Process.Pid)
			if err := h.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-h.exited:
			case <-time.After(exitWait):
				t.Fatalf("toolbridge did not exit within %s of %v\nstderr:\n%s", exitWait, sig, h.stderr.String())
			}
			exitedCleanly(t, h.cmd.ProcessState, nil, h.stderr.String())
			waitGone(t, children)
			if out := h.stdout.String(); out != "" {
				t.Errorf("HTTP mode wrote to stdout: %q", out)
			}
		})
	}
}

// TestReadyzWithoutServers: with no upstream connected the process is
// healthy (/healthz 200) but not ready (/readyz 503, naming the server that
// failed and why).
func TestReadyzWithoutServers(t *testing.T) {
	refused := fmt.Sprintf("http://127.0.0.1:%d/mcp", testenv.FreePort(t))
	cfg := writeConfig(t, "toolbridge.yaml", "mcpServers:\n  refused:\n    url: "+refused+"\n")
	h := startHTTPProc(t, "--config", cfg)
	code, r := waitReadyz(t, h.base, "refused")
	if code != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("/readyz with no server up: %d ready=%v, want 503 and not ready", code, r.Ready)
	}
	if len(r.Servers) != 1 || r.Servers[0].Name != "refused" || r.Servers[0].Connected || !strings.Contains(r.Servers[0].Error, "connection refused") {
		t.Fatalf("/readyz servers: %+v, want refused, not connected, with the dial error", r.Servers)
	}
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.exited:
	case <-time.After(exitWait):
		t.Fatalf("toolbridge did not exit within %s of SIGTERM\nstderr:\n%s", exitWait, h.stderr.String())
	}
	exitedCleanly(t, h.cmd.ProcessState, nil, h.stderr.String())
}

// TestReadyzShowsLostServer: when a stdio server's process dies after it
// connected, /readyz reports it as not connected, with how it ended, while
// the gateway stays ready on the other server.
func TestReadyzShowsLostServer(t *testing.T) {
	h := startHTTPProc(t, "--config", demoConfig(t, "", ""), "--mode", "off")
	waitForDemoChildren(t, h.cmd.Process.Pid)
	// Both servers must have connected before math is killed: a child
	// process exists before its initialize is answered, and under load text
	// was still connecting (so /readyz said 503) when math's death showed.
	if code, r := waitReadyz(t, h.base, "math", "text"); code != http.StatusOK || !r.Ready {
		t.Fatalf("/readyz before the kill: %d %+v, want 200 with both servers connected", code, r)
	}
	math := findChild(t, h.cmd.Process.Pid, "demo-server math")
	if err := testenv.KillProcessGroup(math); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, r := getReadyz(t, h.base)
		var mathStatus, textStatus string
		for _, s := range r.Servers {
			switch s.Name {
			case "math":
				if !s.Connected {
					mathStatus = s.Error
				}
			case "text":
				if s.Connected {
					textStatus = "up"
				}
			}
		}
		if mathStatus != "" {
			if !strings.Contains(mathStatus, "killed") {
				t.Errorf("/readyz math error %q does not say how it ended", mathStatus)
			}
			if code != http.StatusOK || !r.Ready || textStatus != "up" {
				t.Errorf("/readyz after math died: %d ready=%v text=%q, want 200, ready, text up", code, r.Ready, textStatus)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still shows math connected 20s after its process was killed: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
