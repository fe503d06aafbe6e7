package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// Spec says how to reach one upstream server: a config entry, or an
// in-process MCP server (the demo and tests use those).
type Spec struct {
	Name   string
	Config config.Server
	// InProcess, when set, is served in this process; Config's command and
	// url are ignored.
	InProcess *server.MCPServer
}

// Transport names the spec's transport as progress lines and traces show it.
func (s Spec) Transport() string {
	if s.InProcess != nil {
		return "inprocess"
	}
	return s.Config.UpstreamTransport()
}

// RPCError is a JSON-RPC error an upstream answered with.
type RPCError struct {
	Code    int
	Message string
	Data    any
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// ErrUnavailable is returned for calls to an upstream that is not connected.
var ErrUnavailable = errors.New("upstream is not connected")

// upstream is one connected MCP server. Its tool list is replaced as a whole
// on refresh, so readers never see a half-updated list.
type upstream struct {
	spec    Spec
	environ []string
	relay   *relay

	client *client.Client
	tr     transport.Interface
	child  *child // stdio only: the server's process
	stderr *tailBuffer
	nextID atomic.Int64
	// maxLine bounds one message on a stdio server's stdout or in an HTTP
	// server's response (the config's max_result_bytes); 0 means
	// defaultMaxLine.
	maxLine int64
	// inflight counts requests awaiting an answer: a reload that replaces
	// this upstream closes it only after they end.
	inflight activity

	mu           sync.RWMutex
	tools        []mcp.Tool
	prompts      []mcp.Prompt
	resources    []mcp.Resource
	templates    []mcp.ResourceTemplate
	instructions string
	info         mcp.Implementation
	caps         mcp.ServerCapabilities
	closed       bool

	// lostCh is closed, once, when the connection is lost while the
	// gateway still wanted it (the process died, the HTTP server went
	// away); lostWhy says how. The pool's supervisor waits on it.
	lostOnce sync.Once
	lostCh   chan struct{}
	lostWhy  string
}

func newUpstream(spec Spec, environ []string, r *relay) *upstream {
	return &upstream{spec: spec, environ: environ, relay: r, stderr: newTailBuffer(4096), lostCh: make(chan struct{})}
}

// markLost records that the connection is gone, unless the gateway itself
// closed it.
func (u *upstream) markLost(why string) {
	u.mu.RLock()
	closed := u.closed
	u.mu.RUnlock()
	if closed {
		return
	}
	u.lostOnce.Do(func() {
		u.mu.Lock()
		u.lostWhy = u.spec.Config.Scrub(why)
		u.mu.Unlock()
		close(u.lostCh)
	})
}

// watch turns the transport's signs of loss into markLost: a stdio
// server's exit, an SSE connection's end. (A streamable-HTTP server that
// goes away is noticed by the next request that fails; see request.)
func (u *upstream) watch() {
	if u.child != nil {
		go func() {
			select {
			case <-u.child.exited:
				why := u.lost()
				u.markLost(why)
			case <-u.lostCh:
			}
		}()
	}
	u.client.OnConnectionLost(func(err error) { u.markLost(fmt.Sprint("connection lost: ", err)) })
}

// connect starts the transport, initializes the session and lists what the
// server offers. life bounds the connection's lifetime; ctx bounds the
// handshake (the connect timeout). After a failure the caller must call
// abort, which stops the server and adds what it left behind to the error.
func (u *upstream) connect(ctx, life context.Context) error {
	tr, err := u.newTransport()
	if err != nil {
		return err
	}
	u.tr = tr
	opts := []client.ClientOption{
		client.WithSamplingHandler(peer{u}),
		client.WithElicitationHandler(peer{u}),
		client.WithRootsHandler(peer{u}),
		// Upstreams are spoken to in protocol 2025-11-25, the newest before
		// 2026-07-28. The gateway sends its own requests on the transport
		// (to keep schemas, arguments and results exactly as sent), and
		// 2026-07-28 wants per-request _meta, mirrored headers and
		// multi-round-trip input that only mcp-go's client methods add.
		// Servers negotiate down, so this reaches every server we know of;
		// one that speaks nothing older would fail to initialize, with an
		// error naming the version.
		client.WithLegacyProtocolOnly(),
	}
	c := client.NewClient(tr, opts...)
	u.client = c
	// Start before Initialize, or notifications never fire.
	if err := c.Start(life); err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	c.OnNotification(u.onNotification)

	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge", Version: Version}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer to initialize: %w", ctx.Err())
		}
		return fmt.Errorf("initializing: %w", err)
	}
	u.mu.Lock()
	u.instructions = res.Instructions
	u.info = res.ServerInfo
	u.caps = res.Capabilities
	u.mu.Unlock()
	return u.refreshAll(ctx)
}

