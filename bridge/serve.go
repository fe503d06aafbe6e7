package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/ui"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// ServeStdio serves one client over in and out (the process's stdin and
// stdout) until in closes or ctx ends. Nothing but JSON-RPC is ever written
// to out: progress and logs go to stderr. When ctx ends, new tool calls are
// refused and the ones in flight get serve.shutdown_grace to finish; their
// answers are written before ServeStdio returns. When in closes, the tool
// calls the client sent get the same grace: a client that writes its
// requests and closes stdin still reads the answers.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, errLog io.Writer) error {
	g.transport.Store(config.ServeStdio)
	s := server.NewStdioServer(g.srv)
	if errLog == nil {
		errLog = io.Discard
	}
	logger := log.New(errLog, "toolbridge: ", 0)
	s.SetErrorLogger(logger)
	w := &lockedWriter{w: out}
	out = w
	limit := g.settings().cfg.Serve.MaxBodyBytes
	if limit <= 0 {
		limit = math.MaxInt64 // no bound: lines are read whole however long
	}
	lines := upstream.NewBoundedLines(in, limit, func(prefix []byte) ([]byte, error) {
		logger.Printf("dropped a message longer than serve.max_body_bytes (%d bytes)", limit)
		_, _ = w.Write(tooLargeAnswer(upstream.LeadingID(prefix), limit))
		return nil, nil
	})
	calls := newPendingCalls()
	w.sent, w.answered = calls.answered, calls.answeredID
	// mcp-go's Listen cancels every request in flight the moment it reads
	// the end of its input, so the end is held back (see heldEOF) until
	// the calls read before it have had their grace.
	held := newHeldEOF()
	defer held.release()
	// The stdio front (fastpath.go) reads every line first: it refuses
	// what the guard refuses, counts the tool calls pending, answers the
	// tools/call lines the fast path takes, and hands mcp-go the rest.
	front := newStdioFront(g, w, logger)
	front.read = calls.readParsed
	front.buffered = lines.Buffered
	s.SetContextFunc(front.contextFunc)
	toListen, fromFront := io.Pipe()
	go front.run(lines.Line, held, fromFront)
	// Listen cancels the calls in flight as soon as its context ends, so it
	// gets a context of its own, ended only after the grace period.
	listenCtx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListening()
	done := make(chan error, 1)
	go func() {
		err := s.Listen(listenCtx, toListen, out)
		// The fast calls end with mcp-go's, and the front stops reading.
		_ = toListen.CloseWithError(io.ErrClosedPipe)
		front.stop()
		done <- err
	}()
	var err error
	select {
	case err = <-done: // Listen ended by itself: a read or write error
	case <-held.eof: // the client closed stdin
		// Nothing new can arrive, so nothing is refused: every tool call
		// read before the end, started or still queued, gets the grace.
		defer g.endDrain()
		g.await(g.settings().cfg.Serve.ShutdownGrace, &calls.pending)
		held.release()
		err = <-done
	case <-ctx.Done():
		defer g.endDrain()
		g.drain(g.settings().cfg.Serve.ShutdownGrace, &g.calls)
		stopListening()
		err = <-done // Listen waits for its workers to write their answers
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// drain refuses new tool calls, waits up to grace for the work that
// running counts to end, and reports whether it all ended. What is still
// running then is cancelled by the caller (stopping the transport, then
// Close). The caller resets g.draining once its transport has stopped: the
// gateway may be served again (tests and benchmarks serve one gateway many
// times).
//
// The tool calls still running then are cut (see cutoff): each answers at
// once with an isError result, and drain gives those answers flushGrace to
// be handed to the transport.
func (g *Gateway) drain(grace time.Duration, running *upstream.Activity) bool {
	g.draining.Store(true)
	return g.await(grace, running)
}

// await is drain without refusing new calls, for when none can arrive:
// it waits up to grace for running to end, then cuts the tool calls
// still running and gives their answers flushGrace.
func (g *Gateway) await(grace time.Duration, running *upstream.Activity) bool {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if running.Wait(ctx) == nil {
		return true
	}
	g.logger.Warn("shutdown grace period over; cancelling what is still running", "grace", grace, "running", running.Running())
	g.cutoff.cut(grace)
	answered, cancelAnswered := context.WithTimeout(context.Background(), flushGrace)
	defer cancelAnswered()
	return running.Wait(answered) == nil
}

// endDrain lets the gateway serve again after a drain.
func (g *Gateway) endDrain() {
	g.cutoff.reset()
	g.draining.Store(false)
}

// HTTPHandler returns the streamable HTTP transport at /mcp plus the health
// endpoints: GET /healthz (the process is up) and GET /readyz (which
// upstreams are connected, and how many tools trust holds, as JSON; 503
// while none is connected or while draining; to a caller without
// credentials where they are needed, only ready and draining).
func (g *Gateway) HTTPHandler() http.Handler {
	h, _ := g.httpHandler()
	return h
}

// readyz answers GET /readyz: whether the gateway is ready (200, else 503
// while no upstream is connected) and, as JSON, the upstreams' states, the
// tools trust holds and the config errors only the servers' lists reveal.
//
// Under serve.oauth what it shows depends on the caller, since it names
// the upstreams. A request without an Authorization header (a load
// balancer's or kubelet's probe) gets only {"ready": bool} and the status
// code: what a probe needs, and nothing of the catalog. A request with a
// token goes through the same checks as /mcp (401, 403) and sees its own
// part: the servers its access rule reaches, and their held tools; the
// config errors only when no rule restricts it.
func (g *Gateway) readyz(protect func(http.Handler) http.Handler) http.Handler {
	full := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.writeReadyz(r.Context(), w, false)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A probe without credentials (kubelet, a balancer's health
		// check: neither can send a token from a secret store) gets the
		// status and whether the gateway drains, not the upstreams, held
		// tools or config errors; with credentials they are checked as
		// on /mcp.
		live := g.settings()
		if r.Header.Get("Authorization") == "" && (live.cfg.Serve.AuthToken != "" || live.tokens != nil) {
			g.writeReadyz(r.Context(), w, true)
			return
		}
		full.ServeHTTP(w, r)
	})
}

