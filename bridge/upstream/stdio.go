package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/jsonscan"
)

// StdioTransport is an mcp-go client transport over a stdio server's
// pipes: the gateway's own, in place of mcp-go's transport.NewIO, with
// mcp-go's client.Client on top as before.
//
// Why: mcp-go's stdio transport reads each line as a string and decodes it
// twice, once to tell an answer from a notification or a request, and once
// more whole, with encoding/json's reflection, to hand the answer's result
// on as raw bytes; and it encodes each request by reflection. That was
// about a tenth of the gateway's CPU a call over stdio (#25). This one
// reads an answer to a request in one pass that copies nothing but its
// result (readAnswer), writes a request directly (appendRequest), and
// takes lines whole from the stdout bound (BoundedLines.Line), with no
// second buffer. Every other message (a notification, a server's request,
// an error, anything unusual) is read as mcp-go reads it.
//
// It keeps what mcp-go's transport does, message for message:
// notifications are handed to the client's handler on the reading
// goroutine, in order; a server's request goes to the client's request
// handler on a goroutine of its own (through refuseUnsupported); a line
// that is not JSON is skipped; an answer nobody awaits is dropped; the
// end of stdout (the child exited, or the bound cut it) ends every request
// in flight with transport.ErrTransportClosed. TestStdioTransportMatchesMCPGo
// holds the two to the same results on the same lines.
type StdioTransport struct {
	notifier
	lines *BoundedLines
	out   io.WriteCloser
	// logger gets what mcp-go's transport logs: a failed answer to a
	// server's request.
	logger *slog.Logger

	writeMu sync.Mutex // one message at a time on out

	// slots keeps the channels a request waits for its answer on: one
	// made for each request was an allocation a call. A channel goes back
	// only once its one answer is read from it; one left by a request
	// that ended first (its answer may still be sent) is dropped.
	slots sync.Pool

	mu        sync.Mutex // guards pending, onRequest, ctx and started
	pending   map[idKey]chan *transport.JSONRPCResponse
	onRequest transport.RequestHandler
	ctx       context.Context // Start's: the server's requests are served in it
	started   bool

	done      chan struct{} // closed when stdout ends or at Close
	doneOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

var _ transport.BidirectionalInterface = (*StdioTransport)(nil)

// NewStdioTransport returns a transport that reads the server's messages
// from lines (its bounded stdout) and writes the client's to out (its
// stdin), which Close closes.
func NewStdioTransport(lines *BoundedLines, out io.WriteCloser) *StdioTransport {
	return &StdioTransport{lines: lines, out: out, logger: slog.Default(),
		pending: map[idKey]chan *transport.JSONRPCResponse{}, ctx: context.Background(), done: make(chan struct{})}
}

// Start starts reading the server's messages; starting again does
// nothing. ctx is the one the server's requests are served in.
func (t *StdioTransport) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return nil
	}
	t.started, t.ctx = true, ctx
	go t.read()
	return nil
}

// read handles each line of the server's stdout until it ends, then ends
// the transport. A last line without its newline is dropped, as mcp-go
// drops it.
func (t *StdioTransport) read() {
	defer t.end()
	for {
		line, err := t.lines.Line()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, fs.ErrClosed) {
				t.logger.Error("Error reading from stdout", "err", err)
			}
			return
		}
		select {
		case <-t.done: // closed: what is left is nobody's
			return
		default:
		}
		t.handle(bytes.TrimRight(line, "\r\n"))
	}
}

// end ends the transport: requests in flight and new ones fail.
func (t *StdioTransport) end() { t.doneOnce.Do(func() { close(t.done) }) }

// handle hands one message to whoever it is for.
func (t *StdioTransport) handle(line []byte) {
	if resp, ok := readAnswer(line); ok {
		t.answer(resp)
		return
	}
	// What mcp-go's readResponses does, decode for decode.
	var base struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *mcp.RequestId `json:"id,omitempty"`
		Method  string         `json:"method,omitempty"`
	}
	if json.Unmarshal(line, &base) != nil {
		return
	}
	if base.Method != "" && base.ID == nil {
		var n mcp.JSONRPCNotification
		if json.Unmarshal(line, &n) == nil {
			t.notify(n)
		}
		return
	}
	if base.Method != "" {
		var req transport.JSONRPCRequest
		if json.Unmarshal(line, &req) == nil {
			t.serveRequest(req)
			return
		}
	}
	var resp transport.JSONRPCResponse
	if json.Unmarshal(line, &resp) == nil {
		t.answer(&resp)
	}
}