func (u *upstream) newTransport() (transport.Interface, error) {
	s := u.spec
	if s.InProcess != nil {
		return transport.NewInProcessTransportWithOptions(s.InProcess,
			transport.WithSamplingHandler(peer{u}),
			transport.WithElicitationHandler(peer{u}),
			transport.WithRootsHandler(peer{u}),
		), nil
	}
	cfg := s.Config
	switch cfg.UpstreamTransport() {
	case config.TransportStdio:
		c, err := u.startChild(cfg)
		if err != nil {
			return nil, fmt.Errorf("starting: %w", err)
		}
		u.child = c
		// mcp-go's own stdio transport would run the process itself; over
		// plain pipes the gateway keeps the process and the read bound.
		return transport.NewIO(c.limitedStdout(), c.stdin, nil), nil
	case config.TransportSSE:
		return transport.NewSSE(cfg.URL, transport.WithHeaders(cfg.Headers), transport.WithHTTPClient(u.httpClient()))
	case config.TransportStreamableHTTP:
		// Continuous listening opens the standalone GET stream, where servers
		// send requests and notifications not tied to one POST (mcp-go sends
		// sampling requests there).
		return transport.NewStreamableHTTP(cfg.URL, transport.WithHTTPHeaders(cfg.Headers), transport.WithContinuousListening(),
			transport.WithHTTPBasicClient(u.httpClient()))
	}
	return nil, fmt.Errorf("unknown transport %q", cfg.UpstreamTransport())
}

// defaultMaxLine is the bound on one stdout message when the config
// gives none (config.Default's max_result_bytes).
const defaultMaxLine = 10 << 20

// child is a stdio server's process. The gateway runs it itself, not
// through mcp-go's stdio transport, for three reasons: stdout is read
// through a bound on line length (mcp-go holds a line in memory until its
// newline, so a server flooding stdout without one would grow the gateway
// without end); the process is reaped the moment it exits, so the gateway
// can say how it ended; and stopping follows the MCP spec's order (close
// stdin, then SIGTERM, then SIGKILL) over the whole process group.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // the write end of the child's stdin
	stdout *os.File // the read end of the child's stdout
	limit  int64
	exited chan struct{} // closed once the process is reaped

	mu     sync.Mutex
	killed bool   // the gateway sent SIGKILL (not news when reporting)
	cut    error  // why the gateway stopped reading stdout, if it did
	junk   string // the first stdout line that cannot be JSON-RPC
}

