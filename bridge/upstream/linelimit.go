package upstream

import (
	"bytes"
	"fmt"
	"io"
)

// lineLimiter passes a reader through and fails once a line (the bytes
// since the last newline) grows past max. Until it has found one, it also
// looks for a line that cannot be JSON-RPC (one not starting with "{") and
// reports the first to onJunk.
type lineLimiter struct {
	r      io.Reader
	max    int64
	line   int64
	over   func(error)
	err    error
	onJunk func(string)
	head   []byte // the start of the current line, up to junkLen bytes
	found  bool
}

// junkLen is how much of a non-JSON line is kept for the error message.
const junkLen = 120

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	if !l.found {
		l.scan(p[:n])
	}
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.line = int64(n - i - 1)
	} else {
		l.line += int64(n)
	}
	if l.line > l.max {
		l.err = fmt.Errorf("the server wrote a message longer than %d bytes on stdout (max_result_bytes)", l.max)
		l.over(l.err)
		return 0, l.err
	}
	return n, err
}

// scan checks each line completed in b.
func (l *lineLimiter) scan(b []byte) {
	for len(b) > 0 && !l.found {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if room := junkLen - len(l.head); room > 0 {
			l.head = append(l.head, seg[:min(room, len(seg))]...)
		}
		if i < 0 {
			return
		}
		if line := bytes.TrimSpace(l.head); len(line) > 0 && line[0] != '{' {
			l.found = true
			l.onJunk(string(line))
		}
		l.head = l.head[:0]
		b = b[i+1:]
	}
}
