package search

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sahilm/fuzzy"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// Fuzzy matching thresholds on the similarity in [0,1].
const (
	fuzzyMinSim = 0.6  // listed in DidYouMean / Resolve candidates
	fuzzyHitSim = 0.75 // also added to Search hits
	maxFuzzyLen = 128  // longer queries are not tool names
	// maxFuzzyEdits caps the edit distance searched: a third of the
	// query's length, at most this.
	maxFuzzyEdits = 3
	// subsequenceSim scales a subsequence match's similarity, so that it
	// ranks under an edit-distance-1 match.
	subsequenceSim = 0.95
)

// maxEditRunes is the longest name the edit distance is computed for: a
// longest query plus the edits allowed.
const maxEditRunes = maxFuzzyLen + maxFuzzyEdits

// fuzzyCand is a tool whose name resembles the query.
type fuzzyCand struct {
	ref nameRef
	sim float64
}

// nameKey is what fuzzy matching reads of every tool name in range of a
// query. A segment keeps its keys apart from docInfo, 16 bytes a name,
// sorted by length: a query reads the keys of the names whose length is in
// range, and the names themselves only of those whose characters could
// match too.
type nameKey struct {
	// chars has the charBit of every rune of the lowercase name.
	chars uint64
	// runes is the lowercase name's length in runes.
	runes int32
	// doc is the name's document in the segment.
	doc uint32
}

// newNameKey computes the key of document doc's lowercase name.
func newNameKey(lname string, doc int) nameKey {
	k := nameKey{runes: int32(min(utf8.RuneCountInString(lname), math.MaxInt32)), doc: uint32(doc)}
	for _, r := range lname {
		k.chars |= charBit(r)
	}
	return k
}

// sortNameKeys orders a segment's keys by length, for nameKeysIn.
func sortNameKeys(keys []nameKey) {
	slices.SortFunc(keys, func(a, b nameKey) int {
		return cmp.Or(cmp.Compare(a.runes, b.runes), cmp.Compare(a.doc, b.doc))
	})
}

// nameKeysIn returns the keys, sorted by length, of the names of lo to hi
// runes.
func nameKeysIn(keys []nameKey, lo, hi int) []nameKey {
	i, _ := slices.BinarySearchFunc(keys, lo, func(k nameKey, n int) int { return cmp.Compare(int(k.runes), n) })
	j := i
	for j < len(keys) && int(keys[j].runes) <= hi {
		j++
	}
	return keys[i:j]
}

// charClass maps an ASCII byte to its bit in nameKey.chars: one bit each
// for the letters, digits and the separators names use, shared bits for
// the rest.
var charClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case 'a' <= c && c <= 'z':
			t[c] = uint8(c - 'a')
		case '0' <= c && c <= '9':
			t[c] = 26 + uint8(c-'0')
		case c == '_':
			t[c] = 36
		case c == '-':
			t[c] = 37
		case c == '.':
			t[c] = 38
		default:
			t[c] = 39 + uint8(c%9)
		}
	}
	return t
}()

// charBit is r's bit in nameKey.chars; runes beyond ASCII share the top
// 16 bits.
func charBit(r rune) uint64 {
	if r < utf8.RuneSelf {
		return 1 << charClass[r]
	}
	return 1 << (48 + uint(r)%16)
}

// editBound is a lower bound on the edit distance between two strings
// whose nameKey.chars are a and b. An insertion, deletion or substitution
// adds at most one character to a string and removes at most one, and a
// transposition neither: so turning one string into the other takes at
// least as many edits as there are characters in one and not in the
// other. Characters that share a bit only lower the count.
func editBound(a, b uint64) int {
	return max(bits.OnesCount64(a&^b), bits.OnesCount64(b&^a))
}

