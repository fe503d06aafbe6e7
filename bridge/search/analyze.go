package search

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// analyzer turns text into index terms: Unicode-aware word splitting,
// identifier splitting (snake_case, kebab-case, camelCase, dots, digits),
// lowercasing, stop-word removal, Snowball English stemming and character
// bigrams for CJK scripts.
//
// Terms are cached by raw word because Snowball costs about a microsecond
// per word and the same vocabulary repeats across thousands of tools. Only
// indexing writes the shared cache, and at most maxCachedTerms entries, so
// neither queries nor churn can grow it without bound.
type analyzer struct {
	cache  sync.Map // raw word part -> term, "" when the part is dropped
	cached atomic.Int64
	// builders keeps segment builders, with their plain-map term caches,
	// between builds: a build takes one (lock-free lookups, no scratch
	// allocation), then gives it back.
	builders chan *builder
}

// newAnalyzer returns an analyzer with room for one builder per CPU.
func newAnalyzer() *analyzer {
	return &analyzer{builders: make(chan *builder, runtime.GOMAXPROCS(0))}
}

// takeBuilder returns a builder for one segment build.
func (a *analyzer) takeBuilder() *builder {
	select {
	case b := <-a.builders:
		return b
	default:
		return &builder{cache: make(termCache, 1024), termIDs: make(map[string]int32, 1024), seen: map[string]bool{}}
	}
}

// giveBuilder returns a builder taken with takeBuilder. One grown past
// the bounds is dropped, so idle builders hold little memory.
func (a *analyzer) giveBuilder(b *builder) {
	if len(b.cache) > maxCachedTerms || cap(b.pairs) > maxBuilderPairs {
		return
	}
	select {
	case a.builders <- b:
	default:
	}
}

// maxBuilderPairs bounds the postings scratch an idle builder keeps.
const maxBuilderPairs = 1 << 20

// maxCachedTerms bounds the shared term cache.
const maxCachedTerms = 1 << 20

// termCache is a lock-free cache private to one segment build at a time,
// in front of the shared one.
type termCache map[string]string

// term returns the index term of one raw word part, or "" when the part is
// a stop word or too short. local may be nil (queries); remember says
// whether to store a miss in the shared cache (true while indexing).
func (a *analyzer) term(part string, local termCache, remember bool) string {
	if t, ok := local[part]; ok {
		return t
	}
	var t string
	if v, ok := a.cache.Load(part); ok {
		t = v.(string)
	} else {
		t = normalizeTerm(part)
		if remember {
			// Clone so cached strings never pin a tool's whole description.
			t = strings.Clone(t)
			if a.cached.Load() < maxCachedTerms {
				a.cached.Add(1)
				a.cache.Store(strings.Clone(part), t)
			}
		}
	}
	if local != nil {
		// Clone: the cache outlives the text being analysed.
		local[strings.Clone(part)] = t
	}
	return t
}

// normalizeTerm lowercases, filters and stems one word part.
func normalizeTerm(part string) string {
	p := strings.ToLower(part)
	if isStopWord(p) {
		return ""
	}
	if utf8.RuneCountInString(p) < 2 && !isDigits(p) {
		return ""
	}
	if isASCIILetters(p) {
		p = english.Stem(p, true)
	}
	return p
}