// startChild starts the server in its own process group, so that stopping
// it reaches grandchildren too (npx starts node as a child), and with a
// parent-death signal, so that it dies even if toolbridge is killed with
// SIGKILL.
func (u *upstream) startChild(cfg config.Server) (*child, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = append([]string(nil), u.environ...)
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = cfg.Cwd
	cmd.Stderr = u.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// A grandchild that keeps stderr open must not hold up Wait for long.
	cmd.WaitDelay = 2 * time.Second
	// Pipes as files, not cmd.StdoutPipe: Wait would close the read end
	// while mcp-go may still be reading what the child wrote last.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	_, _ = inR.Close(), outW.Close() // the child has its own copies
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		return nil, err
	}
	limit := u.maxLine
	if limit <= 0 {
		limit = defaultMaxLine
	}
	c := &child{cmd: cmd, stdin: inW, stdout: outR, limit: limit, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// kill sends SIGKILL to the child's whole process group.
func (c *child) kill() {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
}

// waitExit reports whether the child was reaped within d.
func (c *child) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the child once its stdin is closed (the transport's Close
// does that): it gets grace to exit, then SIGTERM and grace again, then
// SIGKILL. Whatever is left in its process group is killed, and the stdout
// read end is closed, which ends mcp-go's reader.
func (c *child) stop(grace time.Duration) {
	if !c.waitExit(grace) {
		_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
		if !c.waitExit(grace) {
			c.kill()
			<-c.exited // SIGKILL, then at most WaitDelay for stderr
		}
	}
	// The leader is gone; anything left in its group is an orphan-to-be.
	// ESRCH (nothing left) is the normal case.
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	_ = c.stdout.Close()
}

// ended describes how the child ended, once it has: an exit status, or a
// signal other than a SIGKILL the gateway sent itself; plus why the gateway
// cut its stdout, if it did. It is empty while the child runs.
func (c *child) ended() string {
	select {
	case <-c.exited:
	default:
		return ""
	}
	c.mu.Lock()
	killed, cut, junk := c.killed, c.cut, c.junk
	c.mu.Unlock()
	var parts []string
	if cut != nil {
		parts = append(parts, cut.Error())
	}
	if junk != "" {
		// The usual cause: a server that logs to stdout, where mcp-go
		// skips what is not JSON and the answers may never come.
		parts = append(parts, fmt.Sprintf("stdout had a line that is not JSON-RPC: %q (logs belong on stderr)", junk))
	}
	st := c.cmd.ProcessState
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case st.Exited():
		parts = append(parts, fmt.Sprintf("the process exited with status %d", st.ExitCode()))
	case ws.Signaled() && (ws.Signal() != syscall.SIGKILL || !killed):
		parts = append(parts, "the process was killed by "+st.String())
	}
	return strings.Join(parts, "; ")
}

// limitedStdout is the child's stdout, cut (and the child killed) once one
// line passes the limit.
func (c *child) limitedStdout() io.Reader {
	return &lineLimiter{r: c.stdout, max: c.limit, over: func(err error) {
		c.mu.Lock()
		c.cut = err
		c.mu.Unlock()
		c.kill()
	}, onJunk: func(line string) {
		c.mu.Lock()
		c.junk = line
		c.mu.Unlock()
	}}
}

// lineLimiter passes a reader through and fails once a line (the bytes
// since the last newline) grows past max. Until it has found one, it also
// looks for a line that cannot be JSON-RPC (one not starting with "{") and
// reports the first to onJunk.
type lineLimiter struct {
	r      io.Reader
	max    int64
	line   int64
	over   func(error)
	err    error
	onJunk func(string)
	head   []byte // the start of the current line, up to junkLen bytes
	found  bool
}

// junkLen is how much of a non-JSON line is kept for the error message.
const junkLen = 120

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	if !l.found {
		l.scan(p[:n])
	}
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.line = int64(n - i - 1)
	} else {
		l.line += int64(n)
	}
	if l.line > l.max {
		l.err = fmt.Errorf("the server wrote a message longer than %d bytes on stdout (max_result_bytes)", l.max)
		l.over(l.err)
		return 0, l.err
	}
	return n, err
}

// scan checks each line completed in b.
func (l *lineLimiter) scan(b []byte) {
	for len(b) > 0 && !l.found {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if room := junkLen - len(l.head); room > 0 {
			l.head = append(l.head, seg[:min(room, len(seg))]...)
		}
		if i < 0 {
			return
		}
		if line := bytes.TrimSpace(l.head); len(line) > 0 && line[0] != '{' {
			l.found = true
			l.onJunk(string(line))
		}
		l.head = l.head[:0]
		b = b[i+1:]
	}
}

// abort stops an upstream whose connect failed and returns err with what
// the child left behind: how it ended and the tail of its stderr, which is
// usually where the real reason is. A child that is still running never
// became a session, so it gets no graceful shutdown: its whole process
// group is killed at once.
func (u *upstream) abort(err error) error {
	if u.child != nil {
		u.child.kill()
	}
	_ = u.stop()
	if u.child != nil {
		if how := u.child.ended(); how != "" {
			err = fmt.Errorf("%w; %s", err, how)
		}
	}
	// The child is reaped: the copy of its stderr is complete.
	if tail := u.stderr.String(); tail != "" {
		err = fmt.Errorf("%w; stderr: %s", err, tail)
	}
	return err
}

// isClosed reports whether close (or abort) has been called.
func (u *upstream) isClosed() bool {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.closed
}

// close ends the session and, for stdio, stops the process and its group.
func (u *upstream) close() error { return u.stop() }

// stopGrace is how long a stdio server gets to exit after its stdin
// closes, and again after SIGTERM.
const stopGrace = 2 * time.Second

// stop closes the session once and, for stdio, stops the process.
func (u *upstream) stop() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	u.closed = true
	u.mu.Unlock()
	var err error
	if u.client != nil {
		err = u.client.Close()
	} else if u.tr != nil {
		err = u.tr.Close()
	}
	if u.child != nil {
		u.child.stop(stopGrace)
	}
	return err
}

// explain adds to a failed request what is known of a stdio server's end:
// a server that died is reported by the transport only as "transport
// closed". The reaper may trail the transport by a moment, so it is given
// one.
func (u *upstream) explain(err error) error {
	if u.child == nil {
		return err
	}
	u.child.waitExit(250 * time.Millisecond)
	if how := u.child.ended(); how != "" {
		return fmt.Errorf("%w; %s", err, how)
	}
	return err
}