// fuzzyNames returns the tools whose names resemble q, most similar first.
// Similarity combines an edit distance (typos, transpositions) with
// subsequence matching ("creat_isue" in "create_issue", "issue" in
// "create_issue"), both case-insensitive. Server prefixes ("gh::",
// "mcp__gh__") are stripped; tools of the named server then rank first.
// Caller holds mu (read).
//
// A query reads the keys of the names whose length is in range of an
// edit-distance or subsequence match reaching fuzzyMinSim, and the names
// themselves only where the characters allow a match too (editBound, or
// all of q's characters present). The answers are those of running both
// matchers over every name (fuzzyNamesRef in the tests): the filters drop
// only names that could not reach fuzzyMinSim.
func (ix *Index) fuzzyNames(q string) []fuzzyCand {
	q, server := splitQualified(strings.ToLower(toolid.Clean(q)))
	if q == "" || len(q) > maxFuzzyLen {
		return nil
	}
	// Buffers on the stack: q is at most maxFuzzyLen bytes, and the edit
	// distance only ever sees names of at most maxEditRunes runes.
	var qbBuf [maxFuzzyLen]byte
	var qrBuf [maxFuzzyLen]rune
	var nbBuf [maxEditRunes]byte
	var nrBuf [maxEditRunes]rune
	var rowBuf [3][maxEditRunes + 2]int
	rows := [3][]int{rowBuf[0][:0], rowBuf[1][:0], rowBuf[2][:0]}
	qb := append(qbBuf[:0], q...)
	qr := qrBuf[:0]
	var qchars uint64
	for _, r := range q {
		qr = append(qr, r)
		qchars |= charBit(r)
	}
	m := len(qr)
	asciiQ := m == len(q)
	maxDist := min(m/3, maxFuzzyEdits)
	// A subsequence match scores subsequenceSim*m/n for a name of n > m
	// runes; subMax is the longest name that still reaches fuzzyMinSim.
	subMax := 0
	if m >= 3 {
		for n := m + 1; subsequenceSim*float64(m)/float64(n) >= fuzzyMinSim; n++ {
			subMax = n
		}
	}

	var out []fuzzyCand
	// judge are the subsequence candidates with runes beyond ASCII:
	// sahilm/fuzzy, which folds case rune by rune, decides those.
	var judge []nameRef
	var judgeNames []string
	// Names of lo to hi runes are in range of one matcher or the other.
	lo, hi := m-maxDist, max(m+maxDist, subMax)
	for _, seg := range ix.order {
		for _, k := range nameKeysIn(seg.keys, lo, hi) {
			n, d := int(k.runes), int(k.doc)
			edit := n <= m+maxDist && editBound(qchars, k.chars) <= maxDist
			// An ASCII q is a subsequence only of names with all its
			// characters.
			sub := n > m && n <= subMax && (!asciiQ || qchars&^k.chars == 0)
			if !edit && !sub {
				continue
			}
			info := &seg.docs[d]
			sim := 0.0
			switch {
			case !sub:
			case asciiQ && info.ascii:
				// For ASCII both ways, sahilm/fuzzy's match is a byte
				// subsequence of the name up to its first NUL.
				lname := info.lname
				if i := strings.IndexByte(lname, 0); i >= 0 {
					lname = lname[:i]
				}
				if isByteSubsequence(q, lname) {
					sim = subsequenceSim * float64(m) / float64(n)
				}
			case len(info.lname) > len(q) && isByteSubsequence(q, info.lname):
				judge = append(judge, nameRef{seg: seg, doc: uint32(d)})
				judgeNames = append(judgeNames, info.lname)
			}
			if edit {
				var dist int
				if asciiQ && info.ascii {
					dist = osaDistance(qb, append(nbBuf[:0], info.lname...), maxDist, &rows)
				} else {
					nr := nrBuf[:0]
					for _, r := range info.lname {
						nr = append(nr, r)
					}
					dist = osaDistance(qr, nr, maxDist, &rows)
				}
				if dist <= maxDist {
					sim = max(sim, 1-float64(dist)/float64(max(m, n)))
				}
			}
			if sim >= fuzzyMinSim {
				out = append(out, fuzzyCand{ref: nameRef{seg: seg, doc: uint32(d)}, sim: sim})
			}
		}
	}
	if len(judge) > 0 {
		out = mergeJudged(out, judge, fuzzy.FindNoSort(q, judgeNames), m)
	}
	slices.SortFunc(out, func(a, b fuzzyCand) int {
		as, bs := strings.EqualFold(a.ref.seg.server, server), strings.EqualFold(b.ref.seg.server, server)
		if as != bs && server != "" {
			if as {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return strings.Compare(a.ref.id(), b.ref.id())
	})
	return out
}

// mergeJudged adds the subsequence matches sahilm/fuzzy found among judge
// to out, keeping a tool's better similarity when it is already there.
func mergeJudged(out []fuzzyCand, judge []nameRef, matches fuzzy.Matches, m int) []fuzzyCand {
	at := make(map[nameRef]int, len(out))
	for i, c := range out {
		at[c.ref] = i
	}
	for _, mt := range matches {
		n := utf8.RuneCountInString(mt.Str)
		if m >= n {
			continue
		}
		sim := subsequenceSim * float64(m) / float64(n)
		ref := judge[mt.Index]
		if i, ok := at[ref]; ok {
			out[i].sim = max(out[i].sim, sim)
		} else if sim >= fuzzyMinSim {
			at[ref] = len(out)
			out = append(out, fuzzyCand{ref: ref, sim: sim})
		}
	}
	return out
}

// isByteSubsequence reports whether the bytes of q appear in s in order.
func isByteSubsequence(q, s string) bool {
	i := 0
	for j := 0; j < len(s) && i < len(q); j++ {
		if s[j] == q[i] {
			i++
		}
	}
	return i == len(q)
}

// osaDistance is the optimal-string-alignment edit distance (insertions,
// deletions, substitutions, adjacent transpositions) between a and b, or
// maxDist+1 when it exceeds maxDist. It compares bytes for ASCII text and
// runes otherwise. Only the diagonal band |i-j| <=
// maxDist is computed, and rows holds reusable buffers, so a miss costs
// O(len x maxDist) and no allocation.
func osaDistance[T byte | rune](a, b []T, maxDist int, rows *[3][]int) int {
	big := maxDist + 1
	if d := len(a) - len(b); d > maxDist || -d > maxDist {
		return big
	}
	n := len(b)
	for k := range rows {
		if cap(rows[k]) < n+2 {
			rows[k] = make([]int, n+2)
		}
	}
	// Sliced here rather than stored back, so a caller's buffers can stay
	// on its stack.
	prev2, prev, cur := rows[0][:n+2], rows[1][:n+2], rows[2][:n+2]
	for j := 0; j <= n; j++ {
		prev[j] = min(j, big)
	}
	prev[n+1] = big
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-maxDist), min(n, i+maxDist)
		cur[lo-1] = big
		if lo == 1 {
			cur[0] = min(i, big)
		}
		rowMin := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = min(v, big)
			rowMin = min(rowMin, cur[j])
		}
		cur[hi+1] = big
		if rowMin > maxDist {
			return big
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[n]
}
