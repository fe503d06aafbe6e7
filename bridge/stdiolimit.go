package bridge

import (
	"bufio"
	"fmt"
	"io"
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
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
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

// refusingLines hands mcp-go the lines of r, less the messages that
// refusedMessage refuses (a batch, an id that is an object): those are
// answered on the spot with -32600, as over HTTP, and the session goes on.
type refusingLines struct {
	r      *bufio.Reader
	answer func(line []byte)
	line   []byte // what is left of the current line to hand out
	err    error  // sticky, returned once line is handed out
}

func newRefusingLines(r io.Reader, answer func([]byte)) *refusingLines {
	return &refusingLines{r: bufio.NewReader(r), answer: answer}
}

// Read implements io.Reader.
func (l *refusingLines) Read(p []byte) (int, error) {
	for len(l.line) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadBytes('\n')
		l.err = err
		if why := refusedMessage(line); why != "" {
			l.answer(upstream.ErrorLine(nil, mcp.INVALID_REQUEST, why))
			continue
		}
		l.line = line
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}
