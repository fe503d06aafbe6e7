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

// inProcessTransport is the transport to an upstream served in this
// process (Spec.InProcess): mcp-go's transport.InProcessTransport, with
// one thing done more cheaply. mcp-go's encodes the server's answer and
// decodes the whole message again to hand over its result as raw bytes;
// this one encodes only the result, which gives the same bytes (an
// answer's result is encoded alike on its own and as a member), when the
// answer is a result to one of the gateway's own requests (whose ids are
// strings, which decode to themselves). Every other answer takes mcp-go's
// round trip. TestInProcessTransportMatchesMCPGo holds the two to the same
// responses.
type inProcessTransport struct {
	srv       *server.MCPServer
	sessionID string
	peer      peer

	mu      sync.Mutex // guards session, started and closed
	session *server.InProcessSession
	started bool
	closed  bool

	notifyMu       sync.RWMutex
	onNotification func(mcp.JSONRPCNotification)

	done      chan struct{}
	closeOnce sync.Once
}

var _ transport.Interface = (*inProcessTransport)(nil)

func newInProcessTransport(srv *server.MCPServer, p peer) *inProcessTransport {
	return &inProcessTransport{srv: srv, sessionID: srv.GenerateInProcessSessionID(), peer: p, done: make(chan struct{})}
}

// Start registers the gateway's session with the upstream's server, its
// sampling, elicitation and roots requests answered by the peer, and
// starts handing the server's notifications over. As mcp-go's transport,
// starting again does nothing and a closed transport does not start.
func (t *inProcessTransport) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return transport.ErrTransportClosed
	}
	if t.started {
		return nil
	}
	session := server.NewInProcessSessionWithHandlers(t.sessionID, t.peer, t.peer, t.peer)
	if err := t.srv.RegisterSession(ctx, session); err != nil {
		return fmt.Errorf("registering the in-process session: %w", err)
	}
	t.session = session
	t.started = true
	go t.forwardNotifications(session)
	return nil
}

func (t *inProcessTransport) forwardNotifications(session *server.InProcessSession) {
	notifications := session.ClientNotifications()
	for {
		select {
		case <-t.done:
			return
		case n, ok := <-notifications:
			if !ok {
				return
			}
			t.notifyMu.RLock()
			handler := t.onNotification
			t.notifyMu.RUnlock()
			if handler != nil {
				handler(n)
			}
		}
	}
}

// SendRequest sends request to the upstream's server in the session.
func (t *inProcessTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	msg, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	t.mu.Lock()
	session := t.session
	t.mu.Unlock()
	if session != nil {
		ctx = t.srv.WithContext(ctx, session)
	}
	return inProcessResponse(t.srv.HandleMessage(ctx, msg))
}

// inProcessResponse is the response mcp-go's in-process transport makes
// of answer by encoding it and decoding it again (see inProcessTransport).
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

// SendNotification sends notification to the upstream's server; as with
// mcp-go's transport, it carries no session.
func (t *inProcessTransport) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	msg, err := json.Marshal(notification)
	if err != nil {
		return fmt.Errorf("encoding the notification: %w", err)
	}
	t.srv.HandleMessage(ctx, msg)
	return nil
}

func (t *inProcessTransport) SetNotificationHandler(handler func(notification mcp.JSONRPCNotification)) {
	t.notifyMu.Lock()
	defer t.notifyMu.Unlock()
	t.onNotification = handler
}

// Close stops the notifications and unregisters the session.
func (t *inProcessTransport) Close() error {
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

func (t *inProcessTransport) GetSessionId() string { return "" }