// lost returns why a stdio server is gone, or "" while it runs.
func (u *upstream) lost() string {
	if u.child == nil {
		return ""
	}
	select {
	case <-u.child.exited:
	default:
		return ""
	}
	if how := u.child.ended(); how != "" {
		return how
	}
	return "the process ended"
}

// request sends one JSON-RPC request and returns the raw result. A context
// that ends first sends notifications/cancelled upstream, as the MCP spec
// asks, so the server can stop working on it.
func (u *upstream) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	u.mu.RLock()
	closed := u.closed
	u.mu.RUnlock()
	if closed || u.tr == nil {
		return nil, ErrUnavailable
	}
	u.inflight.begin()
	defer u.inflight.end()
	id := mcp.NewRequestId("tb-" + strconv.FormatInt(u.nextID.Add(1), 10))
	ctx, over := watchOverflow(ctx)
	resp, err := u.tr.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params,
	})
	if err != nil {
		if ctx.Err() != nil {
			u.cancel(id, ctx.Err())
			return nil, ctx.Err()
		}
		if tooLarge := over.failed(); tooLarge != nil {
			// The answer was too long (mcp-go may report that as
			// something else), which is no lost connection; a legacy SSE
			// stream it broke is reported lost by the transport itself.
			return nil, tooLarge
		}
		err = u.explain(err)
		// A request that fails below JSON-RPC means the connection is
		// gone: the supervisor reconnects.
		u.markLost(err.Error())
		return nil, err
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp.Result, nil
}

func (u *upstream) cancel(id mcp.RequestId, reason error) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}
	n.Method = string(mcp.MethodNotificationCancelled)
	n.Params.AdditionalFields = map[string]any{"requestId": id, "reason": reason.Error()}
	// Best effort, off the caller's path: the caller already has its error.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = u.tr.SendNotification(ctx, n)
	}()
}

// refreshAll lists tools, prompts, resources and templates, as the server's
// capabilities allow.
func (u *upstream) refreshAll(ctx context.Context) error {
	if err := u.refreshTools(ctx); err != nil {
		return err
	}
	u.mu.RLock()
	caps := u.caps
	u.mu.RUnlock()
	if caps.Prompts != nil {
		if err := u.refreshPrompts(ctx); err != nil {
			return err
		}
	}
	if caps.Resources != nil {
		if err := u.refreshResources(ctx); err != nil {
			return err
		}
	}
	return nil
}

