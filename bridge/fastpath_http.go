package bridge

// The fast path's HTTP front: see fastpath.go's header for why and when.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// httpFront sits immediately in front of mcp-go's StreamableHTTPServer
// (after every check of httpHandler's chain) and answers the POSTs that
// are one plain 2026-07-28 tools/call itself; every other request goes to
// next, mcp-go, unchanged.
type httpFront struct {
	g    *Gateway
	next http.Handler
	// versions is what mcp-go puts in a request's context for
	// server.SupportedProtocolVersionsFromContext.
	versions []string
	// contextFunc is the HTTP context func mcp-go is given (nil if none).
	contextFunc func(context.Context, *http.Request) context.Context
	// inflight holds the fast calls' cancel funcs by request id, as
	// mcp-go's own map holds those of the 2026-07-28 requests it serves:
	// a 2026-07-28 notifications/cancelled reaches them by id.
	mu       sync.Mutex
	inflight map[string]*context.CancelFunc
}

func newHTTPFront(g *Gateway, next *server.StreamableHTTPServer, contextFunc func(context.Context, *http.Request) context.Context) *httpFront {
	return &httpFront{g: g, next: next, versions: server.FilterSupportedVersions(next), contextFunc: contextFunc,
		inflight: map[string]*context.CancelFunc{}}
}

// ServeHTTP answers r on the fast path when it takes it, else hands it to
// mcp-go.
func (f *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !f.g.fast || r.Body == nil {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	// mcp-go reads the body again: the same bytes, and the same error.
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	if err != nil {
		f.next.ServeHTTP(w, r)
		return
	}
	c, ok := f.takes(r, body)
	if !ok {
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			f.cancelled(w, r, body)
			return
		}
		f.next.ServeHTTP(w, r)
		return
	}
	f.serve(w, r, c)
}

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// takes reads body as a tools/call the fast path answers over HTTP: one
// the stdio fast path takes, of 2026-07-28, with no progress token or log
// level (either would have mcp-go stream notifications on the answer),
// whose HTTP request is the plain case of every check mcp-go's handlePost
// and HandleMessage make: Content-Type application/json, no
// Last-Event-ID, Mcp-Protocol-Version equal to the body's version,
// Mcp-Method and Mcp-Name equal to the body's, and no header bound to
// the tool's parameters. Anything else is mcp-go's, to answer or refuse.
func (f *httpFront) takes(r *http.Request, body []byte) (fastCall, bool) {
	h := r.Header
	if h.Get("Content-Type") != "application/json" || h.Get(mcp.HeaderLastEventID) != "" {
		return fastCall{}, false
	}
	version := h.Get(mcp.HeaderProtocolVersion)
	if !mcp.IsModernProtocol(version) || !slices.Contains(f.versions, version) || h.Get(mcp.HeaderMethod) != string(mcp.MethodToolsCall) {
		return fastCall{}, false
	}
	c, ok := fastCallOf(body)
	if !ok || !c.info.Modern || c.info.ProtocolVersion != version || c.info.LogLevel != "" ||
		c.meta == nil || c.meta.ProgressToken != nil {
		return fastCall{}, false
	}
	// The name as the header carries it: plain, or base64 in mcp-go's
	// wrapping, which mcp.DecodeHeaderValue reads.
	if name, ok := mcp.DecodeHeaderValue(h.Get(mcp.HeaderName)); !ok || name == "" || name != c.name {
		return fastCall{}, false
	}
	if f.bindsHeaders(c.name) {
		return fastCall{}, false
	}
	return c, true
}

// bindsHeaders reports whether the registered tool name has parameters
// bound to headers (x-mcp-header), which mcp-go checks against the
// request's headers; an unknown tool binds none (mcp-go leaves it to the
// handler's not-found answer). A tool's schema is walked once (see
// fastTool), not on every call as mcp-go does.
func (f *httpFront) bindsHeaders(name string) bool {
	t := f.g.fastTool(name)
	return t != nil && t.bindsHeaders
}

