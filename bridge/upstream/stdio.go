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
	"os"
	"sync"
	"time"

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
// goroutine (whichever reads, one at a time: see lead), in order; a
// server's request goes to the client's request handler on a goroutine
// of its own (through refuseUnsupported); a line
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

	mu        sync.Mutex // guards pending, onRequest, ctx, started and the reading below
	pending   map[idKey]chan *transport.JSONRPCResponse
	onRequest transport.RequestHandler
	ctx       context.Context // Start's: the server's requests are served in it
	started   bool
	answered  bool // an answer was handed out since the reader last checked (letGo)

	// Who reads stdout (see lead): one goroutine at a time, the reader
	// goroutine or a caller reading its own answer (the leader), or,
	// between calls, for up to handBackAfter, nobody.
	//
	// setDeadline, if set (LeadWith), sets stdout's read deadline: a
	// caller may read its own answer only with it, since it is how a
	// leader blocked in a read is interrupted (its context ends, or the
	// transport is closed).
	setDeadline func(time.Time) error
	reading     bool          // someone holds the reading
	wake        chan struct{} // hands the reading to the reader goroutine
	idle        *time.Timer   // hands it there after handBackAfter with nobody reading
	// handBackAfter is the constant handBackAfter but in tests of the
	// leader's reading, which set it long.
	handBackAfter time.Duration
	leader        uint64 // the leader's number, 0 for none
	leaders       uint64 // leaders so far, to number them
	interrupted   bool   // the leader's read deadline is set

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
	t := &StdioTransport{lines: lines, out: out, logger: slog.Default(),
		pending: map[idKey]chan *transport.JSONRPCResponse{}, ctx: context.Background(), done: make(chan struct{}),
		wake: make(chan struct{}, 1), handBackAfter: handBackAfter}
	t.idle = time.AfterFunc(time.Hour, t.handBack)
	t.idle.Stop()
	return t
}

// LeadWith lets a caller read its own answer from stdout (see lead):
// setDeadline sets the read deadline of the file lines reads, as
// os.File.SetReadDeadline does. It is called before Start, and only for
// a file the deadline works on (a pipe in Go's poller).
func (t *StdioTransport) LeadWith(setDeadline func(time.Time) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setDeadline = setDeadline
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
	if t.setDeadline != nil {
		t.idle.Reset(t.handBackAfter) // the first request may read its answer itself
	} else {
		t.reading = true
		t.wake <- struct{}{}
	}
	go t.read()
	return nil
}

// read handles each line of the server's stdout while it holds the
// reading, until stdout ends, then ends the transport. A last line
// without its newline is dropped, as mcp-go drops it. Having handed out
// an answer with no other request waiting, it lets go of the reading
// (see lead), and waits for it again.
func (t *StdioTransport) read() {
	defer t.end()
	for {
		select {
		case <-t.wake:
		case <-t.done:
			return
		}
		for {
			line, err := t.lines.Line()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Only a leader's reads are interrupted, and the deadline
				// is cleared before it lets go; should one be left, clear it.
				_ = t.setDeadline(time.Time{})
				continue
			}
			if !t.handleLine(line, err) {
				return
			}
			if t.letGo() {
				break
			}
		}
	}
}

// handleLine handles one line read from stdout with its error, as read
// does: false when stdout has ended (or the transport was closed) and
// nothing more is to be read.
func (t *StdioTransport) handleLine(line []byte, err error) bool {
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, fs.ErrClosed) {
			t.logger.Error("Error reading from stdout", "err", err)
		}
		return false
	}
	select {
	case <-t.done: // closed: what is left is nobody's
		return false
	default:
	}
	t.handle(bytes.TrimRight(line, "\r\n"))
	return true
}

// letGo is the reader goroutine letting go of the reading once it has
// handed out an answer (answered), no request waits for another, and no
// more is read already: the next caller reads its own answer (see lead),
// and a message that comes before it is read by the reader goroutine
// again after handBackAfter.
func (t *StdioTransport) letGo() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.answered || t.setDeadline == nil || len(t.pending) > 0 || t.lines.Buffered() {
		t.answered = false
		return false
	}
	t.answered = false
	t.reading = false
	t.idle.Reset(t.handBackAfter)
	return true
}

// handBack gives the reading back to the reader goroutine if nobody has
// taken it: a notification or a server's request between calls is read
// within handBackAfter.
func (t *StdioTransport) handBack() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reading {
		t.reading = true
		t.wake <- struct{}{}
	}
}

