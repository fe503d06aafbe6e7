package upstream

import (
	"bytes"
	"io"
)

// junkWatcher passes a reader through and, until it has found one, looks
// for a line that cannot be JSON-RPC (one not starting with "{") and
// reports the first to onJunk.
type junkWatcher struct {
	r      io.Reader
	onJunk func(string)
	head   []byte // the start of the current line, up to junkLen bytes
	found  bool
}

// junkLen is how much of a non-JSON line is kept for the error message.
const junkLen = 120

func (l *junkWatcher) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if !l.found {
		l.scan(p[:n])
	}
	return n, err
}

// scan checks each line completed in b.
func (l *junkWatcher) scan(b []byte) {
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
