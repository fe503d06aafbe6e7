package bridge

// An in-process client transport to the gateway.
//
// Why it exists: mcp-go's transport.InProcessTransport hands every request
// to MCPServer.HandleMessage, so a client in the same process (the CLI's
// one-shot commands, the tests, the in-process benchmarks) never went
// through the front every real client goes through: the tools/call fast
// path (fastpath.go) first, mcp-go for everything else. This transport
// does what mcp-go's does (a session registered at Start that carries the
// server's notifications and requests to the client, the request
// marshalled as a client would send it, the answer handed back as a
// JSON-RPC response), with g.handleMessage in place of HandleMessage.
//
// One thing it does more cheaply than mcp-go's: mcp-go encodes the
// answer and decodes the whole message again to give the client the
// result as raw bytes. A tool's plain answer (the one appendPlainAnswer
// writes, as stdio sends it) is encoded once here and its result handed
// over as the bytes it was encoded to; the id is the one decoding would
// give. Every other answer takes mcp-go's round trip. The client gets the
// same response either way: TestInProcessTransportMatchesMCPGo holds the
// two transports to the same answers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ClientHandlers answer the requests the gateway sends an in-process
// client: sampling, elicitation and the roots list. A nil handler is
// none: the client does not declare the capability, and the gateway's
// request fails as mcp-go's in-process session fails it.
type ClientHandlers struct {
	Sampling    client.SamplingHandler
	Elicitation client.ElicitationHandler
	Roots       client.RootsHandler
}

// InProcessClient returns an MCP client of g in this process, not yet
// started: what client.NewInProcessClientWithOptions(g.MCPServer(), ...)
// returns, with h's handlers among the options, but on the gateway's own
// transport (InProcessTransport), so that its requests go through the
// front every real client goes through. opts are further client options;
// handlers belong in h.
func (g *Gateway) InProcessClient(h ClientHandlers, opts ...client.ClientOption) *client.Client {
	// The handler options make the client declare the capabilities, as
	// they do for mcp-go's in-process client.
	if h.Sampling != nil {
		opts = append(opts, client.WithSamplingHandler(h.Sampling))
	}
	if h.Elicitation != nil {
		opts = append(opts, client.WithElicitationHandler(h.Elicitation))
	}
	if h.Roots != nil {
		opts = append(opts, client.WithRootsHandler(h.Roots))
	}
	return client.NewClient(g.InProcessTransport(h), opts...)
}

// InProcessTransport is an mcp-go client transport to a gateway in the
// same process (see the file's header).
type InProcessTransport struct {
	g         *Gateway
	sessionID string
	// The session's handlers, as mcp-go's in-process client wraps a
	// client's: a nil result is an error.
	sampling    server.SamplingHandler
	elicitation server.ElicitationHandler
	roots       server.RootsHandler

	mu      sync.Mutex // guards session, started and closed
	session *server.InProcessSession
	started bool
	closed  bool

	notifyMu       sync.RWMutex
	onNotification func(mcp.JSONRPCNotification)

	done      chan struct{}
	closeOnce sync.Once
}

var _ transport.Interface = (*InProcessTransport)(nil)

// InProcessTransport returns a transport to g for one client whose
// handlers are h.
func (g *Gateway) InProcessTransport(h ClientHandlers) *InProcessTransport {
	t := &InProcessTransport{g: g, sessionID: g.srv.GenerateInProcessSessionID(), done: make(chan struct{})}
	if h.Sampling != nil {
		t.sampling = samplingHandler{h.Sampling}
	}
	if h.Elicitation != nil {
		t.elicitation = elicitationHandler{h.Elicitation}
	}
	if h.Roots != nil {
		t.roots = rootsHandler{h.Roots}
	}
	return t
}

// Start registers the client's session with the gateway's server and
// starts handing the server's notifications to the client. Starting again
// does nothing; a closed transport does not start.
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
	session := server.NewInProcessSessionWithHandlers(t.sessionID, t.sampling, t.elicitation, t.roots)
	if err := t.g.srv.RegisterSession(ctx, session); err != nil {
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
			t.notifyMu.RLock()
			handler := t.onNotification
			t.notifyMu.RUnlock()
			if handler != nil {
				handler(n)
			}
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
	return t.g.srv.WithContext(ctx, session)
}

// SendRequest sends request through the gateway's front and returns its
// answer.
func (t *InProcessTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	msg, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return inProcessResponse(t.g.handleMessage(t.withSession(ctx), msg))
}