// handBackAfter is how long stdout may go unread between calls, when
// the last call read its own answer (see lead): longer than the pause
// between the calls of an agent that calls tools one after another, and
// short next to how long a server waits for the answer to its request.
const handBackAfter = 2 * time.Millisecond

// end ends the transport: requests in flight and new ones fail, and a
// leader blocked reading stdout is interrupted.
func (t *StdioTransport) end() {
	t.doneOnce.Do(func() {
		close(t.done)
		t.idle.Stop()
		t.mu.Lock()
		defer t.mu.Unlock()
		t.interruptLeader(t.leader)
	})
}

// ended reports whether the transport has ended.
func (t *StdioTransport) ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// interruptLeader interrupts leader n's read of stdout, if it still
// reads: the read ends with os.ErrDeadlineExceeded.
func (t *StdioTransport) interruptLeader(n uint64) {
	if n != 0 && t.leader == n && !t.interrupted {
		t.interrupted = true
		_ = t.setDeadline(time.Now())
	}
}

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
	t.answered = t.answered || ok
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
	var leader uint64
	if !t.reading && t.started && t.setDeadline != nil && !t.ended() {
		// Nobody reads: this caller reads its own answer (see lead). Past
		// the end's check here, end interrupts its read.
		t.idle.Stop()
		t.reading = true
		t.leaders++
		leader = t.leaders
		t.leader = leader
	}
	t.mu.Unlock()
	forget := func() {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
	}
	if err := t.write(msg); err != nil {
		forget()
		if leader != 0 {
			t.passOn(leader)
		}
		return nil, fmt.Errorf("failed to write request: %w", err)
	}
	if leader != 0 {
		return t.lead(ctx, leader, key, ch)
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

// lead reads stdout until the answer to the request keyed key comes to
// ch, handling every message before it as the reader goroutine would
// (notifications in order, on this goroutine; answers to other requests
// handed to their callers), then lets go of the reading (see passOn).
// Its context ending, or the transport closing, interrupts its read with
// a read deadline; the part of a line read by then is kept for the next
// reader (BoundedLines.Line).
//
// Why: with the reader goroutine reading every answer, a call over stdio
// woke two goroutines for it: the reader, on the answer, and the caller,
// readied by the reader's hand-over on ch. Readying a goroutine with the
// other core idle also wakes a thread to look for work, which finds none.
// A caller that reads its answer itself is woken once, by the poller.
// The reader goroutine still reads whenever two calls are in flight, and
// between calls (see handBack), so a server's messages are not left
// unread for more than handBackAfter (#25).
func (t *StdioTransport) lead(ctx context.Context, leader uint64, key idKey, ch chan *transport.JSONRPCResponse) (*transport.JSONRPCResponse, error) {
	defer t.passOn(leader)
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.interruptLeader(leader)
		})
		defer stop()
	}
	for {
		select {
		case resp := <-ch:
			t.slots.Put(ch)
			return resp, nil
		default:
		}
		line, err := t.lines.Line()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			var ended error
			select {
			case <-t.done:
				ended = transport.ErrTransportClosed
			default:
				ended = ctx.Err()
			}
			t.mu.Lock()
			if ended != nil {
				delete(t.pending, key)
			} else if t.interrupted { // not set for this leader: clear it
				t.interrupted = false
				_ = t.setDeadline(time.Time{})
			}
			t.mu.Unlock()
			if ended != nil {
				return nil, ended
			}
			continue
		}
		if !t.handleLine(line, err) {
			t.end()
			select {
			case resp := <-ch: // an answer may have come just before the end
				t.slots.Put(ch)
				return resp, nil
			default:
			}
			t.mu.Lock()
			delete(t.pending, key)
			t.mu.Unlock()
			return nil, transport.ErrTransportClosed
		}
	}
}

// passOn ends leader's reading: a read deadline set to interrupt it is
// cleared, and the reading goes to the reader goroutine at once when
// another request waits for its answer or more is read already, else
// when nobody has taken it within handBackAfter (see handBack).
func (t *StdioTransport) passOn(leader uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leader != leader {
		return
	}
	t.leader = 0
	if t.interrupted {
		t.interrupted = false
		_ = t.setDeadline(time.Time{})
	}
	t.answered = false
	if len(t.pending) > 0 || t.lines.Buffered() {
		t.wake <- struct{}{}
		return
	}
	t.reading = false
	t.idle.Reset(t.handBackAfter)
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
