package bridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
)

// Streamable HTTP sessions. mcp-go's default session id manager checks only
// the shape of an id, so any well-formed id would be served: one never
// issued, one already terminated, another client's. The gateway keeps its
// own table of the ids it issued, each bound to the principal (credential)
// that opened it, and answers every other id with 404, as the spec asks,
// so that the client initializes again. The table is bounded
// (serve.max_sessions) and idle sessions expire
// (serve.session_idle_timeout); a forged id is never stored, so it costs
// nothing.
//
// With redis.url set, the table is the one every replica shares
// (sharedSessions, in sessions_shared.go); sessionStore is what the guard
// and mcp-go's id manager need of either.

// sessionIDHeader is the streamable HTTP session header.
const sessionIDHeader = "Mcp-Session-Id"

// errNoSession is why a session id is refused. It does not say whether the
// id was never issued, has expired or belongs to another principal: a
// client must not learn that someone else's id exists.
var errNoSession = errors.New("unknown or terminated session")

// sessionTable holds the HTTP sessions the gateway issued.
type sessionTable struct {
	idle time.Duration
	max  int
	now  func() time.Time
	// forget is called, outside the lock, for every session the table drops
	// by itself (expired or evicted), so that what is kept per session
	// elsewhere goes with it.
	forget func(id string)

	mu   sync.Mutex
	byID map[string]*sessionEntry
	// reserved counts the places held for initialize requests that have
	// passed the guard and not yet been given their id: counted with byID,
	// so that concurrent initializes cannot together pass max.
	reserved int
}

// sessionEntry is one issued session.
type sessionEntry struct {
	principal string
	last      time.Time // end of its last request
	busy      int       // requests (and GET streams) running on it
}

func newSessionTable(idle time.Duration, max int, forget func(string)) *sessionTable {
	if forget == nil {
		forget = func(string) {}
	}
	return &sessionTable{idle: idle, max: max, now: time.Now, forget: forget, byID: map[string]*sessionEntry{}}
}

// issue opens a session for principal and returns its id: 128 random bits,
// so that ids cannot be guessed. The session takes the place res holds, if
// any; without one it makes room as reserve does (mcp-go may mint an id
// outside an initialize the guard saw).
func (t *sessionTable) issue(principal string, res *reservation) string {
	id := "mcp-session-" + rand.Text()
	t.mu.Lock()
	var dropped []string
	if res != nil && !res.used {
		res.used = true
		t.reserved--
	} else {
		dropped = t.makeRoomLocked(1)
	}
	t.byID[id] = &sessionEntry{principal: principal, last: t.now()}
	t.mu.Unlock()
	t.forgetAll(dropped)
	return id
}

// reservation is a place in the table held for one initialize request.
type reservation struct {
	t    *sessionTable
	used bool // the session was issued into it; guarded by t.mu
	// id is the session the shared table already created for the
	// initialize; Generate hands it to mcp-go.
	id string
}

// reserve holds a place for one more session: it drops the expired
// sessions and, when the table is full, the least recently used idle one.
// It fails only when every place is taken by a session with a request
// running or by another initialize in flight. release gives an unused
// place back.
func (t *sessionTable) reserve() (res *reservation, release func(), ok bool) {
	t.mu.Lock()
	dropped := t.makeRoomLocked(1)
	if ok = len(t.byID)+t.reserved < t.max; ok {
		t.reserved++
		res = &reservation{t: t}
	}
	t.mu.Unlock()
	t.forgetAll(dropped)
	if !ok {
		return nil, nil, false
	}
	return res, func() {
		t.mu.Lock()
		if !res.used {
			res.used = true
			t.reserved--
		}
		t.mu.Unlock()
	}, true
}

// makeRoomLocked drops the expired sessions, then idle ones, least
// recently used first, until n more fit. It returns the ids dropped.
func (t *sessionTable) makeRoomLocked(n int) []string {
	var dropped []string
	now := t.now()
	for id, e := range t.byID {
		if t.expired(e, now) {
			delete(t.byID, id)
			dropped = append(dropped, id)
		}
	}
	for len(t.byID)+t.reserved+n > t.max {
		oldest := ""
		for id, e := range t.byID {
			if e.busy == 0 && (oldest == "" || e.last.Before(t.byID[oldest].last)) {
				oldest = id
			}
		}
		if oldest == "" {
			break // every session is busy
		}
		delete(t.byID, oldest)
		dropped = append(dropped, oldest)
	}
	return dropped
}

