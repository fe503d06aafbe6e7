package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// The stdio downstream bounds one message as HTTP does
// (serve.max_body_bytes). mcp-go reads a line whole, without a bound, so a
// client writing one huge line would grow the gateway by as much, and
// nothing else would be read meanwhile. boundedLines sits below it: a line
// past the bound is dropped as it streams by, without being held, and
// answered with a JSON-RPC error; the next line is read as usual.

// stdioReadBuffer is how much of a line is read at once.
const stdioReadBuffer = 64 << 10

// idPrefixBytes is how much of a dropped line is kept to find its id in.
const idPrefixBytes = 4 << 10

// boundedLines yields the lines of r that are at most limit bytes (newline
// included) and calls tooLong, with the line's first bytes, for each that
// is longer.
type boundedLines struct {
	r       *bufio.Reader
	limit   int64
	tooLong func(prefix []byte)
	line    []byte // the current line, as far as not yet read
	err     error  // sticky read error, returned once line is read
}

func newBoundedLines(r io.Reader, limit int64, tooLong func([]byte)) *boundedLines {
	return &boundedLines{r: bufio.NewReaderSize(r, stdioReadBuffer), limit: limit, tooLong: tooLong}
}

// Read implements io.Reader.
func (b *boundedLines) Read(p []byte) (int, error) {
	for len(b.line) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.line, b.err = b.next()
	}
	n := copy(p, b.line)
	b.line = b.line[n:]
	return n, nil
}

// next reads one line of at most limit bytes, dropping (and reporting) the
// longer ones before it.
func (b *boundedLines) next() ([]byte, error) {
	var line []byte
	for {
		chunk, err := b.r.ReadSlice('\n')
		if int64(len(line)+len(chunk)) > b.limit {
			return nil, b.drop(append(line[:min(len(line), idPrefixBytes):min(len(line), idPrefixBytes)], chunk[:min(len(chunk), idPrefixBytes)]...), err)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// drop discards the rest of a line past the limit, reports it, and returns
// the read error that ended it, if any.
func (b *boundedLines) drop(prefix []byte, err error) error {
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = b.r.ReadSlice('\n')
	}
	b.tooLong(prefix)
	return err
}

// leadingID finds the id of a JSON-RPC message from its first bytes, when
// it comes before what was cut off; nil otherwise.
func leadingID(prefix []byte) any {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if key == "id" {
			var id any
			d := json.NewDecoder(bytes.NewReader(value))
			d.UseNumber() // an integer id comes back as written
			if d.Decode(&id) != nil {
				return nil
			}
			switch id.(type) {
			case string, json.Number:
				return id
			}
			return nil
		}
	}
	return nil
}

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
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      id,
		"error": map[string]any{
			"code":    mcp.INVALID_REQUEST,
			"message": fmt.Sprintf("message dropped: it is longer than serve.max_body_bytes (%d bytes); send smaller messages", limit),
		},
	})
	return append(b, '\n')
}
