package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
)

// BoundedLines bounds one line of a JSON-RPC stream: the gateway's stdin
// (serve.max_body_bytes) and each stdio server's stdout
// (max_result_bytes). mcp-go reads a line whole, without a bound, so a
// peer writing one huge line would grow the gateway by as much. A line past
// the bound is dropped as it streams by, without being held; the reader
// goes on with the next line.
type BoundedLines struct {
	r       *bufio.Reader
	limit   int64
	tooLong TooLongFunc
	line    []byte // what is left to hand out: a line, or a replacement
	err     error  // sticky, returned once line is handed out
	// What a read cut short by a read deadline leaves for the next one
	// (see Line): the start of a line, or a line past the limit still
	// being dropped and the replacement to hand out after it.
	partial     []byte
	dropping    bool
	replacement []byte
}

// TooLongFunc is told of a line past the limit as soon as it is, with the
// line's first bytes (enough to find its id in, see LeadingID). It may
// return a line to hand out in its place, once the rest is dropped, or an
// error to stop reading with.
type TooLongFunc func(prefix []byte) (replacement []byte, err error)

// lineChunk is how much of a line is read at once. Each stdio server
// keeps a buffer this size for as long as it runs, so it is small: with
// 25 servers, 64 KiB buffers held 1.6 MB; a longer line takes a few more
// reads of the pipe, which holds 64 KiB at most anyway.
const lineChunk = 16 << 10

// PrefixBytes is how much of a dropped line TooLongFunc is given.
const PrefixBytes = 4 << 10

// NewBoundedLines yields the lines of r that are at most limit bytes,
// newline included, and hands each longer one to tooLong.
func NewBoundedLines(r io.Reader, limit int64, tooLong TooLongFunc) *BoundedLines {
	return &BoundedLines{r: bufio.NewReaderSize(r, lineChunk), limit: limit, tooLong: tooLong}
}

// Read implements io.Reader.
func (b *BoundedLines) Read(p []byte) (int, error) {
	for len(b.line) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.line, b.err = b.next()
	}
	n := copy(p, b.line)
	b.line = b.line[n:]
	if len(b.line) == 0 {
		// An empty tail still holds the line's whole buffer: a server
		// idle after its tools/list would keep that answer (hundreds of
		// kilobytes for hundreds of tools) for as long as it stays idle.
		b.line = nil
	}
	return n, nil
}

// Line returns the next line, newline included, or the replacement of a
// line past the limit, for a reader that takes lines whole: a last line
// without its newline comes with the error that ended it. The line may be
// the reader's own buffer, valid until the next call. Line and Read must
// not be mixed.
//
// A read deadline that passes (os.ErrDeadlineExceeded, how
// StdioTransport interrupts a caller reading its own answer) ends this
// call only: what was read of a line is kept, and the next call goes on
// with it.
func (b *BoundedLines) Line() ([]byte, error) {
	for {
		if b.err != nil {
			return nil, b.err
		}
		line, err := b.next()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, err
		}
		b.err = err
		if len(line) > 0 || err != nil {
			return line, err
		}
	}
}

// Buffered reports whether input is already read past the lines handed
// out: a next line, or part of one, can be had without waiting.
func (b *BoundedLines) Buffered() bool {
	return b.r.Buffered() > 0 || len(b.line) > 0 || len(b.partial) > 0 || b.dropping
}

// next reads one line of at most limit bytes, or the replacement of a
// longer one. A line read whole at once is returned in the reader's
// buffer, not copied: Read copies it out before reading on.
func (b *BoundedLines) next() ([]byte, error) {
	if b.dropping {
		return b.drop(nil, bufio.ErrBufferFull)
	}
	line := b.partial
	b.partial = nil
	for {
		chunk, err := b.r.ReadSlice('\n')
		if line == nil && err == nil && int64(len(chunk)) <= b.limit {
			return chunk, nil
		}
		if int64(len(line)+len(chunk)) > b.limit {
			prefix := append(line[:min(len(line), PrefixBytes):min(len(line), PrefixBytes)], chunk[:min(len(chunk), PrefixBytes)]...)
			return b.drop(prefix, err)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			b.partial = line // the rest comes with the next read
			return nil, err
		default:
			return line, err
		}
	}
}

// drop reports a line past the limit, then discards the rest of it; with
// prefix nil, it goes on discarding a line a read deadline interrupted.
func (b *BoundedLines) drop(prefix []byte, err error) ([]byte, error) {
	replacement := b.replacement
	if !b.dropping {
		var stop error
		if replacement, stop = b.tooLong(prefix); stop != nil {
			return nil, stop
		}
	}
	b.dropping, b.replacement = false, nil
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = b.r.ReadSlice('\n')
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.dropping, b.replacement = true, replacement
		return nil, err
	}
	return replacement, err
}

// LeadingID finds the id of a JSON-RPC message from its first bytes, when
// it comes before what was cut off: a string or a json.Number; nil if
// there is none to be found.
func LeadingID(prefix []byte) any {
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
		if key != "id" {
			continue
		}
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
	return nil
}

// ErrorLine is a JSON-RPC error response for id, as one line.
func ErrorLine(id any, code int, message string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": message},
	})
	return append(b, '\n')
}