func (t *sessionTable) expired(e *sessionEntry, now time.Time) bool {
	return e.busy == 0 && t.idle > 0 && now.Sub(e.last) > t.idle
}

func (t *sessionTable) forgetAll(ids []string) {
	for _, id := range ids {
		t.forget(id)
	}
}

// acquire checks that id is a live session of principal and marks a
// request running on it; release must follow when the request ends.
func (t *sessionTable) acquire(id, principal string) (release func(), err error) {
	t.mu.Lock()
	e, ok := t.byID[id]
	if ok && t.expired(e, t.now()) {
		delete(t.byID, id)
		t.mu.Unlock()
		t.forget(id)
		return nil, errNoSession
	}
	if !ok || e.principal != principal {
		t.mu.Unlock()
		return nil, errNoSession
	}
	e.busy++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		e.busy--
		e.last = t.now()
		t.mu.Unlock()
	}, nil
}

// valid reports whether id is a live session of principal.
func (t *sessionTable) valid(id, principal string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	return ok && e.principal == principal && !t.expired(e, t.now())
}

// terminate ends a session (DELETE, or shutdown).
func (t *sessionTable) terminate(id string) {
	t.mu.Lock()
	delete(t.byID, id)
	t.mu.Unlock()
}

// len reports the number of sessions held.
func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// sessionStore is where the HTTP sessions live: the process's own table
// (sessionTable, the default) or the table the replicas share in Redis
// (sharedSessions). Errors are errNoSession, errTooManySessions, or one
// wrapping state.ErrUnavailable.
type sessionStore interface {
	// open holds a place for an initialize request of principal, passed
	// to issue; release gives back a place issue did not use.
	open(ctx context.Context, principal string) (res *reservation, release func(), err error)
	// issue is mcp-go's Generate: the id of a new session of principal.
	issue(principal string, res *reservation) string
	// enter checks that id is a live session of principal and marks a
	// request running on it until release; st is what the store keeps for
	// the session (nil for the process's own table).
	enter(ctx context.Context, id, principal string) (st *sessionState, release func(), err error)
	// valid is mcp-go's Validate.
	valid(id, principal string) bool
	// end ends a session (DELETE).
	end(id string)
}

// errTooManySessions refuses an initialize when serve.max_sessions are held
// and every one has a request running.
var errTooManySessions = errors.New("too many sessions with requests running (serve.max_sessions); retry later")

func (t *sessionTable) open(context.Context, string) (*reservation, func(), error) {
	res, release, ok := t.reserve()
	if !ok {
		return nil, nil, errTooManySessions
	}
	return res, release, nil
}

func (t *sessionTable) enter(_ context.Context, id, principal string) (*sessionState, func(), error) {
	release, err := t.acquire(id, principal)
	return nil, release, err
}

func (t *sessionTable) end(id string) { t.terminate(id) }

// principalKey carries, in a request's context, who the request's
// credential proves the caller to be.
type principalKey struct{}

// withPrincipal records the authenticated principal of a request. An
// authenticator that knows users (downstream OAuth) sets it to the user, so
// that a session stays bound to its user across token refreshes.
func withPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalOf is who a request acts for: the principal an authenticator
// recorded, or else a hash of the credential presented in the
// Authorization header ("" for none). Only a hash is kept: the table must
// not hold the credential itself.
func principalOf(r *http.Request) string {
	if r == nil {
		return ""
	}
	if p, ok := r.Context().Value(principalKey{}).(string); ok {
		return p
	}
	if id := access.FromContext(r.Context()); id != nil {
		// With serve.oauth the principal is who the token names, not the
		// token: a client that refreshes its token keeps its session, and
		// another person's valid token does not open it.
		return "subject:" + id.Issuer + " " + id.Subject
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(auth))
	return "credential:" + hex.EncodeToString(sum[:])
}

// sessionResolver gives mcp-go a session id manager bound to the request's
// principal: the sessions it issues belong to that principal, and it
// accepts only theirs.
type sessionResolver struct{ table sessionStore }

