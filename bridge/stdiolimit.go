package bridge

import (
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
	return upstream.ErrorLine(id, mcp.INVALID_REQUEST,
		fmt.Sprintf("message dropped: it is longer than serve.max_body_bytes (%d bytes); send smaller messages", limit))
}
