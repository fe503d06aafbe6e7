package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Relay carries what flows from an upstream to the client that caused it:
// progress notifications, log messages, and the server-to-client requests
// (sampling, elicitation, roots). MCP has no way for an upstream to say which
// client request a sampling request belongs to, so those go to the client of
// the most recent call in flight on that upstream, and may be answered after
// that call returned (see askContext).
type Relay struct {
	srv      *server.MCPServer
	onChange func(u *Conn, method string)

	nextToken atomic.Int64
	mu        sync.Mutex
	progress  map[string]progressRoute // token sent upstream -> client
	// The calls in flight on each upstream are in a list of their own,
	// oldest first, kept on the Conn (Conn.calls), guarded by mu. Begin
	// and End are O(1): under load every session's call passes through
	// mu twice, and a scan of the calls in flight there held it longer the
	// more sessions were busy.
}

type progressRoute struct {
	ctx   context.Context // the client request's context (carries its session)
	token mcp.ProgressToken
}

// callList is the calls in flight on one upstream, oldest first.
type callList struct{ oldest, newest *ActiveCall }

// ActiveCall is one call in flight on an upstream. It is its own handle:
// Begin hands it out and End takes it back, with no closure to allocate.
type ActiveCall struct {
	ctx   context.Context
	r     *Relay
	u     *Conn
	token string // the progress token sent upstream, if any
	// prev and next link the calls in flight on u (guarded by r.mu).
	prev, next *ActiveCall
}

// NewRelay returns a relay to srv, the server clients talk to (nil drops
// what would go to a client). onListChanged, if not nil, is called when an
// upstream says its tools, prompts or resources changed, with the
// notification's method; it runs on the transport's reader and must not
// block on a request to that upstream.
func NewRelay(srv *server.MCPServer, onListChanged func(u *Conn, method string)) *Relay {
	return &Relay{srv: srv, onChange: onListChanged, progress: map[string]progressRoute{}}
}

// Begin registers a call in flight on u; ctx is the call's context, whose
// deadline also bounds the wait for the client's answer to a request the
// upstream sends during the call. When the client asked for progress,
// the call's UpstreamToken is the token to send upstream instead: a fresh
// one, because two clients may use the same token. End must be called when
// the call returns.
func (r *Relay) Begin(ctx context.Context, u *Conn, clientToken mcp.ProgressToken) *ActiveCall {
	call := &ActiveCall{ctx: ctx, r: r, u: u}
	if clientToken != nil {
		call.token = "tb-progress-" + strconv.FormatInt(r.nextToken.Add(1), 10)
	}
	r.mu.Lock()
	l := &u.calls
	call.prev = l.newest
	if l.newest != nil {
		l.newest.next = call
	} else {
		l.oldest = call
	}
	l.newest = call
	if call.token != "" {
		r.progress[call.token] = progressRoute{ctx: ctx, token: clientToken}
	}
	r.mu.Unlock()
	return call
}

// UpstreamToken is the progress token to send upstream, "" for none.
func (c *ActiveCall) UpstreamToken() string { return c.token }

// End unregisters the call.
func (c *ActiveCall) End() {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.token != "" {
		delete(r.progress, c.token)
	}
	l := &c.u.calls
	if c.prev != nil {
		c.prev.next = c.next
	} else if l.oldest == c {
		l.oldest = c.next
	} else {
		return // ended already
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.newest = c.prev
	}
	c.prev, c.next = nil, nil
}

// latest returns the context of the newest call in flight on u.
func (r *Relay) latest(u *Conn) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u.calls.newest == nil {
		return nil, false
	}
	return u.calls.newest.ctx, true
}

func (r *Relay) upstreamNotification(u *Conn, n mcp.JSONRPCNotification) {
	switch mcp.MCPMethod(n.Method) {
	case mcp.MethodNotificationToolsListChanged,
		mcp.MethodNotificationPromptsListChanged,
		mcp.MethodNotificationResourcesListChanged:
		if r.onChange != nil {
			r.onChange(u, n.Method)
		}
	case mcp.MethodNotificationProgress:
		r.relayProgress(n)
	case mcp.MethodNotificationResourceUpdated:
		if r.srv != nil {
			r.srv.SendNotificationToAllClients(n.Method, n.Params.AdditionalFields)
		}
	case mcp.MethodNotificationMessage:
		r.relayLog(u, n)
	}
}

func (r *Relay) relayProgress(n mcp.JSONRPCNotification) {
	params := n.Params.AdditionalFields
	token := tokenString(params["progressToken"])
	r.mu.Lock()
	route, ok := r.progress[token]
	r.mu.Unlock()
	if !ok || r.srv == nil {
		return // progress for a call that already returned: nothing to do
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[k] = v
	}
	out["progressToken"] = route.token
	_ = r.srv.SendNotificationToClient(route.ctx, n.Method, out)
}

func (r *Relay) relayLog(u *Conn, n mcp.JSONRPCNotification) {
	if r.srv == nil {
		return
	}
	raw, err := json.Marshal(n.Params.AdditionalFields)
	if err != nil {
		return
	}
	var msg mcp.LoggingMessageNotification
	if err := json.Unmarshal(raw, &msg.Params); err != nil {
		return
	}
	msg.Method = n.Method
	if ctx, ok := r.latest(u); ok {
		// SendLogMessageToClient honours the level the client set.
		_ = r.srv.SendLogMessageToClient(ctx, msg)
		return
	}
	r.srv.SendNotificationToAllClients(n.Method, n.Params.AdditionalFields)
}

