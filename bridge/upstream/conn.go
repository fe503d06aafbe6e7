package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/config"
)

// Conn is the connection to one upstream MCP server. What it lists is
// replaced as a whole on refresh, so readers never see a half-updated list.
type Conn struct {
	spec    Spec
	environ []string
	relay   *Relay
	// version is toolbridge's own, sent in initialize.
	version string
	// logger receives the HTTP transports' own messages (mcp-go's
	// default would be the process-wide slog.Default).
	logger *slog.Logger

	client *client.Client
	tr     transport.Interface
	// auth is a remote server's OAuth client (nil for stdio and
	// in-process servers): it authorizes every HTTP request.
	auth *oauth.Client
	// httpTr is an HTTP server's own connection pool (nil for stdio and
	// in-process servers), closed with the session.
	httpTr *http.Transport
	child  *child // stdio only: the server's process
	stderr *tailBuffer
	nextID atomic.Int64
	// answered is set once the server has answered initialize.
	answered atomic.Bool
	// maxLine bounds one message on a stdio server's stdout or in an HTTP
	// server's response (the config's max_result_bytes); 0 means
	// defaultMaxLine.
	maxLine int64
	// maxTools bounds how many tools the server adds to the catalog (the
	// config's max_tools_per_server or the server's max_tools); 0 means
	// no bound.
	maxTools int
	// inflight counts requests awaiting an answer: a reload that replaces
	// this upstream closes it only after they end.
	inflight Activity
	// calls is the client calls in flight on this upstream, for the
	// relay; guarded by relay.mu.
	calls callList
	// host and port are an HTTP server's address, parsed once from its
	// URL: every call's span names it.
	host string
	port int

	mu           sync.RWMutex
	tools        []mcp.Tool
	skippedTools []string // why tools of the last tools/list were left out
	// droppedTools is how many tools the last tools/list offered past
	// maxTools (at least: pages past the bound are not fetched).
	droppedTools int
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

func newConn(spec Spec, environ []string, r *Relay, version string, logger *slog.Logger) *Conn {
	u := &Conn{spec: spec, environ: environ, relay: r, version: version, logger: logger, stderr: newTailBuffer(4096), lostCh: make(chan struct{})}
	u.host, u.port = address(spec)
	return u
}

// Name is the server's name in the config.
func (u *Conn) Name() string { return u.spec.Name }

// Spec is how the server was reached.
func (u *Conn) Spec() Spec { return u.spec }

// PID is a stdio server's process id, 0 for other transports.
func (u *Conn) PID() int {
	if u.child == nil {
		return 0
	}
	return u.child.pid()
}

// MessageLimit is the bound on one message from the server, fixed when the
// connection was made (max_result_bytes).
func (u *Conn) MessageLimit() int64 {
	if u.maxLine <= 0 {
		return defaultMaxLine
	}
	return u.maxLine
}

// markLost records that the connection is gone, unless the gateway itself
// closed it.
func (u *Conn) markLost(why string) {
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
func (u *Conn) watch() {
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
func (u *Conn) connect(ctx, life context.Context) error {
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
	init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge", Version: u.version}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer to initialize: %w", ctx.Err())
		}
		return fmt.Errorf("initializing: %w", err)
	}
	u.answered.Store(true)
	u.mu.Lock()
	u.instructions = res.Instructions
	u.info = res.ServerInfo
	u.caps = res.Capabilities
	u.mu.Unlock()
	return u.refreshAll(ctx)
}

