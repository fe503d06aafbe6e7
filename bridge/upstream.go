package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
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
	cmd    *exec.Cmd // stdio only: to kill the whole process group on close
	stderr *tailBuffer
	nextID atomic.Int64

	mu           sync.RWMutex
	tools        []mcp.Tool
	prompts      []mcp.Prompt
	resources    []mcp.Resource
	templates    []mcp.ResourceTemplate
	instructions string
	info         mcp.Implementation
	caps         mcp.ServerCapabilities
	closed       bool
}

func newUpstream(spec Spec, environ []string, r *relay) *upstream {
	return &upstream{spec: spec, environ: environ, relay: r, stderr: newTailBuffer(4096)}
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
		env := make([]string, 0, len(cfg.Env))
		for k, v := range cfg.Env {
			env = append(env, k+"="+v)
		}
		return transport.NewStdioWithOptions(cfg.Command, env, cfg.Args,
			transport.WithCommandFunc(u.command)), nil
	case config.TransportSSE:
		return transport.NewSSE(cfg.URL, transport.WithHeaders(cfg.Headers))
	case config.TransportStreamableHTTP:
		// Continuous listening opens the standalone GET stream, where servers
		// send requests and notifications not tied to one POST (mcp-go sends
		// sampling requests there).
		return transport.NewStreamableHTTP(cfg.URL, transport.WithHTTPHeaders(cfg.Headers), transport.WithContinuousListening())
	}
	return nil, fmt.Errorf("unknown transport %q", cfg.UpstreamTransport())
}

// command builds the child process. It runs in its own process group so
// that closing kills grandchildren too (npx starts node as a child), and
// with a parent-death signal so that it dies even if toolbridge is killed
// with SIGKILL.
func (u *upstream) command(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(append([]string(nil), u.environ...), env...)
	cmd.Dir = u.spec.Config.Cwd
	cmd.Stderr = u.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// A grandchild that keeps stderr open must not hold up Wait forever.
	cmd.WaitDelay = 2 * time.Second
	u.cmd = cmd
	return cmd, nil
}

// abort stops an upstream whose connect failed and returns err with what
// the child left behind: how it ended and the tail of its stderr, which is
// usually where the real reason is. A child that is still running never
// became a session, so it gets no graceful shutdown: its whole process
// group is killed at once, rather than after the seconds a graceful close
// gives a child that ignores its closed stdin.
func (u *upstream) abort(err error) error {
	if u.cmd != nil && u.cmd.Process != nil {
		_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL)
	}
	// Once the transport has waited for the child, its exit status is set
	// and the copy of its stderr is complete.
	if closeErr := u.stop(); u.cmd != nil && !errors.Is(closeErr, transport.ErrChildShutdownTimeout) {
		if how := howEnded(u.cmd.ProcessState); how != "" {
			err = fmt.Errorf("%w; the process %s", err, how)
		}
	}
	if tail := u.stderr.String(); tail != "" {
		err = fmt.Errorf("%w; stderr: %s", err, tail)
	}
	return err
}

// howEnded describes a child's end when the child itself chose it: an exit
// status, or a signal other than the SIGKILL abort sends. It is empty when
// the child never started or abort killed it.
func howEnded(st *os.ProcessState) string {
	if st == nil {
		return ""
	}
	if st.Exited() {
		return fmt.Sprintf("exited with status %d", st.ExitCode())
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() != syscall.SIGKILL {
		return "was killed by " + st.String()
	}
	return ""
}

// close ends the session and, for stdio, stops the whole process group.
func (u *upstream) close() error {
	err := u.stop()
	if errors.Is(err, transport.ErrChildShutdownTimeout) {
		err = nil // stop killed it itself
	}
	return err
}

// stop closes the session once and kills what is left of a stdio server's
// process group. The error is the transport's, unchanged.
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
	if u.cmd != nil && u.cmd.Process != nil {
		// The leader is gone by now; anything left in its group is an
		// orphan-to-be. ESRCH (nothing left) is the normal case.
		_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
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
	id := mcp.NewRequestId("tb-" + strconv.FormatInt(u.nextID.Add(1), 10))
	resp, err := u.tr.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params,
	})
	if err != nil {
		if ctx.Err() != nil {
			u.cancel(id, ctx.Err())
			return nil, ctx.Err()
		}
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
func decodeTool(raw json.RawMessage) (mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, err
	}
	var schemas struct {
		Input  json.RawMessage `json:"inputSchema"`
		Output json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return t, err
	}
	if t.Name == "" {
		return t, errors.New("tool has no name")
	}
	t.InputSchema = mcp.ToolInputSchema{}
	t.RawInputSchema = schemas.Input
	if len(t.RawInputSchema) == 0 || string(t.RawInputSchema) == "null" {
		// A tool must have an input schema; an empty object schema is what
		// the server meant.
		t.RawInputSchema = json.RawMessage(`{"type":"object"}`)
	}
	t.OutputSchema = mcp.ToolOutputSchema{}
	if len(schemas.Output) > 0 && string(schemas.Output) != "null" {
		t.RawOutputSchema = schemas.Output
	}
	return t, nil
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