func tokenString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case json.Number:
		return t.String()
	}
	return ""
}

// errNoClient is returned to an upstream that asks the client for something
// (sampling, elicitation, roots) while no client call is in flight on it.
var errNoClient = errors.New("toolbridge: no client request in progress on this server to relay to")

// peer answers an upstream's requests to its client by asking the client
// whose call is in flight. It satisfies both the client-side handler
// interfaces (stdio, HTTP upstreams) and the in-process ones.
//
// A client that did not declare the capability a request needs is never
// asked: the upstream gets an unsupportedError at once, which the
// transports answer with -32601 (see refuseUnsupported). Forwarding it
// would leave the upstream waiting on a client that cannot answer, or
// hand the client a request the spec says it need not understand.
type peer struct{ u *Conn }

func (p peer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	askCtx, done, err := p.client(ctx, mcp.MethodSamplingCreateMessage)
	if err != nil {
		return nil, err
	}
	defer done()
	return p.u.relay.srv.RequestSampling(askCtx, req)
}

func (p peer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	askCtx, done, err := p.client(ctx, mcp.MethodElicitationCreate)
	if err != nil {
		return nil, err
	}
	defer done()
	return p.u.relay.srv.RequestElicitation(askCtx, req)
}

func (p peer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	askCtx, done, err := p.client(ctx, mcp.MethodListRoots)
	if err != nil {
		return nil, err
	}
	defer done()
	return p.u.relay.srv.RequestRoots(askCtx, req)
}

// client returns the context to ask the client of the call in flight on
// the upstream method under (see askContext), or why it cannot be asked.
// done must be called once the client answered.
func (p peer) client(upstreamCtx context.Context, method mcp.MCPMethod) (askCtx context.Context, done func(), err error) {
	callCtx, ok := p.u.relay.latest(p.u)
	if !ok {
		return nil, nil, errNoClient
	}
	if !declares(callCtx, method) {
		return nil, nil, &unsupportedError{method: string(method), capability: capabilityOf(method)}
	}
	askCtx, done = askContext(upstreamCtx, callCtx)
	return askCtx, done, nil
}

// askContext is the context a request relayed to a client waits for its
// answer under: the call's values (its session, and over HTTP the POST
// stream the request may go out on), but not the call's end. The call is
// only the way to the client: an upstream may ask outside any call of its
// own (server-everything lists roots 350 ms after initialize, in whatever
// call is in flight then), and a client may answer after that call has
// returned. Ended with the call, the request was dropped while the client
// had it, and its answer got HTTP 400 "No pending sampling request found"
// (a protocol error for the client; the upstream got "context canceled").
// The wait is bounded instead by the call's deadline (its call timeout,
// which bounded it before too), and by upstreamCtx, the context mcp-go's
// client gives the upstream's request: for stdio and HTTP upstreams that
// is the connection's, so nothing waits on a server that is gone.
func askContext(upstreamCtx, callCtx context.Context) (context.Context, func()) {
	ctx := context.WithoutCancel(callCtx)
	var cancel context.CancelFunc
	if deadline, ok := callCtx.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	} else {
		ctx, cancel = context.WithTimeout(ctx, askTimeout)
	}
	stop := context.AfterFunc(upstreamCtx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// askTimeout bounds the wait for a client's answer when the call that
// carried the request has no deadline of its own.
const askTimeout = time.Minute

// capabilityOf is the client capability a server-to-client request needs.
func capabilityOf(method mcp.MCPMethod) string {
	switch method {
	case mcp.MethodSamplingCreateMessage:
		return "sampling"
	case mcp.MethodElicitationCreate:
		return "elicitation"
	case mcp.MethodListRoots:
		return "roots"
	}
	return string(method)
}

// declares reports whether the client of the call whose context is ctx
// declared the capability method needs, in its initialize.
func declares(ctx context.Context, method mcp.MCPMethod) bool {
	s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	caps := s.GetClientCapabilities()
	switch method {
	case mcp.MethodSamplingCreateMessage:
		return caps.Sampling != nil
	case mcp.MethodElicitationCreate:
		return caps.Elicitation != nil
	case mcp.MethodListRoots:
		return caps.Roots != nil
	}
	return false
}

// unsupportedError is the answer to an upstream's request that the client
// it would go to did not declare the capability for.
type unsupportedError struct{ method, capability string }

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("%s is not available: the client of this call did not declare the %s capability", e.method, e.capability)
}

// refuseUnsupported answers an unsupportedError with JSON-RPC -32601
// (method not found: "does not exist / is not available"), what the
// client itself would answer had the upstream asked it directly. The MCP
// spec's own sampling error, -1, means the user rejected the request,
// which is not what happened; mcp-go's transports would otherwise send
// every handler error as -32603, an internal error.
func refuseUnsupported(h transport.RequestHandler) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		resp, err := h(ctx, req)
		if unsupported, ok := errors.AsType[*unsupportedError](err); ok {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, unsupported.Error(), nil), nil
		}
		return resp, err
	}
}

// httpTransport is mcp-go's transport with refuseUnsupported around the
// request handler the client sets (StdioTransport puts it there itself).
// Embedding the concrete type keeps every other method (and so every
// interface mcp-go's client looks for) as it is.
type httpTransport struct{ *transport.StreamableHTTP }

func (t httpTransport) SetRequestHandler(h transport.RequestHandler) {
	t.StreamableHTTP.SetRequestHandler(refuseUnsupported(h))
}
