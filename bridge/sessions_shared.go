package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// Sessions shared by the replicas of a team's gateway (redis.url).
//
// The session table lives in Redis (state.Sessions; its doc says why a
// shared table rather than a signed id), and so does what the gateway
// keeps per session that another replica needs to serve it:
//
//   - the client's capabilities, client info and protocol version from
//     initialize (mcp-go keeps them on its in-process session object, and
//     a replica that did not see the initialize serves the request with a
//     fresh one: without them it would think the client cannot elicit,
//     sample or list roots);
//   - the log level from logging/setLevel (mcp-go keeps it per process);
//   - the tools tool_search revealed (disclosure: activate);
//   - the resource subscriptions.
//
// The guard fetches all of it in the one round trip that checks the
// session (sessionState, carried in the request's context), and
// applySessionState puts the client's part on mcp-go's session before the
// request is handled. Writes go to Redis when they happen (initialize,
// setLevel, tool_search, subscribe).
//
// What stays with one replica is the GET stream and what rides on it
// (server-to-client requests, list_changed). A client's answer to a
// sampling or elicitation request must reach the replica whose stream
// sent the request: the load balancer sticks a session to one replica
// (HAProxy: stick on the Mcp-Session-Id header, see docs/team.md), and
// when that replica dies the client's next request and its new GET stream
// land on another, which finds the session in Redis and carries on.

// Per-session fields in the shared table.
const (
	fieldCaps       = "caps"   // mcp.ClientCapabilities, JSON
	fieldClientInfo = "client" // mcp.Implementation, JSON
	fieldVersion    = "ver"    // negotiated protocol version
	fieldLevel      = "level"  // logging/setLevel
	fieldReveal     = "reveal" // canonical ids tool_search revealed, oldest first, JSON
	fieldSubs       = "subs"   // subscribed resource URIs, JSON
)

// sessionState is what the shared table keeps for one session, as the
// guard fetched it when the request began. Writes during the request
// update it, so that the rest of the request sees them.
type sessionState struct {
	id string
	// ctx is the request's context, ended when the session is found ended
	// on another replica while the request runs (a GET stream can stay
	// open for hours; it closes, and the client opens a new session).
	ctx context.Context

	mu     sync.Mutex
	fields map[string]string
}

func (s *sessionState) get(field string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fields[field]
}

func (s *sessionState) list(field string) []string {
	var out []string
	if v := s.get(field); v != "" {
		_ = json.Unmarshal([]byte(v), &out) // a field we did not write reads as empty
	}
	return out
}

func (s *sessionState) set(field, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fields == nil {
		s.fields = map[string]string{}
	}
	s.fields[field] = value
}

type sessionStateKey struct{}

func withSessionState(ctx context.Context, st *sessionState) context.Context {
	return context.WithValue(ctx, sessionStateKey{}, st)
}

// sessionStateFrom is the shared state of the request's session, nil when
// the session is not in the shared table (no redis.url, stdio, 2026-07-28).
func sessionStateFrom(ctx context.Context) *sessionState {
	st, _ := ctx.Value(sessionStateKey{}).(*sessionState)
	return st
}

// localOnlyKey marks a DELETE the gateway sends itself to clear what
// mcp-go keeps for a session in this process, without ending the session
// for the other replicas.
type localOnlyKey struct{}

// sharedSessions is the sessionStore of a gateway with redis.url.
type sharedSessions struct {
	tab  *state.Sessions
	idle time.Duration
	log  *slog.Logger

	// endLocal clears what mcp-go keeps in this process for a session (set
	// by httpHandler, which has the mcp-go handler).
	endLocal func(id string)

	mu sync.Mutex
	// running counts the requests running here per session.
	running map[string]int
	// leveled are the sessions of other replicas whose log level this
	// process set on mcp-go's per-process table: cleared when their last
	// request here ends, or that table would grow with every session that
	// ever passed by.
	leveled map[string]bool
	// registered are the sessions mcp-go registered in this process (an
	// initialize or a GET stream here): cleared when the session is found
	// ended (see sweep).
	registered map[string]bool
	sweeping   bool // the sweep runs

	// checkEvery bounds how long a request running here (a GET stream)
	// outlives its session once another replica ended it.
	checkEvery time.Duration
}

