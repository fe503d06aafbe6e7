package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// drainTimeout bounds how long end of input waits for unanswered requests.
const drainTimeout = 30 * time.Second

// maxLineBytes bounds one buffered JSON-RPC line in the tracker.
const maxLineBytes = 16 << 20

// inflight tracks JSON-RPC requests read from stdin that have no response
// on stdout yet.
//
// mcp-go's stdio server stops its tool-call workers as soon as stdin ends,
// dropping calls still queued, so `printf '...' | demo-server math` would
// lose its last answers. Holding back end-of-input until every request is
// answered makes piped, scripted use behave like a real client session.
type inflight struct {
	ctx context.Context

	mu      sync.Mutex
	pending map[string]bool
	inBuf   []byte
	outBuf  []byte
}

func newInflight(ctx context.Context) *inflight {
	return &inflight{ctx: ctx, pending: map[string]bool{}}
}

// rpcEnvelope is the part of a JSON-RPC message the tracker needs.
type rpcEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// idKey normalizes a JSON-RPC id so 2 and 2.0 match but "2" and 2 do not.
func idKey(raw json.RawMessage) (string, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return "", false
	}
	return fmt.Sprintf("%T:%v", v, v), true
}

// lines appends p to buf and calls f with every complete line, keeping the
// remainder. A line longer than maxLineBytes is dropped from tracking.
func lines(buf *[]byte, p []byte, f func([]byte)) {
	*buf = append(*buf, p...)
	for {
		i := bytes.IndexByte(*buf, '\n')
		if i < 0 {
			if len(*buf) > maxLineBytes {
				*buf = (*buf)[:0]
			}
			return
		}
		f((*buf)[:i])
		*buf = (*buf)[i+1:]
	}
}

// reader wraps stdin: it records each request's id and, at end of input,
// waits until all of them are answered (or ctx ends, or drainTimeout).
func (t *inflight) reader(r io.Reader) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		n, err := r.Read(p)
		t.mu.Lock()
		lines(&t.inBuf, p[:n], func(line []byte) {
			var e rpcEnvelope
			if json.Unmarshal(line, &e) != nil || e.Method == "" {
				return
			}
			if k, ok := idKey(e.ID); ok {
				t.pending[k] = true
			}
		})
		t.mu.Unlock()
		if err == io.EOF {
			t.wait()
		}
		return n, err
	})
}

// writer wraps stdout: it clears the id of every response written.
func (t *inflight) writer(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		t.mu.Lock()
		lines(&t.outBuf, p, func(line []byte) {
			var e rpcEnvelope
			if json.Unmarshal(line, &e) != nil || e.Method != "" {
				return
			}
			if k, ok := idKey(e.ID); ok {
				delete(t.pending, k)
			}
		})
		t.mu.Unlock()
		return w.Write(p)
	})
}

// outstanding is the number of unanswered requests.
func (t *inflight) outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// wait polls until no request is outstanding. Polling keeps this simple;
// it only runs once, at end of input.
func (t *inflight) wait() {
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for t.outstanding() > 0 {
		select {
		case <-t.ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