// serve answers c as mcp-go's handlePost answers a 2026-07-28 request:
// in the context it builds (a session of the request's own, the
// supported versions, the HTTP context func), and with its answer: JSON
// with the status 2026-07-28 gives a JSON-RPC error, or, if anything was
// sent to the session meanwhile, an event stream.
func (f *httpFront) serve(w http.ResponseWriter, r *http.Request, c fastCall) {
	session := &requestSession{}
	ctx := f.g.srv.WithContext(r.Context(), session)
	ctx = server.WithSupportedProtocolVersions(ctx, f.versions)
	if f.contextFunc != nil {
		ctx = f.contextFunc(ctx, r)
	}
	if !f.g.fastReady(ctx, c) {
		f.next.ServeHTTP(w, r)
		return
	}
	resp := f.call(ctx, c, r.Header)
	if ctx.Err() != nil {
		return // the connection is gone: mcp-go writes nothing then
	}
	_, canStream := w.(http.Flusher)
	if queued := session.queued(); canStream && (session.upgrade.Load() || len(queued) > 0) {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		for _, n := range queued {
			if err := writeEvent(w, n); err != nil {
				f.g.logger.Error("Failed to write SSE event during drain", "err", err)
			}
		}
		if err := writeEvent(w, resp); err != nil {
			f.g.logger.Error("Failed to write final SSE response event", "err", err)
		}
		w.(http.Flusher).Flush()
		return
	}
	status := http.StatusOK
	if e, ok := resp.(mcp.JSONRPCError); ok {
		status = httpStatusOf(e.Error.Code)
	}
	b, err := encodeAnswer(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err == nil {
		_, err = w.Write(b)
	}
	recycleAnswer(b) // net/http has copied it
	if err != nil {
		f.g.logger.Error("Failed to write response", "err", err)
	}
}

// call runs the fast call c in a context of its own, which a
// 2026-07-28 notifications/cancelled naming its id cancels, as mcp-go's
// HandleMessage does. A panic outside the tool handler (which
// recoverToolPanic covers) is net/http's, as it is in mcp-go.
func (f *httpFront) call(ctx context.Context, c fastCall, header http.Header) mcp.JSONRPCMessage {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := fmt.Sprintf("%v", c.id)
	f.mu.Lock()
	f.inflight[key] = &cancel
	f.mu.Unlock()
	defer func() {
		// mcp-go deletes its entry by id when a request ends, even one
		// a later request with the same id replaced.
		f.mu.Lock()
		delete(f.inflight, key)
		f.mu.Unlock()
	}()
	return f.g.serveFastCall(ctx, c, header)
}

// writeEvent is mcp-go's writeSSEEvent.
func writeEvent(w io.Writer, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("failed to marshal data: %w", err)
	}
	if _, err = fmt.Fprintf(w, "event: message\ndata: %s\n\n", b); err != nil {
		return fmt.Errorf("failed to write SSE event: %w", err)
	}
	return nil
}

// httpStatusOf is mcp-go's httpStatusForJSONRPCError: the HTTP status
// 2026-07-28 gives a JSON-RPC error.
func httpStatusOf(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	default:
		return http.StatusOK
	}
}

// cancelled hands body, which names notifications/cancelled, to mcp-go
// and, when it is such a notification and mcp-go has accepted it as a
// 2026-07-28 one (202), cancels the fast call it names, as mcp-go cancels
// a 2026-07-28 request of its own.
func (f *httpFront) cancelled(w http.ResponseWriter, r *http.Request, body []byte) {
	var n struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
		// mcp-go reads requestId from a map: by its exact name.
		Params map[string]any `json:"params"`
	}
	if json.Unmarshal(body, &n) != nil || n.ID != nil || n.Method != string(mcp.MethodNotificationCancelled) ||
		n.Params["requestId"] == nil || !isModern(r.Header, body) {
		f.next.ServeHTTP(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	f.next.ServeHTTP(rec, r)
	if rec.status != http.StatusAccepted {
		return
	}
	key := fmt.Sprintf("%v", n.Params["requestId"])
	f.mu.Lock()
	cancel := f.inflight[key]
	delete(f.inflight, key)
	f.mu.Unlock()
	if cancel != nil {
		(*cancel)()
	}
}

// statusRecorder remembers the status written through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush keeps the writer one that streams, for mcp-go.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// requestSession is the session of one 2026-07-28 request on the fast
// path: what mcp-go's throwaway streamableHttpSession is to the requests
// it serves, with the same methods (TestRequestSessionMatchesMCPGo holds
// the method sets equal), minus its channels and goroutine. It has no id;
// its stores are its own, where mcp-go's are shared by every request
// without an id (nothing sets them for 2026-07-28: that era has no
// logging/setLevel and the gateway sets no session tools).
// Server-initiated requests never reach it: mcp-go refuses them to a
// 2026-07-28 request before asking the session (fastPathFits checks that
// nobody allowed them).
type requestSession struct {
	mu            sync.Mutex
	notifications chan mcp.JSONRPCNotification // made on first use
	upgrade       atomic.Bool
	info          guarded[mcp.Implementation]
	caps          guarded[mcp.ClientCapabilities]
	version       guarded[string]
	level         guarded[mcp.LoggingLevel]
	tools         guarded[map[string]server.ServerTool]
	resources     guarded[map[string]server.ServerResource]
	templates     guarded[map[string]server.ServerResourceTemplate]
	filter        guarded[mcp.SubscriptionFilter]
}

// guarded is one field of a session that the handler and the transport
// may read and write from different goroutines.
type guarded[T any] struct {
	mu sync.Mutex
	v  T
}

func (g *guarded[T]) get() T {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.v
}

func (g *guarded[T]) set(v T) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.v = v
}