// endedSessionCheck is how often, at most, a long request checks that its
// session still exists in the shared table.
const endedSessionCheck = 30 * time.Second

// errSessionEndedElsewhere ends a request whose session another replica
// ended (a DELETE, the idle timeout, max_sessions) while it ran.
var errSessionEndedElsewhere = errors.New("the session ended on another replica")

func newSharedSessions(tab *state.Sessions, idle time.Duration, log *slog.Logger) *sharedSessions {
	return &sharedSessions{tab: tab, idle: idle, log: log, endLocal: func(string) {},
		running: map[string]int{}, leveled: map[string]bool{}, registered: map[string]bool{},
		checkEvery: endedSessionCheck}
}

// sharedTimeout bounds a Redis round trip made outside a request's
// context (the store's own timeouts bound it too).
const sharedTimeout = 5 * time.Second

func newSessionID() string { return "mcp-session-" + rand.Text() }

// open creates the session in Redis before mcp-go generates its id, so
// that an initialize fails with a clear error, not a session id that no
// replica knows, when Redis is down.
func (s *sharedSessions) open(ctx context.Context, principal string) (*reservation, func(), error) {
	id := newSessionID()
	evicted, err := s.tab.Create(ctx, id, principal)
	if err != nil {
		return nil, nil, err
	}
	if evicted > 0 {
		s.log.Debug("serve.max_sessions reached: ended the least recently used sessions", "evicted", evicted)
	}
	return &reservation{id: id}, func() {}, nil
}

func (s *sharedSessions) issue(principal string, res *reservation) string {
	if res != nil && res.id != "" {
		return res.id
	}
	// mcp-go asked for an id outside an initialize the guard saw: create
	// it now; if Redis refuses, the id is simply unknown (404).
	id := newSessionID()
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	_, _ = s.tab.Create(ctx, id, principal)
	return id
}

func (s *sharedSessions) enter(ctx context.Context, id, principal string) (*sessionState, func(), error) {
	fields, err := s.tab.Touch(ctx, id, principal)
	switch {
	case errors.Is(err, state.ErrNoSession):
		s.forgetIfEnded(id)
		return nil, nil, errNoSession
	case err != nil:
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	st := &sessionState{id: id, fields: fields, ctx: ctx}
	s.mu.Lock()
	s.running[id]++
	s.mu.Unlock()
	// A long request or a GET stream keeps its session alive: the idle
	// timeout counts from the last request's start, so refresh it while
	// one runs. The same touch finds a session that another replica ended
	// meanwhile, and ends the request: without it, a GET stream stayed
	// open on a session no replica would accept any more.
	every := s.checkEvery
	if s.idle > 0 {
		every = min(every, max(s.idle/3, 10*time.Millisecond))
	}
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
	)
	refresh := func() {
		rctx, rcancel := context.WithTimeout(context.Background(), sharedTimeout)
		_, err := s.tab.Touch(rctx, id, principal)
		rcancel()
		if errors.Is(err, state.ErrNoSession) {
			cancel(errSessionEndedElsewhere)
			return
		}
		mu.Lock()
		if !stopped {
			timer.Reset(every)
		}
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(every, refresh)
	mu.Unlock()
	return st, func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		cancel(nil)
		s.leave(id)
	}, nil
}

// leave ends a request on session id here; the last one clears the log
// level this process set for a session of another replica.
func (s *sharedSessions) leave(id string) {
	s.mu.Lock()
	s.running[id]--
	clear := false
	if s.running[id] <= 0 {
		delete(s.running, id)
		clear = s.leveled[id] && !s.registered[id]
		delete(s.leveled, id)
	}
	s.mu.Unlock()
	if clear {
		s.endLocal(id)
	}
}