// refreshTools follows tools/list pagination and keeps each tool's schemas
// exactly as the server sent them.
func (u *upstream) refreshTools(ctx context.Context) error {
	u.mu.RLock()
	hasTools := u.caps.Tools != nil
	u.mu.RUnlock()
	if !hasTools {
		return nil
	}
	var tools []mcp.Tool
	err := paginate(ctx, u, string(mcp.MethodToolsList), func(page json.RawMessage) (string, error) {
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(page, &res); err != nil {
			return "", fmt.Errorf("decoding tools/list: %w", err)
		}
		for i, raw := range res.Tools {
			t, err := decodeTool(raw)
			if err != nil {
				return "", fmt.Errorf("decoding tool %d of tools/list: %w", len(tools)+i, err)
			}
			tools = append(tools, t)
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	u.mu.Lock()
	u.tools = tools
	u.mu.Unlock()
	return nil
}

func (u *upstream) refreshPrompts(ctx context.Context) error {
	var prompts []mcp.Prompt
	err := paginate(ctx, u, string(mcp.MethodPromptsList), func(page json.RawMessage) (string, error) {
		var res mcp.ListPromptsResult
		if err := json.Unmarshal(page, &res); err != nil {
			return "", fmt.Errorf("decoding prompts/list: %w", err)
		}
		prompts = append(prompts, res.Prompts...)
		return string(res.NextCursor), nil
	})
	if err != nil {
		return fmt.Errorf("listing prompts: %w", err)
	}
	u.mu.Lock()
	u.prompts = prompts
	u.mu.Unlock()
	return nil
}

func (u *upstream) refreshResources(ctx context.Context) error {
	var resources []mcp.Resource
	err := paginate(ctx, u, string(mcp.MethodResourcesList), func(page json.RawMessage) (string, error) {
		var res mcp.ListResourcesResult
		if err := json.Unmarshal(page, &res); err != nil {
			return "", fmt.Errorf("decoding resources/list: %w", err)
		}
		resources = append(resources, res.Resources...)
		return string(res.NextCursor), nil
	})
	if err != nil {
		return fmt.Errorf("listing resources: %w", err)
	}
	var templates []mcp.ResourceTemplate
	err = paginate(ctx, u, string(mcp.MethodResourcesTemplatesList), func(page json.RawMessage) (string, error) {
		var res mcp.ListResourceTemplatesResult
		if err := json.Unmarshal(page, &res); err != nil {
			return "", fmt.Errorf("decoding resources/templates/list: %w", err)
		}
		templates = append(templates, res.ResourceTemplates...)
		return string(res.NextCursor), nil
	})
	if err != nil {
		// Templates are optional in practice: some servers answer
		// method-not-found although they list resources.
		var rpcErr *RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.METHOD_NOT_FOUND {
			return fmt.Errorf("listing resource templates: %w", err)
		}
	}
	u.mu.Lock()
	u.resources, u.templates = resources, templates
	u.mu.Unlock()
	return nil
}

// maxPages bounds pagination: a server that hands out cursors forever must
// not hang the gateway.
const maxPages = 1000

// paginate calls method until the server stops returning a cursor. A cursor
// seen twice is an error rather than an endless loop.
func paginate(ctx context.Context, u *upstream, method string, page func(json.RawMessage) (string, error)) error {
	seen := map[string]bool{}
	cursor := ""
	for i := 0; i < maxPages; i++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		raw, err := u.request(ctx, method, params)
		if err != nil {
			return err
		}
		next, err := page(raw)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("%s returned cursor %q twice", method, next)
		}
		seen[next] = true
		cursor = next
	}
	return fmt.Errorf("%s: more than %d pages", method, maxPages)
}

// decodeTool decodes one tool and keeps its input and output schemas as
// the raw JSON the server sent: mcp-go's typed schema drops keywords it does
// not model ($schema, titles, ...), and clients must see them unchanged.
// The schemas are not decoded into mcp-go's typed maps at all: nothing
// reads those, and for a catalog of thousands of tools decoding them was
// most of the CPU and garbage of listing it.
func decodeTool(raw json.RawMessage) (mcp.Tool, error) {
	var wire struct {
		mcp.Tool
		// At a shallower depth than mcp.Tool's fields of the same JSON
		// names, these take the schemas instead of them.
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return mcp.Tool{}, err
	}
	t := wire.Tool
	if t.Name == "" {
		return t, errors.New("tool has no name")
	}
	t.RawInputSchema = wire.InputSchema
	switch {
	case isNull(t.RawInputSchema):
		// A tool must have an input schema; an empty object schema is what
		// the server meant.
		t.RawInputSchema = json.RawMessage(`{"type":"object"}`)
	case !isObject(t.RawInputSchema):
		return t, fmt.Errorf("tool %q: inputSchema is not a JSON object", t.Name)
	}
	if !isNull(wire.OutputSchema) {
		if !isObject(wire.OutputSchema) {
			return t, fmt.Errorf("tool %q: outputSchema is not a JSON object", t.Name)
		}
		t.RawOutputSchema = wire.OutputSchema
	}
	return t, nil
}

// isNull reports whether a raw JSON value is absent or null.
func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// isObject reports whether a raw JSON value (already known to be valid
// JSON) is an object.
func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

// snapshot returns the upstream's current lists; the slices are never
// modified after they are stored, so sharing them is safe.
func (u *upstream) snapshot() (tools []mcp.Tool, prompts []mcp.Prompt, resources []mcp.Resource, templates []mcp.ResourceTemplate) {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.tools, u.prompts, u.resources, u.templates
}

// description is the one-line purpose shown in catalog hints.
func (u *upstream) description() string {
	if d := u.spec.Config.Description; d != "" {
		return d
	}
	u.mu.RLock()
	defer u.mu.RUnlock()
	return firstLine(u.instructions, 120)
}

// onNotification handles what the upstream sends on its own: list changes
// refresh the catalog; progress and log messages go to the client that asked.
func (u *upstream) onNotification(n mcp.JSONRPCNotification) {
	u.relay.upstreamNotification(u, n)
}

// address returns host and port of an HTTP upstream, for traces.
func (u *upstream) address() (host string, port int) {
	if u.spec.InProcess != nil || u.spec.Config.URL == "" {
		return "", 0
	}
	parsed, err := url.Parse(u.spec.Config.URL)
	if err != nil {
		return "", 0
	}
	h, p, err := net.SplitHostPort(parsed.Host)
	if err != nil {
		h = parsed.Host
		switch parsed.Scheme {
		case "https":
			p = "443"
		default:
			p = "80"
		}
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