// text appends the terms of free text s to dst. local and remember are
// passed to term. It is forEachWord and eachPart unrolled into loops,
// because it is the hot path of indexing.
func (a *analyzer) text(dst []string, s string, local termCache, remember bool) []string {
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if !isWordRune(r) {
			i += size
			continue
		}
		cjk, start := isCJK(r), i
		for i < len(s) {
			r, size = rune(s[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			if !isWordRune(r) || isCJK(r) != cjk {
				break
			}
			i += size
		}
		if cjk {
			dst = appendCJK(dst, s[start:i])
		} else {
			dst = a.appendWord(dst, s[start:i], local, remember)
		}
	}
	return dst
}

// appendWord appends the terms of one word: its identifier parts and,
// when it has several, the whole word ("GitHub", "YouTube", "PostgreSQL"
// are also written and asked for whole).
func (a *analyzer) appendWord(dst []string, word string, local termCache, remember bool) []string {
	parts, start := 0, 0
	var prev rune
	emit := func(end int) {
		parts++
		if t := a.term(word[start:end], local, remember); t != "" {
			dst = append(dst, t)
		}
	}
	for i := 0; i < len(word); {
		r, size := rune(word[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(word[i:])
		}
		if i > 0 && isBoundary(prev, r, word[i+size:]) {
			emit(i)
			start = i
		}
		prev = r
		i += size
	}
	emit(len(word))
	if parts > 1 {
		if t := a.term(word, local, remember); t != "" {
			dst = append(dst, t)
		}
	}
	return dst
}

// decodeRune is utf8.DecodeRuneInString with an ASCII fast path small
// enough to inline.
func decodeRune(s string) (rune, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return decodeRuneSlow(s)
}

//go:noinline
func decodeRuneSlow(s string) (rune, int) { return utf8.DecodeRuneInString(s) }

// wholeForms appends the whole-identifier terms of a compound word such as
// "create_issue" or "ChaDri.change_drink": the lowercase word and, when it
// differs, the word with its separators removed. Single-part words get none:
// their one part is already a term.
func wholeForms(dst []string, word string) []string {
	word = strings.Trim(word, trimSet)
	if word == "" || countParts(word) < 2 || strings.IndexFunc(word, notIdentifierRune) >= 0 {
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

// notIdentifierRune reports runes that do not occur in tool names, so a
// word containing one gets no whole-identifier form.
func notIdentifierRune(r rune) bool {
	return !isWordRune(r) && !strings.ContainsRune("_-.:/@+#$~", r)
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
	eachPart(word, func(p string) { parts = append(parts, p) })
	return parts
}

// countParts returns len(splitIdentifier(word)) without allocating.
func countParts(word string) int {
	n := 0
	eachPart(word, func(string) { n++ })
	return n
}

// eachPart calls fn with each part splitIdentifier would return, without
// allocating.
func eachPart(word string, fn func(part string)) {
	start := -1
	var prev rune
	for i := 0; i < len(word); {
		r, size := decodeRune(word[i:])
		if !isWordRune(r) {
			if start >= 0 {
				fn(word[start:i])
				start = -1
			}
			prev = 0
			i += size
			continue
		}
		if start >= 0 && isBoundary(prev, r, word[i+size:]) {
			fn(word[start:i])
			start = -1
		}
		if start < 0 {
			start = i
		}
		prev = r
		i += size
	}
	if start >= 0 {
		fn(word[start:])
	}
}

// Rune classes for identifier splitting.
const (
	classLower uint8 = 1 << iota
	classUpper
	classDigit
)

// asciiClasses is read-only after package initialisation.
var asciiClasses = func() (t [utf8.RuneSelf]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = classLower
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = classUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = classDigit
	}
	return t
}()

// classOf returns r's case and digit class.
func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClasses[r]
	}
	return classOfSlow(r)
}

//go:noinline
func classOfSlow(r rune) uint8 {
	switch {
	case unicode.IsDigit(r):
		return classDigit
	case unicode.IsUpper(r):
		return classUpper
	case unicode.IsLower(r):
		return classLower
	}
	return 0
}

// isBoundary says whether a new identifier part starts at r, given the rune
// before it and the text after it.
func isBoundary(prev, r rune, rest string) bool {
	pc, rc := classOf(prev), classOf(r)
	switch {
	case pc&classDigit != rc&classDigit:
		return true
	case pc == classLower && rc == classUpper:
		return true
	case pc == classUpper && rc == classUpper && rest != "":
		next, _ := decodeRune(rest)
		return classOf(next) == classLower
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
		// Clone: the index must not keep the whole text alive.
		dst = append(dst, strings.Clone(run))
	}
	return dst
}

// isWordRune reports letters, digits and combining marks.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClasses[r] != 0
	}
	return isWordRuneSlow(r)
}

//go:noinline
func isWordRuneSlow(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// isCJK reports the scripts written without spaces between words.
func isCJK(r rune) bool {
	return r >= 0x2E80 && isCJKSlow(r)
}

//go:noinline
func isCJKSlow(r rune) bool {
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

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}
