package o200k

import (
	"unicode/utf8"
)

// runner is the state the generated matcher (execute) works on: the
// fields and methods of a regexp2.Runner that it uses, without what
// regexp2 allocates per match.
type runner struct {
	Runtext    []rune // the text
	Runtextpos int    // where a match is tried; after one, its end
	// runstack is the backtracking stack, growing down from the end:
	// Runstackpos is its top.
	runstack    []int
	Runstackpos int
	// The last match: [start, end) in runes.
	matched    bool
	start, end int
}

// CheckTimeout never fails: like the codec's regexp (regexp2's default
// timeout), the split has no time limit.
func (r *runner) CheckTimeout() error { return nil }

// StackDepth is how many values the backtracking stack holds.
func (r *runner) StackDepth() int { return len(r.runstack) - r.Runstackpos }

// StackPush pushes val, doubling the stack when it is full as regexp2
// does (splitPattern's matcher never holds more than two values).
func (r *runner) StackPush(val int) {
	if r.Runstackpos == 0 {
		grown := make([]int, max(2*len(r.runstack), 8))
		copy(grown[len(grown)-len(r.runstack):], r.runstack)
		r.Runstackpos += len(grown) - len(r.runstack)
		r.runstack = grown
	}
	r.Runstackpos--
	r.runstack[r.Runstackpos] = val
}

// StackPop pops the top of the stack.
func (r *runner) StackPop() int {
	val := r.runstack[r.Runstackpos]
	r.Runstackpos++
	return val
}

// Capture records a match of the whole pattern (the only group).
func (r *runner) Capture(_, start, end int) {
	if end < start {
		start, end = end, start
	}
	r.matched, r.start, r.end = true, start, end
}

// splitter splits texts into splitPattern's pieces. Its buffers are kept
// from one text to the next; it is not safe for concurrent use.
type splitter struct {
	r       runner
	offsets []int // byte offset of each rune, and of the end
}

// maxKeptRunes bounds the buffers a splitter keeps between texts.
const maxKeptRunes = 1 << 16

// split calls piece with each piece of text, in order, as the codec's loop
// of FindStringMatch and FindNextMatch gets them: the text is read as
// runes (an invalid byte is one U+FFFD, which is then what the piece
// holds), a match is tried at each rune until one is found, and the next
// search starts where the match ended.
func (s *splitter) split(text string, piece func(string)) error {
	r := &s.r
	runes, offsets := r.Runtext[:0], s.offsets[:0]
	for i, c := range text {
		runes = append(runes, c)
		offsets = append(offsets, i)
	}
	offsets = append(offsets, len(text))
	r.Runtext, s.offsets = runes, offsets
	defer func() {
		if cap(r.Runtext) > maxKeptRunes {
			r.Runtext, s.offsets = nil, nil
		}
	}()
	valid := utf8.ValidString(text)
	for pos := 0; pos < len(runes); {
		r.Runtextpos, r.Runstackpos, r.matched = pos, len(r.runstack), false
		if err := execute(r); err != nil {
			return err
		}
		if !r.matched {
			pos++ // no match here: regexp2 tries the next rune
			continue
		}
		if valid {
			piece(text[offsets[r.start]:offsets[r.end]])
		} else {
			piece(string(runes[r.start:r.end]))
		}
		// A match starts at pos. After an empty one (the pattern has none)
		// regexp2 moves on by one rune.
		pos = max(r.end, pos+1)
	}
	return nil
}