func (s *sharedSessions) valid(id, principal string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	_, err := s.tab.Touch(ctx, id, principal)
	return err == nil
}

func (s *sharedSessions) end(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := s.tab.End(ctx, id); err != nil {
		s.log.Warn("ending a shared session", "session", trace.SessionRef(id), "error", err)
	}
}

// registeredHere and unregisteredHere follow mcp-go's session registry in
// this process (its OnRegisterSession and OnUnregisterSession hooks).
func (s *sharedSessions) registeredHere(id string) {
	s.mu.Lock()
	s.registered[id] = true
	s.mu.Unlock()
}

func (s *sharedSessions) unregisteredHere(id string) {
	s.mu.Lock()
	delete(s.registered, id)
	s.mu.Unlock()
}

// forgetIfEnded clears what this process keeps for a session it holds
// that the shared table no longer has (ended on another replica, expired,
// evicted).
func (s *sharedSessions) forgetIfEnded(id string) {
	s.mu.Lock()
	here := s.registered[id] && s.running[id] == 0
	s.mu.Unlock()
	if !here {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if ok, err := s.tab.Exists(ctx, id); err == nil && !ok {
		s.endLocal(id)
	}
}

// sweep lets go of the sessions registered here that ended elsewhere,
// every interval until ctx ends: a client whose session was deleted
// through another replica may never come back to this one.
func (s *sharedSessions) sweep(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		s.mu.Lock()
		ids := make([]string, 0, len(s.registered))
		for id := range s.registered {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		for _, id := range ids {
			s.forgetIfEnded(id)
		}
	}
}

// refuseSession answers a request whose session the store refused: 404
// for a session that does not exist for this caller (the client
// initializes again), 503 with a JSON-RPC error when the shared table
// cannot be reached (the client retries; requests on 2026-07-28 need no
// session and still work), 503 when max_sessions are busy.
func refuseSession(w http.ResponseWriter, body []byte, err error) {
	switch {
	case errors.Is(err, state.ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		writeRPCError(w, http.StatusServiceUnavailable, requestID(body), mcp.INTERNAL_ERROR,
			"toolbridge: sessions are unavailable because the shared state store (Redis) cannot be reached; "+
				"retry later (requests on protocol 2026-07-28 need no session and are still served)")
	case errors.Is(err, errTooManySessions):
		http.Error(w, "toolbridge: "+err.Error(), http.StatusServiceUnavailable)
	default:
		// 404 tells the client to initialize a new session.
		http.Error(w, "toolbridge: "+err.Error()+": initialize a new session", http.StatusNotFound)
	}
}

// requestID is the JSON-RPC id of a request body, nil if it has none.
func requestID(body []byte) any {
	var msg struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return nil
	}
	return msg.ID
}

// applySessionState puts what the shared table keeps of the client on the
// session mcp-go serves this request with: on a replica that did not see
// the initialize, that session is a fresh one that knows nothing of it.
// It is mcp-go's HTTPContextFunc, which runs after the session is in ctx.
func (g *Gateway) applySessionState(ctx context.Context, _ *http.Request) context.Context {
	st := sessionStateFrom(ctx)
	session := server.ClientSessionFromContext(ctx)
	if st == nil || session == nil || session.SessionID() != st.id {
		return ctx
	}
	if ci, ok := session.(server.SessionWithClientInfo); ok {
		var caps mcp.ClientCapabilities
		if v := st.get(fieldCaps); v != "" && json.Unmarshal([]byte(v), &caps) == nil {
			ci.SetClientCapabilities(caps)
		}
		var info mcp.Implementation
		if v := st.get(fieldClientInfo); v != "" && json.Unmarshal([]byte(v), &info) == nil {
			ci.SetClientInfo(info)
		}
	}
	if v := st.get(fieldVersion); v != "" {
		if pv, ok := session.(interface{ SetProtocolVersion(string) }); ok {
			pv.SetProtocolVersion(v)
		}
	}
	if v := mcp.LoggingLevel(st.get(fieldLevel)); v != "" {
		if l, ok := session.(server.SessionWithLogging); ok && l.GetLogLevel() != v {
			l.SetLogLevel(v)
			g.replicaSessions.mu.Lock()
			g.replicaSessions.leveled[st.id] = true
			g.replicaSessions.mu.Unlock()
		}
	}
	return ctx
}

// setShared stores fields of the request's session, when it is a shared
// one; a failure is logged (the store logs an outage once), and the
// request goes on: what it changed is then known to this request only.
func (g *Gateway) setShared(ctx context.Context, id string, fields map[string]string) {
	if g.replicaSessions == nil {
		return
	}
	if st := sessionStateFrom(ctx); st != nil && st.id == id {
		for k, v := range fields {
			st.set(k, v)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	if err := g.replicaSessions.tab.Set(sctx, id, fields); err != nil && !errors.Is(err, state.ErrNoSession) && !errors.Is(err, state.ErrUnavailable) {
		g.logger.Warn("storing a shared session's state", "session", trace.SessionRef(id), "error", err)
	}
}

// shareInitialize stores what initialize told of the client, for the
// replicas that serve the session's later requests.
func (g *Gateway) shareInitialize(ctx context.Context, _ any, _ *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	if g.replicaSessions == nil || g.downstream() != config.ServeHTTP {
		return
	}
	session := server.ClientSessionFromContext(ctx)
	ci, ok := session.(server.SessionWithClientInfo)
	if !ok || session.SessionID() == "" {
		return
	}
	fields := map[string]string{}
	if b, err := json.Marshal(ci.GetClientCapabilities()); err == nil {
		fields[fieldCaps] = string(b)
	}
	if b, err := json.Marshal(ci.GetClientInfo()); err == nil {
		fields[fieldClientInfo] = string(b)
	}
	if v := server.RequestProtocolVersion(ctx); v != "" {
		fields[fieldVersion] = v
	}
	g.setShared(ctx, session.SessionID(), fields)
}

// shareLevel stores a session's logging/setLevel.
func (g *Gateway) shareLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	if st := sessionStateFrom(ctx); st != nil {
		g.setShared(ctx, st.id, map[string]string{fieldLevel: string(req.Params.Level)})
	}
}

// shareSubscription adds uri to, or removes it from, the session's shared
// subscriptions, so that the replica that takes over its stream
// subscribes upstream too (see resubscribe).
func (g *Gateway) shareSubscription(ctx context.Context, uri string, add bool) {
	st := sessionStateFrom(ctx)
	if st == nil {
		return
	}
	subs := st.list(fieldSubs)
	has := slices.Contains(subs, uri)
	switch {
	case add && !has:
		subs = append(subs, uri)
	case !add && has:
		subs = slices.DeleteFunc(subs, func(s string) bool { return s == uri })
	default:
		return
	}
	b, _ := json.Marshal(subs)
	g.setShared(ctx, st.id, map[string]string{fieldSubs: string(b)})
}

// sessionRegistered follows mcp-go's registry for the shared table, and,
// when a session that began on another replica opens its GET stream here,
// subscribes upstream to what it subscribed to there: resource updates
// reach a client through the replica that holds its stream.
func (g *Gateway) sessionRegistered(ctx context.Context, s server.ClientSession) {
	if g.replicaSessions == nil {
		return
	}
	g.replicaSessions.registeredHere(s.SessionID())
	if st := sessionStateFrom(ctx); st != nil && st.id == s.SessionID() {
		if uris := st.list(fieldSubs); len(uris) > 0 {
			// Not on the stream's way: the upstream may be slow.
			go func() {
				for _, uri := range uris {
					g.subs.add(context.WithoutCancel(ctx), uri)
				}
			}()
		}
	}
}

func (g *Gateway) sessionUnregistered(_ context.Context, s server.ClientSession) {
	if g.replicaSessions != nil {
		g.replicaSessions.unregisteredHere(s.SessionID())
	}
}

// endLocally clears what mcp-go keeps in this process for a session,
// without ending it for the other replicas: the DELETE it sends is marked
// localOnly, which the id manager does not pass on to the shared table.
func endLocally(mcpHandler http.Handler) func(id string) {
	return func(id string) {
		ctx := context.WithValue(context.Background(), localOnlyKey{}, true)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, "/mcp", nil)
		if err != nil {
			return
		}
		req.Header.Set(sessionIDHeader, id)
		mcpHandler.ServeHTTP(discardResponse{header: http.Header{}}, req)
	}
}

// startSharedSessions gives the shared table the mcp-go handler to clear
// sessions with, and starts its sweep (once per gateway: a gateway may be
// served several times, and every handler clears the same mcp-go server).
func (g *Gateway) startSharedSessions(mcpHandler http.Handler) {
	if g.replicaSessions == nil {
		return
	}
	g.replicaSessions.mu.Lock()
	g.replicaSessions.endLocal = endLocally(mcpHandler)
	start := !g.replicaSessions.sweeping
	g.replicaSessions.sweeping = true
	g.replicaSessions.mu.Unlock()
	if start {
		go g.replicaSessions.sweep(g.life, sweepEvery(g.replicaSessions.idle))
	}
}

// sweepEvery is how often a replica checks that the sessions it holds
// still exist in the shared table.
func sweepEvery(idle time.Duration) time.Duration {
	if idle > 0 {
		return min(max(idle/2, time.Second), time.Minute)
	}
	return time.Minute
}

// isClientAnswer reports whether a POST body is a client's answer to a
// server-to-client request (sampling, elicitation, roots): an id and a
// result or an error, no method.
func isClientAnswer(body []byte) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "" && len(msg.ID) > 0 && (msg.Result != nil || msg.Error != nil)
}