// answer hands resp to the request it answers, if one awaits it.
func (t *StdioTransport) answer(resp *transport.JSONRPCResponse) {
	key := keyOf(resp.ID)
	t.mu.Lock()
	ch, ok := t.pending[key]
	delete(t.pending, key)
	t.mu.Unlock()
	if ok {
		ch <- resp // buffered: each request gets one answer
	}
}

// readAnswer reads line as a result to a request when it is the plain
// case, an object of exactly jsonrpc (a string), id (a string or a number)
// and result (an object), each once, with keys as written here: in one
// pass over the line, copying only the result. ok is false for anything
// else, which handle reads as mcp-go does. FuzzReadAnswer holds it to
// json.Unmarshal.
func readAnswer(line []byte) (resp *transport.JSONRPCResponse, ok bool) {
	if !json.Valid(line) {
		return nil, false
	}
	const (
		seenJSONRPC = 1 << iota
		seenID
		seenResult
	)
	var r transport.JSONRPCResponse
	seen := 0
	ok = jsonscan.Members(line, func(key, value []byte) bool {
		bit := 0
		switch string(key) {
		case "jsonrpc":
			bit = seenJSONRPC
			var plain bool
			switch {
			case string(value) == `"2.0"`:
				r.JSONRPC = mcp.JSONRPC_VERSION // no copy of what every answer has
			case value[0] != '"':
				return false
			default:
				if r.JSONRPC, plain = jsonscan.String(value); !plain {
					return false
				}
			}
		case "id":
			bit = seenID
			switch {
			case value[0] == '"':
				id, plain := jsonscan.String(value)
				if !plain {
					return false
				}
				r.ID = mcp.NewRequestId(id)
			case value[0] == '-' || value[0] >= '0' && value[0] <= '9':
				if r.ID.UnmarshalJSON(value) != nil {
					return false
				}
			default:
				return false // null: mcp-go's
			}
		case "result":
			bit = seenResult
			if value[0] != '{' {
				return false
			}
			r.Result = append(json.RawMessage(nil), value...)
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok || seen != seenJSONRPC|seenID|seenResult {
		return nil, false
	}
	return &r, true
}

// serveRequest answers a server's request as mcp-go's transport does:
// "no request handler" at once without a handler, else the handler's
// answer (its error as -32603), on a goroutine of its own, in Start's
// context.
func (t *StdioTransport) serveRequest(req transport.JSONRPCRequest) {
	t.mu.Lock()
	handler, ctx := t.onRequest, t.ctx
	t.mu.Unlock()
	if handler == nil {
		t.respond(transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "No request handler configured", nil))
		return
	}
	go func() {
		if err := ctx.Err(); err != nil {
			t.respond(transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil))
			return
		}
		resp, err := handler(ctx, req)
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
		}
		if resp != nil {
			t.respond(resp)
		}
	}()
}

// respond writes the client's answer to a server's request.
func (t *StdioTransport) respond(resp *transport.JSONRPCResponse) {
	b, err := json.Marshal(resp)
	if err == nil {
		err = t.write(append(b, '\n'))
	}
	if err != nil {
		t.logger.Error("Error writing response", "err", err)
	}
}

// write writes one message, whole.
func (t *StdioTransport) write(msg []byte) error {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	_, err := t.out.Write(msg)
	return err
}

