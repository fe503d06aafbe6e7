package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxClauses bounds the clauses a query is scored in: each costs one
// score slot per matching tool, and a task rarely needs more tools.
const maxClauses = 6

// maxPieces bounds the pieces splitClauses cuts a request into, before
// parseRequest merges them down to maxClauses.
const maxPieces = 24

// splitClauses splits a request into the pieces that may each ask for a
// different tool: at semicolons, line breaks, the end of a
// sentence, a colon followed by a space, and the words "and", "then" and
// "also". Dots and colons inside words ("example.com", "3.14",
// "github::create_issue") do not split. A piece without a letter
// ("4, 8, 15") joins the piece before it, as do the pieces past
// maxPieces. A request with fewer than two pieces returns nil.
func splitClauses(q string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		piece := strings.TrimSpace(q[start:end])
		switch {
		case piece == "":
		case len(out) > 0 && (!strings.ContainsFunc(piece, unicode.IsLetter) || len(out) == maxPieces):
			out[len(out)-1] = strings.TrimSpace(out[len(out)-1] + " " + piece)
		default:
			out = append(out, piece)
		}
	}
	for i := 0; i < len(q); {
		r, size := utf8.DecodeRuneInString(q[i:])
		next := i + size
		cut := 0 // bytes of the separator at i, 0 if none
		switch r {
		case ';', '\n', '!', '?':
			cut = size
		case '.', ':':
			if next == len(q) || q[next] == ' ' || q[next] == '\n' {
				cut = size
			}
		default:
			if isWordRune(r) && (i == 0 || !isWordRune(lastRune(q[:i]))) {
				w := wordAt(q[i:])
				if isConjunction(w) {
					cut = len(w)
				}
				if cut == 0 {
					next = i + len(w) // skip the rest of the word
				}
			}
		}
		if cut > 0 {
			flush(i)
			start = i + cut
			next = start
		}
		i = next
	}
	flush(len(q))
	if len(out) < 2 {
		return nil
	}
	return out
}

// wordAt returns the run of word runes at the start of s.
func wordAt(s string) string {
	for i, r := range s {
		if !isWordRune(r) {
			return s[:i]
		}
	}
	return s
}

// lastRune returns the last rune of a non-empty s.
func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// isConjunction reports the words that join two requests.
func isConjunction(w string) bool {
	switch strings.ToLower(w) {
	case "and", "then", "also":
		return true
	}
	return false
}
