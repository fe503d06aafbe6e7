package search

import (
	"strings"
	"unicode/utf8"
)

// maxQueryTerms bounds the distinct terms of one query, so a pasted
// document costs a bounded amount of work.
const maxQueryTerms = 256

// alt is one way to match a query term: the term itself or a synonym.
type alt struct {
	term string
	w    float64
}

// queryGroup is one distinct query term and its synonyms. A document scores
// the best of the group's alternatives, so a tool that says both "get" and
// "fetch" is not counted twice for "get".
type queryGroup struct {
	alts []alt
}

// parseQuery analyses q into query groups, in first-occurrence order.
func (ix *Index) parseQuery(q string) []queryGroup {
	terms := ix.an.text(nil, q, nil, false)
	for _, w := range strings.Fields(q) {
		terms = wholeForms(terms, w)
	}
	seen := make(map[string]bool, len(terms))
	groups := make([]queryGroup, 0, len(terms))
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		if len(groups) == maxQueryTerms {
			break
		}
		g := queryGroup{alts: []alt{{term: t, w: 1}}}
		if sw := ix.opts.SynonymWeight; sw > 0 {
			for _, s := range ix.syn[t] {
				g.alts = append(g.alts, alt{term: s, w: sw})
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