// SendRequest writes request and waits for its answer, the end of ctx,
// or the end of the transport.
func (t *StdioTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	select {
	case <-t.done:
		return nil, transport.ErrTransportClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	size := 96 + len(request.Method)
	if raw, ok := request.Params.(json.RawMessage); ok {
		size += len(raw)
	}
	msg, err := appendRequest(make([]byte, 0, size), request)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	key := keyOf(request.ID)
	ch := t.slot()
	t.mu.Lock()
	t.pending[key] = ch
	t.mu.Unlock()
	forget := func() {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
	}
	if err := t.write(msg); err != nil {
		forget()
		return nil, fmt.Errorf("failed to write request: %w", err)
	}
	select {
	case resp := <-ch:
		t.slots.Put(ch)
		return resp, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-t.done:
		// An answer may have come just before the end.
		select {
		case resp := <-ch:
			t.slots.Put(ch)
			return resp, nil
		default:
		}
		forget()
		return nil, transport.ErrTransportClosed
	}
}

// slot is a channel for one answer, from slots or new.
func (t *StdioTransport) slot() chan *transport.JSONRPCResponse {
	if ch, ok := t.slots.Get().(chan *transport.JSONRPCResponse); ok {
		return ch
	}
	return make(chan *transport.JSONRPCResponse, 1)
}

// idKey is a request id as a key of pending: the ids RequestId.String
// tells apart, told apart without building that string twice a call.
type idKey struct {
	kind byte // 's' string, 'i' integral number, 'f' other number, 'o' anything else
	n    int64
	f    float64
	s    string
}

// keyOf is id's key: equal for two ids exactly when their String is.
func keyOf(id mcp.RequestId) idKey {
	switch v := id.Value().(type) {
	case string:
		return idKey{kind: 's', s: v}
	case int64:
		return idKey{kind: 'i', n: v}
	case float64:
		if v == float64(int64(v)) {
			return idKey{kind: 'i', n: int64(v)}
		}
		if !math.IsNaN(v) { // NaN is never equal to itself, as a key
			return idKey{kind: 'f', f: v}
		}
	}
	return idKey{kind: 'o', s: id.String()}
}

// appendRequest appends request to buf as json.Marshal writes it, and the
// newline that ends a message: the envelope directly, the params (raw
// bytes from the gateway, compacted as json.Marshal compacts them)
// through json.Marshal. FuzzAppendRequest holds it to json.Marshal.
func appendRequest(buf []byte, request transport.JSONRPCRequest) ([]byte, error) {
	id, err := request.ID.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var params []byte
	if request.Params != nil {
		if params, err = json.Marshal(request.Params); err != nil {
			return nil, err
		}
	}
	buf = append(buf, `{"jsonrpc":`...)
	buf = jsonscan.AppendString(buf, request.JSONRPC)
	buf = append(buf, `,"id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"method":`...)
	buf = jsonscan.AppendString(buf, request.Method)
	if params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, "}\n"...), nil
}

// SendNotification writes notification.
func (t *StdioTransport) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	select {
	case <-t.done:
		return transport.ErrTransportClosed
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	b, err := json.Marshal(notification)
	if err != nil {
		return fmt.Errorf("failed to marshal notification: %w", err)
	}
	if err := t.write(append(b, '\n')); err != nil {
		return fmt.Errorf("failed to write notification: %w", err)
	}
	return nil
}

// SetRequestHandler sets the handler of the server's requests, with
// refuseUnsupported around it.
func (t *StdioTransport) SetRequestHandler(handler transport.RequestHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onRequest = refuseUnsupported(handler)
}

// Close ends the transport and closes the server's stdin, once; the
// server's stdout is its owner's to close (child.stop).
func (t *StdioTransport) Close() error {
	t.end()
	t.closeOnce.Do(func() {
		if err := t.out.Close(); err != nil {
			t.closeErr = fmt.Errorf("failed to close stdin: %w", err)
		}
	})
	return t.closeErr
}

// GetSessionId is "": stdio has no session id.
func (t *StdioTransport) GetSessionId() string { return "" }

// notifier is the client's notification handler, for the gateway's own
// transports: notifications before it is set are dropped.
type notifier struct {
	mu sync.RWMutex
	fn func(mcp.JSONRPCNotification)
}

// SetNotificationHandler sets the handler of the server's notifications.
func (n *notifier) SetNotificationHandler(handler func(notification mcp.JSONRPCNotification)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fn = handler
}

// notify hands msg to the handler, if one is set.
func (n *notifier) notify(msg mcp.JSONRPCNotification) {
	n.mu.RLock()
	fn := n.fn
	n.mu.RUnlock()
	if fn != nil {
		fn(msg)
	}
}