// writeReadyz writes /readyz's answer; probe writes only whether the
// gateway is ready.
func (g *Gateway) writeReadyz(ctx context.Context, w http.ResponseWriter, probe bool) {
	statuses := g.pool.Statuses()
	ready := false
	for _, s := range statuses {
		ready = ready || s.Connected
	}
	withdrawn := g.withdrawn.Load()
	ready = ready && !withdrawn
	w.Header().Set("Content-Type", "application/json")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	body := map[string]any{"ready": ready}
	if withdrawn {
		// Stopping (SIGTERM, serve.drain_delay): the balancer is to send
		// new work elsewhere; what arrives meanwhile is served.
		body["draining"] = true
	}
	if probe {
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	gr := g.grant(ctx)
	mine := statuses[:0:0]
	for _, s := range statuses {
		if gr.AllowsServer(s.Name) {
			mine = append(mine, s)
		}
	}
	body["servers"] = mine
	if held := g.catalogFor(ctx).Held(); held != nil {
		// Quarantined tools are missing from every list and search:
		// say so where an operator looks, with the command to review.
		body["held"] = held
	}
	if problems := g.Catalog().OverrideProblems; len(problems) > 0 && gr.Everything() {
		// Config errors that only the servers' lists reveal (see
		// applyOverrides): where an operator looks, not only in a log.
		// They name servers and tools of the whole config, so only a
		// caller no access rule restricts sees them.
		body["config_errors"] = problems
	}
	_ = json.NewEncoder(w).Encode(body)
}

// httpHandler is HTTPHandler, plus a function that ends every session's
// GET stream, for shutdown.
func (g *Gateway) httpHandler() (http.Handler, func(context.Context)) {
	g.transport.Store(config.ServeHTTP)
	serve := g.settings().cfg.Serve
	var sessions sessionStore
	var contextFunc func(context.Context, *http.Request) context.Context
	opts := []server.StreamableHTTPOption{server.WithEndpointPath("/mcp"),
		server.WithStreamableHTTPLogger(transportLogger(g.logger)),
		// guardHTTP checks the Host header on every route, /mcp included,
		// and honours serve.allowed_hosts. mcp-go's own check knows no
		// allowed names: behind a load balancer on the same machine
		// (replicas on 127.0.0.1, the clients' Host passed through) it
		// refused every session.
		server.WithDisableLocalhostProtection(true)}
	if g.replicaSessions != nil {
		sessions = g.replicaSessions
		contextFunc = g.applySessionState
		opts = append(opts, server.WithHTTPContextFunc(contextFunc))
	} else {
		sessions = newSessionTable(serve.SessionIdleTimeout, serve.MaxSessions, nil)
	}
	mcpHandler := server.NewStreamableHTTPServer(g.srv, append(opts, server.WithSessionIdManagerResolver(sessionResolver{table: sessions}))...)
	g.startSharedSessions(mcpHandler)
	if t, ok := sessions.(*sessionTable); ok {
		t.forget = endSession(mcpHandler)
	}
	mux := http.NewServeMux()
	protect := g.protectResource(mux)
	// The tools/call fast path (fastpath_http.go) is the last step before
	// mcp-go: every check above applies to what it answers.
	fast := newHTTPFront(g, mcpHandler, contextFunc)
	mux.Handle("/mcp", g.countRequests(protect(guardSessions(sessions, fast))))
	// The status page, behind the same checks as /mcp (it names the
	// upstreams and their tools: with serve.oauth it needs a token too).
	page := protect(g.teamOnly(g.uiHandler()))
	mux.Handle(ui.Prefix, page)
	mux.Handle("/ui", page)
	g.mountMetrics(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", g.readyz(protect))
	return guardHTTP(serve, mux), mcpHandler.CloseSessions
}

// countRequests counts the requests being answered (a POST carries a
// client's request; a GET is a session's long-lived stream, which shutdown
// simply closes), so that shutdown can wait for their answers.
func (g *Gateway) countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			g.requests.Begin()
			defer g.requests.End()
		}
		next.ServeHTTP(w, r)
	})
}

