package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// analyzer turns text into index terms: Unicode-aware word splitting,
// identifier splitting (snake_case, kebab-case, camelCase, dots, digits),
// lowercasing, stop-word removal, Snowball English stemming and character
// bigrams for CJK scripts.
//
// Stems are cached because Snowball costs about a microsecond per word and
// the same vocabulary repeats across thousands of tools. Only indexing
// writes the cache, so queries cannot grow it without bound.
type analyzer struct {
	stems sync.Map // lowercase word -> stem
}

// stem returns the Snowball stem of a lowercase ASCII word; remember says
// whether to cache a miss (true while indexing).
func (a *analyzer) stem(w string, remember bool) string {
	if v, ok := a.stems.Load(w); ok {
		return v.(string)
	}
	s := english.Stem(w, true)
	if remember {
		a.stems.Store(w, s)
	}
	return s
}

// text appends the terms of free text s to dst. remember is passed to stem.
func (a *analyzer) text(dst []string, s string, remember bool) []string {
	forEachWord(s, func(word string, cjk bool) {
		if cjk {
			dst = appendCJK(dst, word)
			return
		}
		parts := splitIdentifier(word)
		for _, part := range parts {
			dst = a.appendTerm(dst, part, remember)
		}
		if len(parts) > 1 {
			// "GitHub", "YouTube", "PostgreSQL" are also written and asked
			// for whole.
			dst = a.appendTerm(dst, word, remember)
		}
	})
	return dst
}

// appendTerm lowercases, filters and stems one word part.
func (a *analyzer) appendTerm(dst []string, part string, remember bool) []string {
	p := strings.ToLower(part)
	if isStopWord(p) {
		return dst
	}
	if utf8.RuneCountInString(p) < 2 && !isDigits(p) {
		return dst
	}
	if isASCIILetters(p) {
		p = a.stem(p, remember)
	}
	return append(dst, p)
}

// wholeForms appends the whole-identifier terms of a compound word such as
// "create_issue" or "ChaDri.change_drink": the lowercase word and, when it
// differs, the word with its separators removed. Single-part words get none:
// their one part is already a term.
func wholeForms(dst []string, word string) []string {
	word = strings.Trim(word, trimSet)
	if word == "" || len(splitIdentifier(word)) < 2 {
		return dst
	}
	lw := strings.ToLower(word)
	dst = append(dst, lw)
	joined := strings.Map(func(r rune) rune {
		if isWordRune(r) {
			return r
		}
		return -1
	}, lw)
	if joined != lw && joined != "" {
		dst = append(dst, joined)
	}
	return dst
}

// trimSet is the punctuation stripped around a query word before it is
// compared with tool names.
const trimSet = "\"'`()[]{}<>,;:!?*"

// forEachWord calls fn with every maximal run of word runes in s. Runs of
// CJK characters are reported separately (cjk true) from other scripts
// because they are not space-delimited and get bigrams instead of stems.
func forEachWord(s string, fn func(word string, cjk bool)) {
	start, startCJK := -1, false
	for i, r := range s {
		w, c := isWordRune(r), isCJK(r)
		if start >= 0 && (!w || c != startCJK) {
			fn(s[start:i], startCJK)
			start = -1
		}
		if w && start < 0 {
			start, startCJK = i, c
		}
	}
	if start >= 0 {
		fn(s[start:], startCJK)
	}
}

// splitIdentifier splits one word on underscores, hyphens, dots and other
// punctuation, on lower-to-upper case changes ("changeDrink"), before the
// last capital of an acronym ("HTTPServer" -> HTTP, Server) and between
// letters and digits ("get2fa" -> get, 2, fa).
func splitIdentifier(word string) []string {
	var parts []string
	start := -1
	var prev rune
	flush := func(end int) {
		if start >= 0 && end > start {
			parts = append(parts, word[start:end])
		}
		start = -1
	}
	for i, r := range word {
		if !isWordRune(r) {
			flush(i)
			prev = 0
			continue
		}
		if start >= 0 && isBoundary(prev, r, word[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(word))
	return parts
}

// isBoundary says whether a new identifier part starts at r, given the rune
// before it and the text after it.
func isBoundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// appendCJK appends the character bigrams of a CJK run, or the character
// itself for a run of one: the usual way to index unsegmented scripts.
func appendCJK(dst []string, run string) []string {
	var prev string
	n := 0
	for i, r := range run {
		cur := run[i : i+utf8.RuneLen(r)]
		if n > 0 {
			dst = append(dst, prev+cur)
		}
		prev = cur
		n++
	}
	if n == 1 {
		dst = append(dst, run)
	}
	return dst
}

// isWordRune reports letters, digits and combining marks.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// isCJK reports the scripts written without spaces between words.
func isCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}
