package upstream

import (
	"regexp"
	"strings"
	"sync"
)

// tailBuffer keeps the last max bytes written to it: a child's stderr, kept
// so start-up errors can say what the child said.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes as one line (newlines become " | ").
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}

// firstLine returns what a server's instructions say it is for: their
// first line with text, cut to max runes, as plain text. Instructions are
// often markdown, and their first line a heading: the everything server's
// is "# Everything Server – Server Instructions", which the catalog hint
// showed as is. A heading loses its "#" marks and a trailing "Server
// Instructions" (or "Instructions"); a heading that says nothing else
// ("# Instructions", "## Overview") is skipped; emphasis and list marks go.
func firstLine(s string, max int) string {
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		heading := strings.HasPrefix(line, "#")
		line = strings.TrimSpace(strings.TrimLeft(line, "#"))
		line = strings.TrimSpace(strings.TrimLeft(line, "-*+> "))
		line = strings.NewReplacer("**", "", "__", "", "`", "").Replace(line)
		if heading {
			line = instructionsSuffix.ReplaceAllString(line, "")
			if emptyHeading.MatchString(line) {
				continue
			}
		}
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > max {
			return string(r[:max-1]) + "…"
		}
		return line
	}
	return ""
}

var (
	// instructionsSuffix is a heading's "– Server Instructions" tail.
	instructionsSuffix = regexp.MustCompile(`(?i)\s*[-–—:|]?\s*(?:server\s+|usage\s+)?instructions\s*$`)
	// emptyHeading is a heading that names no purpose.
	emptyHeading = regexp.MustCompile(`(?i)^(?:|server|overview|introduction|about|readme|usage|mcp server)$`)
)