// ResolveSessionIdManager implements server.SessionIdManagerResolver. r is
// nil when mcp-go ends sessions by itself (CloseSessions).
func (s sessionResolver) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	b := boundSessions{table: s.table, principal: principalOf(r)}
	if r != nil {
		b.res, _ = r.Context().Value(reservationKey{}).(*reservation)
		b.entered = sessionStateFrom(r.Context())
		b.localOnly = r.Context().Value(localOnlyKey{}) != nil
	}
	return b
}

// reservationKey carries an initialize request's reserved place from the
// guard to the id manager mcp-go resolves for it.
type reservationKey struct{}

// boundSessions is the sessions of one principal.
type boundSessions struct {
	table     sessionStore
	principal string
	res       *reservation // the place the guard reserved for this initialize, if any
	// entered is the session the guard checked for this request, which
	// Validate need not ask the store about again.
	entered *sessionState
	// localOnly: the request only clears what this process keeps for a
	// session (see endLocally); the session itself is not ended.
	localOnly bool
}

// Generate implements server.SessionIdManager.
func (b boundSessions) Generate() string { return b.table.issue(b.principal, b.res) }

// Validate implements server.SessionIdManager.
func (b boundSessions) Validate(id string) (bool, error) {
	if b.entered != nil && b.entered.id == id {
		return false, nil
	}
	if !b.table.valid(id, b.principal) {
		return false, errNoSession
	}
	return false, nil
}

// Terminate implements server.SessionIdManager.
func (b boundSessions) Terminate(id string) (bool, error) {
	if !b.localOnly {
		b.table.end(id)
	}
	return false, nil
}

// guardSessions checks, in front of mcp-go's handler, what mcp-go does not:
// that a request's session was issued to its principal and is live, that
// GET and DELETE name a session, and that a POST is one JSON-RPC message
// with a valid id. Requests on a session are counted, so that a session
// with a request or stream running never expires.
func guardSessions(table sessionStore, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionIDHeader)
		var body []byte
		switch r.Method {
		case http.MethodGet, http.MethodDelete:
			if id == "" {
				http.Error(w, "toolbridge: "+r.Method+" needs an "+sessionIDHeader+" header naming a session opened with initialize", http.StatusBadRequest)
				return
			}
		case http.MethodPost:
			var msg envelope
			var ok bool
			if body, msg, ok = readMessage(w, r); !ok {
				return
			}
			// Read at most once each, and only when needed: every parse
			// of the body is paid by every request.
			initialize := msg.isInitialize()
			modern := false
			if !initialize || id != "" {
				modern = isModern(r.Header, body)
			}
			if id == "" && !initialize && !modern {
				// The spec: a request other than initialize without a
				// session gets 400, not the 404 that means "your session
				// ended". (2026-07-28 requests have no sessions at all.)
				writeRPCError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST,
					"toolbridge: this request needs an "+sessionIDHeader+" header: send initialize first and use the session id it returns")
				return
			}
			if id != "" && modern {
				// 2026-07-28 has no sessions: mcp-go ignores the header,
				// so the request needs no session table (and works while
				// Redis is down).
				id = ""
			}
			if id == "" && initialize {
				res, release, err := table.open(r.Context(), principalOf(r))
				if err != nil {
					refuseSession(w, body, err)
					return
				}
				defer release()
				r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, res))
			}
		}
		if id != "" {
			st, release, err := table.enter(r.Context(), id, principalOf(r))
			if err != nil {
				refuseSession(w, body, err)
				return
			}
			defer release()
			if st != nil {
				r = r.WithContext(withSessionState(st.ctx, st))
				if r.Method == http.MethodPost && isClientAnswer(body) {
					w = &misroutedAnswer{ResponseWriter: w, id: requestID(body)}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readMessage reads a POST body and refuses what mcp-go would misreport: a
// JSON-RPC batch (valid JSON, but the protocol has no batches since
// 2025-06-18) and an id that is neither a string, a number nor null. The
// body is put back for the next handler; msg is what the guard needs of
// it, parsed once. It reports whether the request may go on.
func readMessage(w http.ResponseWriter, r *http.Request) (body []byte, msg envelope, ok bool) {
	if r.Body == nil {
		return nil, envelope{}, true
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST,
				tooLargeMessage(tooLarge.Limit))
			return nil, envelope{}, false
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// serve.body_timeout passed (see bodyDeadline): the connection
			// cannot be read any more, so it closes after this answer.
			w.Header().Set("Connection", "close")
			writeRPCError(w, http.StatusRequestTimeout, nil, mcp.INVALID_REQUEST,
				"the request body took longer than serve.body_timeout to arrive")
			return nil, envelope{}, false
		}
		writeRPCError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, fmt.Sprintf("reading the request body: %v", err))
		return nil, envelope{}, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg = parseMessage(body)
	if why := msg.refused(); why != "" {
		writeRPCError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, why)
		return nil, envelope{}, false
	}
	return body, msg, true
}

