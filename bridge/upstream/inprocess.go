package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// InProcessTransport is an mcp-go client transport to an MCP server in
// this process. It does what mcp-go's transport.InProcessTransport does (a
// session registered at Start that carries the server's notifications
// and requests to the client, each request marshalled as a client would
// send it, the answer handed back as a JSON-RPC response), with two
// things left to its user (InProcessOptions): what answers a message, and
// how the answer becomes the client's response.
//
// Why not mcp-go's: it encodes the server's answer and decodes the whole
// message again to hand over its result as raw bytes. The gateway's two
// uses each encode the answer once instead (#25): the upstream side
// (Spec.InProcess, newInProcessTransport) encodes only the result of an
// answer to one of the gateway's own requests, and the gateway's
// in-process clients (bridge's Gateway.InProcessTransport) go through the
// gateway's front and encode a plain tool answer once.
// TestInProcessTransportMatchesMCPGo, here and in bridge, holds each to
// mcp-go's responses.
type InProcessTransport struct {
	srv       *server.MCPServer
	sessionID string
	o         InProcessOptions

	mu      sync.Mutex // guards session, started and closed
	session *server.InProcessSession
	started bool
	closed  bool

	notifier

	done      chan struct{}
	closeOnce sync.Once
}

// InProcessOptions say how an InProcessTransport reaches its server.
type InProcessOptions struct {
	// Sampling, Elicitation and Roots answer the server's requests in the
	// client's session; nil is none, and the request fails as in mcp-go's
	// in-process session.
	Sampling    server.SamplingHandler
	Elicitation server.ElicitationHandler
	Roots       server.RootsHandler
	// Handle answers a message in the session's context; nil is the
	// server's HandleMessage.
	Handle func(ctx context.Context, msg json.RawMessage) mcp.JSONRPCMessage
	// Respond makes the client's response of an answer; nil is what
	// mcp-go's transport gives, the answer encoded and decoded again.
	Respond func(answer mcp.JSONRPCMessage) (*transport.JSONRPCResponse, error)
	// NotifyInSession sends the client's notifications in its session, as
	// they arrive over stdio or HTTP, so that a notifications/cancelled
	// finds the request it names; mcp-go's transport sends them with none.
	NotifyInSession bool
}

var _ transport.Interface = (*InProcessTransport)(nil)

// NewInProcessTransport returns a transport to srv for one client.
func NewInProcessTransport(srv *server.MCPServer, o InProcessOptions) *InProcessTransport {
	if o.Handle == nil {
		o.Handle = srv.HandleMessage
	}
	if o.Respond == nil {
		o.Respond = RoundTripResponse
	}
	return &InProcessTransport{srv: srv, sessionID: srv.GenerateInProcessSessionID(), o: o, done: make(chan struct{})}
}

// newInProcessTransport is the transport to an upstream served in this
// process, its sampling, elicitation and roots requests answered by p.
func newInProcessTransport(srv *server.MCPServer, p peer) *InProcessTransport {
	return NewInProcessTransport(srv, InProcessOptions{Sampling: p, Elicitation: p, Roots: p, Respond: inProcessResponse})
}

// Start registers the client's session with the server and starts
// handing the server's notifications to the client. As with mcp-go's
// transport, starting again does nothing and a closed transport does not
// start.
func (t *InProcessTransport) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return transport.ErrTransportClosed
	}
	if t.started {
		return nil
	}
	// Registered under the lock, as mcp-go's transport does: a Close that
	// runs at the same time either comes first (and Start refuses) or
	// sees the session and unregisters it.
	session := server.NewInProcessSessionWithHandlers(t.sessionID, t.o.Sampling, t.o.Elicitation, t.o.Roots)
	if err := t.srv.RegisterSession(ctx, session); err != nil {
		return fmt.Errorf("registering the in-process session: %w", err)
	}
	t.session = session
	t.started = true
	go t.forwardNotifications(session)
	return nil
}

// forwardNotifications hands the server's notifications to the client's
// handler until Close.
func (t *InProcessTransport) forwardNotifications(session *server.InProcessSession) {
	notifications := session.ClientNotifications()
	for {
		select {
		case <-t.done:
			return
		case n, ok := <-notifications:
			if !ok {
				return
			}
			t.notify(n)
		}
	}
}

// withSession is ctx with the client's session, once started.
func (t *InProcessTransport) withSession(ctx context.Context) context.Context {
	t.mu.Lock()
	session := t.session
	t.mu.Unlock()
	if session == nil {
		return ctx
	}
	return t.srv.WithContext(ctx, session)
}

// SendRequest sends request to the server in the client's session and
// returns its answer.
func (t *InProcessTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	msg, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return t.o.Respond(t.o.Handle(t.withSession(ctx), msg))
}

// SendNotification sends notification to the server: in the client's
// session when NotifyInSession is set, else with none, as mcp-go does.
func (t *InProcessTransport) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	msg, err := json.Marshal(notification)
	if err != nil {
		return fmt.Errorf("encoding the notification: %w", err)
	}
	if t.o.NotifyInSession {
		ctx = t.withSession(ctx)
	}
	t.o.Handle(ctx, msg)
	return nil
}

// Close stops the notifications and unregisters the client's session.
func (t *InProcessTransport) Close() error {
	t.mu.Lock()
	t.closed = true
	session := t.session
	t.mu.Unlock()
	t.closeOnce.Do(func() { close(t.done) })
	if session != nil {
		t.srv.UnregisterSession(context.Background(), t.sessionID)
	}
	return nil
}

// GetSessionId is "", as for mcp-go's in-process transport: the session
// is no HTTP session the client would name.
func (t *InProcessTransport) GetSessionId() string { return "" }

// Session is the client's session once started, else nil.
func (t *InProcessTransport) Session() *server.InProcessSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// inProcessResponse is the upstream side's response to answer: what
// RoundTripResponse gives, with only the result encoded when answer is a
// result to one of the gateway's own requests (see InProcessTransport).
func inProcessResponse(answer mcp.JSONRPCMessage) (*transport.JSONRPCResponse, error) {
	if r, ok := answer.(mcp.JSONRPCResponse); ok && r.JSONRPC == mcp.JSONRPC_VERSION {
		if _, ok := r.ID.Value().(string); ok {
			result, err := json.Marshal(r.Result)
			if err != nil {
				return nil, fmt.Errorf("encoding the answer: %w", err)
			}
			return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: r.ID, Result: result}, nil
		}
	}
	return RoundTripResponse(answer)
}

// RoundTripResponse is the response mcp-go's in-process transport makes
// of answer: encoded, then decoded again with its result as raw bytes.
func RoundTripResponse(answer mcp.JSONRPCMessage) (*transport.JSONRPCResponse, error) {
	b, err := json.Marshal(answer)
	if err != nil {
		return nil, fmt.Errorf("encoding the answer: %w", err)
	}
	var resp transport.JSONRPCResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	return &resp, nil
}
