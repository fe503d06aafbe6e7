package search

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds of the partial-match fallback.
const (
	// minPartialLen is the shortest request word that can match part of
	// a term, and the shortest term it can match as a prefix.
	minPartialLen = 4
	// maxPartialTerms bounds the index terms one request word can stand
	// for, the closest first.
	maxPartialTerms = 8
	// partialWeight scores a partial match relative to a whole one.
	partialWeight = 0.5
)

// partialGroups is the fallback for a request none of whose terms is in
// the index: each request word stands for the index terms it partly
// matches. A word matches a term it or its stem spells within one edit
// (two when both have eight letters or more), a term it begins ("screen" for "screenshot"), a term
// that begins it ("navigating" for "navig") and, whole, a stop word the
// analyser dropped but a tool uses as a term. It scans the whole
// vocabulary, which is fine for a rare fallback but not for every search.
// Caller holds mu (read).
func (ix *Index) partialGroups(q string) []queryGroup {
	var groups []queryGroup
	seen := map[string]bool{}
	var rows [3][]int
	forEachWord(q, func(word string, cjk bool) {
		w := strings.ToLower(word)
		if cjk || seen[w] || len(groups) == maxQueryTerms || utf8.RuneCountInString(w) < 2 {
			return
		}
		seen[w] = true
		type cand struct {
			term string
			dist int
		}
		var cands []cand
		if e := ix.terms[w]; e != nil && e.df > 0 {
			cands = append(cands, cand{w, 0}) // a stop word some tool has
		}
		if len(w) >= minPartialLen && isASCII(w) {
			// Terms are stems, so a misspelt word is compared as written
			// and stemmed ("isues" is two edits from "issu", "isu" one).
			stem := normalizeTerm(w)
			for t, e := range ix.terms {
				if e.df == 0 || t == w || !isASCII(t) {
					continue
				}
				if len(t) >= minPartialLen && (strings.HasPrefix(t, w) || strings.HasPrefix(w, t)) {
					cands = append(cands, cand{t, 1 + absInt(len(t)-len(w))})
					continue
				}
				// Two edits only between long words: "scre" and "size"
				// are two edits apart too.
				maxEdits := 1
				if min(len(w), len(t)) >= 8 {
					maxEdits = 2
				}
				d := osaDistance([]byte(w), []byte(t), maxEdits, &rows)
				if stem != "" && stem != w {
					d = min(d, osaDistance([]byte(stem), []byte(t), maxEdits, &rows))
				}
				// A stem is mostly a prefix of its words: "chnges" begins
				// one edit from "chang".
				if len(t) > minPartialLen && len(w) > len(t) &&
					(osaDistance([]byte(w[:len(t)]), []byte(t), 1, &rows) <= 1 ||
						osaDistance([]byte(w[:len(t)-1]), []byte(t), 1, &rows) <= 1) {
					d = min(d, 1)
				}
				if d <= maxEdits {
					cands = append(cands, cand{t, d})
				}
			}
		}
		if len(cands) == 0 {
			return
		}
		sort.Slice(cands, func(i, j int) bool {
			if cands[i].dist != cands[j].dist {
				return cands[i].dist < cands[j].dist
			}
			return cands[i].term < cands[j].term
		})
		// The word itself leads the group: it is not a term (or is an
		// exact stop-word match), so it caps its matches' weight at the
		// highest IDF.
		g := queryGroup{alts: []alt{{term: "\x00" + w, w: 1}}}
		for i, c := range cands {
			if i == maxPartialTerms {
				break
			}
			wt := partialWeight
			if c.dist == 0 {
				wt = 1
			}
			g.alts = append(g.alts, alt{term: c.term, w: wt})
		}
		groups = append(groups, g)
	})
	return groups
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