// misroutedAnswer is the response writer of a client's answer on a shared
// session. mcp-go refuses an answer to a request that is not pending in
// this process: 404 when the session has no stream open here, 400 ("no
// pending request") when it has one. On a session the shared table has
// just found live, either means the answer reached another replica than
// the one that asked, and which of the two the client met would depend on
// whether this replica's last stream for it had closed yet; a 404 would
// moreover tell the client its session is gone. Both get 409 with a
// JSON-RPC error that says what to fix instead. (mcp-go's other 400s for
// an answer are for an id that is not an integer, which keep theirs.)
type misroutedAnswer struct {
	http.ResponseWriter
	id        any
	swallowed bool
}

// notPending reports whether status is how mcp-go refuses an answer to a
// request it has not got pending (see misroutedAnswer).
func (m *misroutedAnswer) notPending(status int) bool {
	if status == http.StatusNotFound {
		return true
	}
	n, isNumber := m.id.(float64)
	return status == http.StatusBadRequest && isNumber && n == math.Trunc(n)
}

func (m *misroutedAnswer) WriteHeader(status int) {
	if !m.notPending(status) {
		m.ResponseWriter.WriteHeader(status)
		return
	}
	m.swallowed = true
	m.ResponseWriter.Header().Del("Content-Length")
	writeRPCError(m.ResponseWriter, http.StatusConflict, m.id, mcp.INVALID_REQUEST,
		"toolbridge: this answers a request that another replica sent; the load balancer must send a session's requests "+
			"to one replica (HAProxy: stick on the Mcp-Session-Id header); the session itself is still valid")
}

func (m *misroutedAnswer) Write(p []byte) (int, error) {
	if m.swallowed {
		return len(p), nil
	}
	return m.ResponseWriter.Write(p)
}

// Flush passes on to the writer under it, for streamed answers.
func (m *misroutedAnswer) Flush() {
	if f, ok := m.ResponseWriter.(http.Flusher); ok && !m.swallowed {
		f.Flush()
	}
}