// sessionBuffer is the capacity of mcp-go's notification channel.
const sessionBuffer = 100

func (s *requestSession) SessionID() string { return "" }

func (s *requestSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notifications == nil {
		s.notifications = make(chan mcp.JSONRPCNotification, sessionBuffer)
	}
	return s.notifications
}

// queued is what was sent to the session and not yet read.
func (s *requestSession) queued() []mcp.JSONRPCNotification {
	s.mu.Lock()
	ch := s.notifications
	s.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for ch != nil {
		select {
		case n := <-ch:
			out = append(out, n)
		default:
			return out
		}
	}
	return out
}

func (s *requestSession) Initialize()       {}
func (s *requestSession) Initialized() bool { return true }

func (s *requestSession) SetLogLevel(level mcp.LoggingLevel) { s.level.set(level) }

func (s *requestSession) GetLogLevel() mcp.LoggingLevel {
	if level := s.level.get(); level != "" {
		return level
	}
	return mcp.LoggingLevelError // mcp-go's default
}

func (s *requestSession) GetSessionTools() map[string]server.ServerTool { return s.tools.get() }

func (s *requestSession) SetSessionTools(tools map[string]server.ServerTool) { s.tools.set(tools) }

func (s *requestSession) GetSessionResources() map[string]server.ServerResource {
	return s.resources.get()
}

func (s *requestSession) SetSessionResources(resources map[string]server.ServerResource) {
	s.resources.set(resources)
}

func (s *requestSession) GetSessionResourceTemplates() map[string]server.ServerResourceTemplate {
	return s.templates.get()
}

func (s *requestSession) SetSessionResourceTemplates(templates map[string]server.ServerResourceTemplate) {
	s.templates.set(templates)
}

func (s *requestSession) GetClientInfo() mcp.Implementation { return s.info.get() }

func (s *requestSession) SetClientInfo(info mcp.Implementation) { s.info.set(info) }

func (s *requestSession) GetClientCapabilities() mcp.ClientCapabilities { return s.caps.get() }

func (s *requestSession) SetClientCapabilities(caps mcp.ClientCapabilities) { s.caps.set(caps) }

func (s *requestSession) ProtocolVersion() string { return s.version.get() }

func (s *requestSession) SetProtocolVersion(version string) { s.version.set(version) }

func (s *requestSession) UpgradeToSSEWhenReceiveNotification() { s.upgrade.Store(true) }

func (s *requestSession) SetSubscriptionFilter(filter mcp.SubscriptionFilter) { s.filter.set(filter) }

// SubscriptionFilter: the session serves no subscriptions/listen stream,
// so it is unfiltered.
func (s *requestSession) SubscriptionFilter() (mcp.SubscriptionFilter, bool) {
	return s.filter.get(), false
}

// errServerInitiated is what the session answers a server-initiated
// request with; mcp-go refuses those to a 2026-07-28 request first.
var errServerInitiated = fmt.Errorf("server-initiated request on a 2026-07-28 request: %w", server.ErrServerInitiatedRequestUnsupported)

func (s *requestSession) RequestSampling(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errServerInitiated
}

func (s *requestSession) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return nil, errServerInitiated
}

func (s *requestSession) RequestElicitation(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errServerInitiated
}
