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
// give. Any other result (tools/list among them) is encoded alone, not
// inside its message: the round trip's decoding of the message only
// checked and copied those same bytes, a third of the CPU of an
// in-process tools/list of the bridge's three tools (#25). Errors, and
// ids decodedID leaves to the decoder, take mcp-go's round trip. The
// client gets the same response either way:
// TestInProcessTransportMatchesMCPGo holds the two transports to the same
// answers, and TestInProcessResponseMatchesRoundTrip the responses.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
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
// transport (Gateway.InProcessTransport), so that its requests go through the
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

// InProcessTransport returns an mcp-go client transport to g for one
// client whose handlers are h, in this process: upstream's
// InProcessTransport with g.handleMessage in place of HandleMessage (see
// the file's header), and the client's notifications sent in its session,
// as over stdio or HTTP.
func (g *Gateway) InProcessTransport(h ClientHandlers) *upstream.InProcessTransport {
	o := upstream.InProcessOptions{Handle: g.handleMessage, Respond: inProcessResponse, NotifyInSession: true}
	if h.Sampling != nil {
		o.Sampling = samplingHandler{h.Sampling}
	}
	if h.Elicitation != nil {
		o.Elicitation = elicitationHandler{h.Elicitation}
	}
	if h.Roots != nil {
		o.Roots = rootsHandler{h.Roots}
	}
	return upstream.NewInProcessTransport(g.srv, o)
}

// resultKey is where a response's result starts in its encoding. It
// cannot occur in the id before it: a string id has its quotes escaped.
var resultKey = []byte(`,"result":`)

// inProcessResponse is the response a client gets for msg, the gateway's
// answer: what mcp-go's in-process transport makes of it by encoding it
// and decoding the bytes again, with the result as raw bytes. A result is
// encoded once, alone (see the file's header).
func inProcessResponse(msg mcp.JSONRPCMessage) (*transport.JSONRPCResponse, error) {
	r, ok := msg.(mcp.JSONRPCResponse)
	if !ok || r.JSONRPC != mcp.JSONRPC_VERSION {
		return upstream.RoundTripResponse(msg)
	}
	id, ok := decodedID(r.ID)
	if !ok {
		return upstream.RoundTripResponse(msg)
	}
	if res, ok := r.Result.(*mcp.CallToolResult); ok && plainResult(res) {
		line, err := appendPlainAnswer(nil, r.ID, res)
		if err != nil {
			return nil, fmt.Errorf("encoding the answer: %w", err)
		}
		// line is {"jsonrpc":"2.0","id":…,"result":{…}}\n
		at := bytes.Index(line, resultKey)
		result := line[at+len(resultKey) : len(line)-len("}\n")]
		return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: result}, nil
	}
	// The bytes the message's encoding would hold for its result: a value
	// encodes the same alone as inside a struct field.
	result, err := json.Marshal(r.Result)
	if err != nil {
		return nil, fmt.Errorf("encoding the answer: %w", err)
	}
	return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: result}, nil
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