func (u *Conn) newTransport() (transport.Interface, error) {
	s := u.spec
	if s.InProcess != nil {
		return newInProcessTransport(s.InProcess, peer{u}), nil
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
		// plain pipes the gateway keeps the process and the read bound, and
		// reads and writes the messages itself (see StdioTransport).
		tr := NewStdioTransport(c.limitedStdout(), c.transportStdin())
		if c.stdout.SetReadDeadline(time.Time{}) == nil { // a pipe in Go's poller
			tr.LeadWith(c.stdout.SetReadDeadline)
		}
		return tr, nil
	case config.TransportSSE:
		return transport.NewSSE(cfg.URL, transport.WithHeaders(cfg.Headers), transport.WithHTTPClient(u.httpClient()),
			transport.WithSSELogger(u.logger))
	case config.TransportStreamableHTTP:
		// Continuous listening opens the standalone GET stream, where servers
		// send requests and notifications not tied to one POST (mcp-go sends
		// sampling requests there).
		tr, err := transport.NewStreamableHTTP(cfg.URL, transport.WithHTTPHeaders(cfg.Headers), transport.WithContinuousListening(),
			transport.WithHTTPBasicClient(u.httpClient()), transport.WithHTTPLogger(u.logger))
		if err != nil {
			return nil, err
		}
		return httpTransport{tr}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", cfg.UpstreamTransport())
}

// abort stops an upstream whose connect failed and returns err with what
// the child left behind: how it ended and the tail of its stderr, which is
// usually where the real reason is. A child that is still running never
// became a session, so it gets no graceful shutdown: its whole process
// group is killed at once.
func (u *Conn) abort(err error) error {
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

// Closed reports whether close (or abort) has been called.
func (u *Conn) Closed() bool {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.closed
}

// Close ends the session and, for stdio, stops the process and its group.
func (u *Conn) Close() error { return u.stop() }

// stopGrace is how long a stdio server gets to exit after its stdin
// closes, and again after SIGTERM.
const stopGrace = 2 * time.Second

// stop closes the session once and, for stdio, stops the process.
func (u *Conn) stop() error {
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
	if u.httpTr != nil {
		// After the session's end (its DELETE): nothing else would close
		// the connections the transport keeps.
		u.httpTr.CloseIdleConnections()
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
func (u *Conn) explain(err error) error {
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
func (u *Conn) lost() string {
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

// requestIDPrefix starts the id of every request the gateway sends
// upstream, so that an answer can be told from the server's own requests.
const requestIDPrefix = "tb-"

// tooLargeCode marks the error response the gateway puts in place of an
// answer longer than max_result_bytes. It is in the range JSON-RPC leaves
// to implementations. (A server that sends it itself gets its error
// reported as a result too large, which misleads nobody for long.)
const tooLargeCode = -32097

// Request sends one JSON-RPC request and returns the raw result. A context
// that ends first sends notifications/cancelled upstream, as the MCP spec
// asks, so the server can stop working on it.
func (u *Conn) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	u.mu.RLock()
	closed := u.closed
	u.mu.RUnlock()
	if closed || u.tr == nil {
		return nil, ErrUnavailable
	}
	u.inflight.Begin()
	defer u.inflight.End()
	id := mcp.NewRequestId(requestIDPrefix + strconv.FormatInt(u.nextID.Add(1), 10))
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
		if IsNeedsLogin(err) {
			// The token is gone, not the connection: after a login the
			// next request carries the new token.
			return nil, err
		}
		err = u.explain(err)
		// A request that fails below JSON-RPC means the connection is
		// gone: the supervisor reconnects.
		u.markLost(err.Error())
		return nil, err
	}
	if resp.Error != nil && resp.Error.Code == tooLargeCode {
		// Put in place of an answer too long by the stdout bound (see
		// limitedStdout).
		return nil, &TooLargeError{Limit: u.MessageLimit()}
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp.Result, nil
}

func (u *Conn) cancel(id mcp.RequestId, reason error) {
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

// Snapshot returns the upstream's current lists; the slices are never
// modified after they are stored, so sharing them is safe.
func (u *Conn) Snapshot() (tools []mcp.Tool, prompts []mcp.Prompt, resources []mcp.Resource, templates []mcp.ResourceTemplate) {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.tools, u.prompts, u.resources, u.templates
}

// Description is the one-line purpose shown in catalog hints.
func (u *Conn) Description() string {
	if d := u.spec.Config.Description; d != "" {
		return d
	}
	u.mu.RLock()
	defer u.mu.RUnlock()
	return firstLine(u.instructions, 120)
}

// onNotification handles what the upstream sends on its own: list changes
// refresh the catalog; progress and log messages go to the client that asked.
func (u *Conn) onNotification(n mcp.JSONRPCNotification) {
	u.relay.upstreamNotification(u, n)
}

// Address returns host and port of an HTTP upstream, for traces.
func (u *Conn) Address() (host string, port int) { return u.host, u.port }

// address is host and port of an HTTP server's URL ("", 0 for others).
func address(spec Spec) (host string, port int) {
	if spec.InProcess != nil || spec.Config.URL == "" {
		return "", 0
	}
	parsed, err := url.Parse(spec.Config.URL)
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