// refusedMessage says why a message must be refused with -32600 before
// mcp-go sees it, or "" if it may go on. mcp-go misreports both cases: a
// batch is valid JSON, yet it answers "not valid json" (or a parse error
// on stdio), and it answers a request whose id is an object as if the id
// were fine. Both transports refuse them the same way.
func refusedMessage(body []byte) string { return parseMessage(body).refused() }

// envelope is what the transports' guards need of a message: whether it is
// a batch, its id and whether it is initialize or tools/call.
// parseMessage reads them in one pass of the JSON decoder, where the guard
// used to take one pass for each question (and the stdio count of pending
// calls another).
type envelope struct {
	batch bool
	// id is the raw id, when the message is a JSON object.
	id     json.RawMessage
	method methodName
}

func parseMessage(body []byte) envelope {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		// An array has neither an id nor a method to read.
		return envelope{batch: json.Valid(trimmed)}
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method methodName      `json:"method"`
	}
	// Neither field can fail to decode (methodName notes a method that is
	// not a string instead), so an error means invalid JSON or no object,
	// and both fields are then left empty.
	_ = json.Unmarshal(body, &env)
	return envelope{id: env.ID, method: env.Method}
}

// methodName is what the guards need of a message's method, read without
// copying it: whether it is initialize or tools/call, and whether any
// value given for it was not a string (which a decode into a string
// refuses).
type methodName struct{ initialize, toolsCall, notString bool }

// UnmarshalJSON implements json.Unmarshaler. It is called for each
// "method" key, in order, as a decode into a string would be.
func (m *methodName) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		// A string is left as it was by null.
	case len(b) > 0 && b[0] == '"':
		name := b[1 : len(b)-1]
		if bytes.IndexByte(b, '\\') >= 0 {
			var s string
			_ = json.Unmarshal(b, &s)
			name = []byte(s)
		}
		m.initialize = string(name) == string(mcp.MethodInitialize)
		m.toolsCall = string(name) == string(mcp.MethodToolsCall)
	default:
		m.notString = true
	}
	return nil
}

// refused says why the message must be refused (see refusedMessage), or
// "" if it may go on.
func (m envelope) refused() string {
	if m.batch {
		return "batch not supported: JSON-RPC batches were removed from MCP in 2025-06-18; send one message per request"
	}
	if len(m.id) > 0 {
		switch m.id[0] {
		case '{', '[', 't', 'f':
			return "invalid request: id must be a string or a number"
		}
	}
	return ""
}

// isInitialize reports whether the message is an initialize request.
func (m envelope) isInitialize() bool { return m.method.initialize && !m.method.notString }

// isToolsCall reports whether the message is a tools/call request (or an
// object with that method, whatever else it has), as a decode into a
// struct of a string method says.
func (m envelope) isToolsCall() bool { return m.method.toolsCall && !m.method.notString }

// isModern reports whether a request speaks protocol 2026-07-28 or later,
// which has no sessions: by its MCP-Protocol-Version header or the
// version in its params._meta, as mcp-go decides.
func isModern(h http.Header, body []byte) bool {
	if mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) {
		return true
	}
	var msg struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	return json.Unmarshal(body, &msg) == nil && mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion())
}

// writeRPCError answers with a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, status int, id any, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      id,
		"error":   map[string]any{"code": code, "message": message},
	})
}

// endSession clears what mcp-go keeps for a session the table dropped by
// itself, the way a client's DELETE would (mcp-go exposes no other way).
// The table no longer has the id, so the DELETE only cleans up.
func endSession(mcpHandler http.Handler) func(id string) {
	return func(id string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", nil)
		if err != nil {
			return
		}
		req.Header.Set(sessionIDHeader, id)
		mcpHandler.ServeHTTP(discardResponse{header: http.Header{}}, req)
	}
}

// discardResponse is a ResponseWriter whose answer goes nowhere.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}