// ErrTerminated is the cause (context.Cause) of a context ended because a
// supervisor asked the process to stop (SIGTERM from Kubernetes, systemd,
// a rolling deploy): ServeHTTP then drains from its load balancer first.
var ErrTerminated = errors.New("terminated")

// ServeHTTP serves streamable HTTP on ln until ctx ends, then shuts down:
// it stops accepting connections, refuses new tool calls, gives the
// requests in flight up to serve.shutdown_grace to be answered, and closes
// what is left (the sessions' streams among it).
//
// When ctx ended with ErrTerminated as its cause, shutdown waits
// serve.drain_delay first, answering /readyz with 503 and serving every
// other request as before: a balancer that checks /readyz takes the
// replica out of rotation while its port is still open, so requests sent
// meanwhile are answered instead of refused.
func (g *Gateway) ServeHTTP(ctx context.Context, ln net.Listener) error {
	handler, closeSessions := g.httpHandler()
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Bodies are bounded per request (serve.body_timeout, see
		// guardHTTP), not by ReadTimeout, which would also cut off a
		// session's long-lived GET stream. IdleTimeout ends kept-alive
		// connections nobody uses: without it they are held for ever.
		IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	srv.RegisterOnShutdown(g.activity.EndStreams) // the status page's streams never go idle
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	defer g.withdrawn.Store(false) // the gateway may be served again (tests)
	if delay := g.settings().cfg.Serve.DrainDelay; delay > 0 && errors.Is(context.Cause(ctx), ErrTerminated) {
		g.withdrawn.Store(true)
		g.logger.Warn("stopping: /readyz answers 503 so the load balancer drains this replica; still serving until the drain delay ends", "drain_delay", delay)
		select {
		case <-time.After(delay):
		case err := <-errc:
			return fmt.Errorf("serving HTTP: %w", err)
		}
	}
	// Shutdown closes the listener at once, then waits for every connection
	// to go idle. A connection goes idle once its answer is written out,
	// which is after its handler returned (and the drain saw it end), so
	// closing connections as soon as the drain ends would cut off answers
	// not yet written. A session's GET stream never goes idle by itself: it
	// is ended once the requests in flight are answered. Tool calls still
	// running after the grace period are cut short and answer with an
	// isError result; flushGrace bounds the writing of those answers, and
	// Close cuts off whatever is left after it.
	grace := g.settings().cfg.Serve.ShutdownGrace
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace+flushGrace)
	defer cancel()
	shut := make(chan struct{})
	go func() {
		_ = srv.Shutdown(shutdownCtx)
		close(shut)
	}()
	defer g.endDrain()
	if !g.drain(grace, &g.requests) {
		// Even the calls cut short did not answer in time.
		cancel()
	}
	closeSessions(shutdownCtx)
	<-shut
	_ = srv.Close()
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", err)
	}
	return nil
}

// flushGrace is how long shutdown waits, after the grace period for calls,
// for answers to be written out to the clients.
const flushGrace = time.Second

// transportLogger is the logger for mcp-go's transports. They log routine
// events at Info (the streamable HTTP server logs "Delivered sampling
// response" for every sampling, elicitation and roots answer), which for a
// gateway is debug detail; warnings and errors keep their level. They
// also log session ids ("session", "sessionID"), which are credentials:
// those are logged as trace.SessionRef gives them.
func transportLogger(l *slog.Logger) *slog.Logger {
	return slog.New(demoteInfo{l.Handler()})
}

// demoteInfo logs Info records at Debug and session ids as their hash.
type demoteInfo struct{ slog.Handler }

func (h demoteInfo) Enabled(ctx context.Context, level slog.Level) bool {
	return h.Handler.Enabled(ctx, demoted(level))
}

func (h demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, demoted(r.Level), r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(hashSession(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h demoteInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	hashed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		hashed[i] = hashSession(a)
	}
	return demoteInfo{h.Handler.WithAttrs(hashed)}
}

// hashSession replaces a session id attribute's value with its hash.
func hashSession(a slog.Attr) slog.Attr {
	switch strings.ToLower(a.Key) {
	case "session", "sessionid", "session_id", "mcp-session-id":
		return slog.String(a.Key, trace.SessionRef(a.Value.String()))
	}
	return a
}

func (h demoteInfo) WithGroup(name string) slog.Handler { return demoteInfo{h.Handler.WithGroup(name)} }

func demoted(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}
