package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Relay carries what flows from an upstream to the client that caused it:
// progress notifications, log messages, and the server-to-client requests
// (sampling, elicitation, roots). MCP has no way for an upstream to say which
// client request a sampling request belongs to, so those go to the client of
// the most recent call in flight on that upstream.
type Relay struct {
	srv      *server.MCPServer
	onChange func(u *Conn, method string)

	nextToken atomic.Int64
	mu        sync.Mutex
	progress  map[string]progressRoute // token sent upstream -> client
	active    map[*Conn][]*ActiveCall  // calls in flight, oldest first
}

type progressRoute struct {
	ctx   context.Context // the client request's context (carries its session)
	token mcp.ProgressToken
}

// ActiveCall is one call in flight on an upstream. It is its own handle:
// Begin hands it out and End takes it back, with no closure to allocate.
type ActiveCall struct {
	ctx   context.Context
	r     *Relay
	u     *Conn
	token string // the progress token sent upstream, if any
}

// NewRelay returns a relay to srv, the server clients talk to (nil drops
// what would go to a client). onListChanged, if not nil, is called when an
// upstream says its tools, prompts or resources changed, with the
// notification's method; it runs on the transport's reader and must not
// block on a request to that upstream.
func NewRelay(srv *server.MCPServer, onListChanged func(u *Conn, method string)) *Relay {
	return &Relay{srv: srv, onChange: onListChanged, progress: map[string]progressRoute{}, active: map[*Conn][]*ActiveCall{}}
}

// Begin registers a call in flight on u. When the client asked for progress,
// the call's UpstreamToken is the token to send upstream instead: a fresh
// one, because two clients may use the same token. End must be called when
// the call returns.
func (r *Relay) Begin(ctx context.Context, u *Conn, clientToken mcp.ProgressToken) *ActiveCall {
	call := &ActiveCall{ctx: ctx, r: r, u: u}
	r.mu.Lock()
	r.active[u] = append(r.active[u], call)
	if clientToken != nil {
		call.token = "tb-progress-" + strconv.FormatInt(r.nextToken.Add(1), 10)
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
	calls := r.active[c.u]
	for i, other := range calls {
		if other == c {
			calls = append(calls[:i:i], calls[i+1:]...)
			break
		}
	}
	if len(calls) == 0 {
		delete(r.active, c.u)
	} else {
		r.active[c.u] = calls
	}
}

// latest returns the context of the newest call in flight on u.
func (r *Relay) latest(u *Conn) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.active[u]
	if len(calls) == 0 {
		return nil, false
	}
	return calls[len(calls)-1].ctx, true
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
type peer struct{ u *Conn }

func (p peer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	callCtx, ok := p.u.relay.latest(p.u)
	if !ok {
		return nil, errNoClient
	}
	return p.u.relay.srv.RequestSampling(callCtx, req)
}

func (p peer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	callCtx, ok := p.u.relay.latest(p.u)
	if !ok {
		return nil, errNoClient
	}
	return p.u.relay.srv.RequestElicitation(callCtx, req)
}

func (p peer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	callCtx, ok := p.u.relay.latest(p.u)
	if !ok {
		return nil, errNoClient
	}
	return p.u.relay.srv.RequestRoots(callCtx, req)
}
