package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// The stdio downstream bounds one message as HTTP does
// (serve.max_body_bytes), with upstream.BoundedLines below mcp-go: a line
// past the bound is dropped as it streams by, without being held, and
// answered with a JSON-RPC error; the next line is read as usual.

// lockedWriter makes each Write to w whole with respect to the others:
// mcp-go writes every message with one Write, and so do the errors for
// dropped lines, so no two messages interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// sent, if set, sees every message once it is written; answered, if
	// set, every answer written by writeAnswer (which sent does not see).
	sent     func(msg []byte)
	answered func(id json.RawMessage)
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.sent != nil {
		l.sent(p)
	}
	return n, err
}

// writeAnswer writes p, the answer to the request with id id, as Write
// does; answered gets the id as it is, where sent would read it back from
// the message.
func (l *lockedWriter) writeAnswer(p []byte, id json.RawMessage) (int, error) {
	if l.answered == nil {
		return l.Write(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	l.answered(id)
	return n, err
}

// tooLargeAnswer is the JSON-RPC error line for a message over limit.
func tooLargeAnswer(id any, limit int64) []byte {
	return upstream.ErrorLine(id, mcp.INVALID_REQUEST, tooLargeMessage(limit))
}

// tooLargeMessage says a message was over serve.max_body_bytes, on stdio
// and over HTTP alike.
func tooLargeMessage(limit int64) string {
	return fmt.Sprintf("message dropped: it is longer than serve.max_body_bytes (%d bytes); send smaller messages", limit)
}

// heldEOF holds back the end of the client's input: when it ends, eof is
// closed and hold blocks until release. mcp-go's stdio server cancels
// every request in flight as soon as it reads the end of its input; held
// back, the end comes only once the calls have had their grace.
type heldEOF struct {
	eof      chan struct{} // closed when the input has ended
	released chan struct{} // closed by release
	endOnce  sync.Once
	relOnce  sync.Once
}

func newHeldEOF() *heldEOF {
	return &heldEOF{eof: make(chan struct{}), released: make(chan struct{})}
}

// hold notes the end of the input and waits for release.
func (h *heldEOF) hold() {
	h.endOnce.Do(func() { close(h.eof) })
	<-h.released
}

// release lets hold return.
func (h *heldEOF) release() { h.relOnce.Do(func() { close(h.released) }) }

// pendingCalls counts the tool calls read from the client and not yet
// answered, from the line that carries the request to the line that
// carries its answer: a call that mcp-go has queued but not started yet is
// pending too (the gateway's own count of running calls misses it).
type pendingCalls struct {
	mu      sync.Mutex
	ids     map[string]int // id -> calls read with it and not answered
	pending upstream.Activity
}

func newPendingCalls() *pendingCalls { return &pendingCalls{ids: map[string]int{}} }

// read notes a line read from the client.
func (c *pendingCalls) read(line []byte) { c.readParsed(line, parseMessage(line)) }

// readParsed notes a line read from the client, msg being parseMessage's
// reading of it: the stdio guard has parsed it already, and a second
// decode of every line was about 3% of the gateway's CPU a call (#25).
func (c *pendingCalls) readParsed(line []byte, msg envelope) {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		return // cheap, and as before: a method written with escapes counts only next to the plain spelling
	}
	if !msg.isToolsCall() {
		return
	}
	key, ok := idKey(msg.id)
	if !ok {
		return
	}
	c.mu.Lock()
	c.ids[key]++
	c.mu.Unlock()
	c.pending.Begin()
}

// answered notes a message written to the client: the answer to a
// pending call ends it.
func (c *pendingCalls) answered(msg []byte) {
	c.mu.Lock()
	empty := len(c.ids) == 0
	c.mu.Unlock()
	if empty {
		return
	}
	raw, response := leadingResponseID(msg)
	if !response {
		return
	}
	c.answeredID(raw)
}

// answeredID notes the answer to the request with id raw written to the
// client, for a writer that knows the id (the tools/call fast path)
// without reading it back from the message.
func (c *pendingCalls) answeredID(raw json.RawMessage) {
	key, ok := idKey(raw)
	if !ok {
		return
	}
	c.mu.Lock()
	n, pending := c.ids[key]
	switch {
	case !pending:
	case n > 1:
		c.ids[key] = n - 1
	default:
		delete(c.ids, key)
	}
	c.mu.Unlock()
	if pending {
		c.pending.End()
	}
}

// idKey is a JSON-RPC id in one form whatever its spelling: strings
// quoted, numbers as Go formats them.
func idKey(raw json.RawMessage) (string, bool) {
	// The common ids without a decoder: a string of printable ASCII
	// without escapes, and a number (json.Number's Float64 is ParseFloat).
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') && json.Valid(raw) {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64), true
		}
	}
	if s, ok := plainString(raw); ok {
		return strconv.Quote(s), true
	}
	return decodedIDKey(raw)
}

// decodedIDKey is idKey through a decoder, for any id.
func decodedIDKey(raw json.RawMessage) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var id any
	if d.Decode(&id) != nil {
		return "", false
	}
	switch v := id.(type) {
	case string:
		return strconv.Quote(v), true
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64), true
		}
	}
	return "", false
}

// leadingResponseID reads msg's top-level members up to its id and the
// member after it, without decoding the rest (a result may be large). A
// message with a method is a request to the client, not an answer.
func leadingResponseID(msg []byte) (json.RawMessage, bool) {
	d := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var id json.RawMessage
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return nil, false
		}
		if key == "method" {
			return nil, false
		}
		if id != nil {
			return id, true // the member after id is not method
		}
		var value json.RawMessage
		if err := d.Decode(&value); err != nil {
			return nil, false
		}
		if key == "id" {
			id = value
		}
	}
	return id, id != nil
}