// SendNotification sends notification to the gateway. Unlike mcp-go's
// in-process transport, it carries the client's session, as a
// notification over stdio or HTTP does, so that a notifications/cancelled
// finds the request it names.
func (t *InProcessTransport) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	msg, err := json.Marshal(notification)
	if err != nil {
		return fmt.Errorf("encoding the notification: %w", err)
	}
	t.g.handleMessage(t.withSession(ctx), msg)
	return nil
}

// SetNotificationHandler sets the handler of the server's notifications;
// notifications before it is set are dropped.
func (t *InProcessTransport) SetNotificationHandler(handler func(notification mcp.JSONRPCNotification)) {
	t.notifyMu.Lock()
	defer t.notifyMu.Unlock()
	t.onNotification = handler
}

// Close stops the notifications and unregisters the client's session.
func (t *InProcessTransport) Close() error {
	t.mu.Lock()
	t.closed = true
	session := t.session
	t.mu.Unlock()
	t.closeOnce.Do(func() { close(t.done) })
	if session != nil {
		t.g.srv.UnregisterSession(context.Background(), t.sessionID)
	}
	return nil
}

// GetSessionId is "", as for mcp-go's in-process transport: the session
// is no HTTP session the client would name.
func (t *InProcessTransport) GetSessionId() string { return "" }

// resultKey is where a response's result starts in its encoding. It
// cannot occur in the id before it: a string id has its quotes escaped.
var resultKey = []byte(`,"result":`)

// inProcessResponse is the response a client gets for msg, the gateway's
// answer: what mcp-go's in-process transport makes of it by encoding it
// and decoding the bytes again, with the result as raw bytes. A plain
// tool result is encoded once (see the file's header).
func inProcessResponse(msg mcp.JSONRPCMessage) (*transport.JSONRPCResponse, error) {
	if r, ok := msg.(mcp.JSONRPCResponse); ok && r.JSONRPC == mcp.JSONRPC_VERSION {
		if res, ok := r.Result.(*mcp.CallToolResult); ok && plainResult(res) {
			if id, ok := decodedID(r.ID); ok {
				line, err := appendPlainAnswer(r.ID, res)
				if err != nil {
					return nil, fmt.Errorf("encoding the answer: %w", err)
				}
				// line is {"jsonrpc":"2.0","id":…,"result":{…}}\n
				at := bytes.Index(line, resultKey)
				result := line[at+len(resultKey) : len(line)-len("}\n")]
				return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: result}, nil
			}
		}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encoding the answer: %w", err)
	}
	var resp transport.JSONRPCResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	return &resp, nil
}

// decodedID is id as mcp.RequestId decodes its encoding: a string stays
// itself, a number is an int64 when it is one and a float64 otherwise.
// ok is false for an id of another kind, which the caller leaves to the
// decoder.
func decodedID(id mcp.RequestId) (mcp.RequestId, bool) {
	switch v := id.Value().(type) {
	case string:
		// From a decoded message, so valid UTF-8, which encodes and
		// decodes to itself.
		return id, true
	case float64:
		// Go writes a float64 in the fewest digits that read back as
		// the same value; RequestId then makes it an int64 when it is one.
		if v == float64(int64(v)) {
			return mcp.NewRequestId(int64(v)), true
		}
		return id, true
	}
	return id, false
}

// The wrappers mcp-go's client package puts around an in-process client's
// handlers: a handler that returns neither a result nor an error fails
// the request.

type samplingHandler struct{ h client.SamplingHandler }

func (w samplingHandler) CreateMessage(ctx context.Context, request mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	result, err := w.h.CreateMessage(ctx, request)
	if err == nil && result == nil {
		return nil, fmt.Errorf("sampling handler returned no result")
	}
	return result, err
}

type elicitationHandler struct{ h client.ElicitationHandler }

func (w elicitationHandler) Elicit(ctx context.Context, request mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	result, err := w.h.Elicit(ctx, request)
	if err == nil && result == nil {
		return nil, fmt.Errorf("elicitation handler returned no result")
	}
	return result, err
}

type rootsHandler struct{ h client.RootsHandler }

func (w rootsHandler) ListRoots(ctx context.Context, request mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	result, err := w.h.ListRoots(ctx, request)
	if err == nil && result == nil {
		return nil, fmt.Errorf("roots handler returned no result")
	}
	return result, err
}
