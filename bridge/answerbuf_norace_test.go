//go:build !race

package bridge

import (
	"runtime"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// raceEnabled says the tests run under the race detector.
const raceEnabled = false

// checkAnswerBufferReused fails t unless encoding resp, an answer of size
// bytes, and handing the bytes back allocates far fewer bytes than the
// answer holds. Not under the race detector, whose sync.Pool drops much of
// what it is given on purpose.
func checkAnswerBufferReused(t *testing.T, resp mcp.JSONRPCMessage, size int) {
	t.Helper()
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		b, _ := encodeAnswer(resp)
		recycleAnswer(b)
	}
	runtime.ReadMemStats(&after)
	// A quarter of the answer leaves room for a collection, which
	// empties the pool.
	if perAnswer := (after.TotalAlloc - before.TotalAlloc) / n; perAnswer > uint64(size/4) {
		t.Errorf("%d bytes allocated an answer of %d bytes, want the buffer reused", perAnswer, size)
	}
}
