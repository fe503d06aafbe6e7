package search

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// maxQueryTerms bounds the distinct terms of one query, so a pasted
// document costs a bounded amount of work.
const maxQueryTerms = 256

// maxSplitTerms is the most terms a request can have and still be split
// into clauses. A task of a few steps is a sentence to a paragraph
// (BFCL's tasks of three or four steps run to 60 terms); longer text is a
// pasted document or conversation, whose sentences are rarely one step
// each, and scoring its clauses doubled the p99 latency. 80 found no more
// tasks on the held-out half than 60 and cost more.
const maxSplitTerms = 60

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
	// clauses has bit c set when clause c of a split request has this
	// term; zero when the request was not split.
	clauses uint8
}

// parseRequest analyses q into query groups and, when q reads as several
// requests (splitClauses), marks each group with the clauses it occurs
// in. It returns the number of clauses with a term: 0, or 2 to maxClauses.
func (ix *Index) parseRequest(q string) ([]queryGroup, int) {
	// One term cache for the request and its clauses: each word is
	// stemmed once.
	local := termCache{}
	groups := ix.parseTerms(q, local)
	if ix.opts.ClauseWeight <= 0 || len(groups) > maxSplitTerms {
		return groups, 0
	}
	pieces, _ := ix.clausePieces(q, groups, local)
	if len(pieces) < 2 {
		return groups, 0
	}
	for c, idx := range pieces {
		for _, i := range idx {
			groups[i].clauses |= 1 << c
		}
	}
	return groups, len(pieces)
}

// clausePieces splits q (splitClauses) into the pieces parseRequest
// scores apart: each piece as the indices of the groups (q's query
// groups) it has, and its text. A piece without a term (all stop words)
// is no clause; the rest are merged down to maxClauses (mergePieces). It
// returns nil when q is one piece.
func (ix *Index) clausePieces(q string, groups []queryGroup, local termCache) ([][]int, []string) {
	parts := splitClauses(q)
	if len(parts) < 2 {
		return nil, nil
	}
	pos := make(map[string]int, len(groups))
	for i, g := range groups {
		pos[g.alts[0].term] = i
	}
	pieces := make([][]int, 0, len(parts))
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		var idx []int
		for _, cg := range ix.parseTerms(p, local) {
			if i, ok := pos[cg.alts[0].term]; ok {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 {
			pieces = append(pieces, idx)
			texts = append(texts, p)
		}
	}
	pieces, texts = mergePieces(pieces, texts, maxClauses)
	if len(pieces) < 2 {
		return nil, nil
	}
	return pieces, texts
}

// mergePieces joins adjacent pieces of a request (each the query groups
// it has) until at most n remain, each time the pair with the fewest
// terms between them, the later pair on a tie. A long request thus keeps
// its steps apart and loses its asides ("Imagine you are a teacher.")
// into a neighbour, where joining every piece past n into the last one
// made its last clause a paragraph of several steps. texts, the pieces'
// texts or nil, are joined alike (with a space).
func mergePieces(pieces [][]int, texts []string, n int) ([][]int, []string) {
	for len(pieces) > max(n, 1) {
		k := len(pieces) - 2
		for i := k - 1; i >= 0; i-- {
			if len(pieces[i])+len(pieces[i+1]) < len(pieces[k])+len(pieces[k+1]) {
				k = i
			}
		}
		pieces[k] = append(pieces[k], pieces[k+1]...)
		pieces = slices.Delete(pieces, k+1, k+2)
		if texts != nil {
			texts[k] += " " + texts[k+1]
			texts = slices.Delete(texts, k+1, k+2)
		}
	}
	return pieces, texts
}

// parseQuery analyses q into query groups, in first-occurrence order.
func (ix *Index) parseQuery(q string) []queryGroup { return ix.parseTerms(q, nil) }

// parseTerms is parseQuery with a term cache: local caches the terms of
// words across the calls for one request (nil is allowed).
func (ix *Index) parseTerms(q string, local termCache) []queryGroup {
	terms := ix.an.text(nil, q, local, false)
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
	return ix.addIntents(groups, q, seen, local)
}

// addIntents gives every request word of q that the intent vocabulary
// knows its tool words as alternatives, at Options.IntentWeight: in the
// word's own group when it is a query term, else in a group of its own
// (stop words such as "know" carry an intent too). seen holds the query's
// terms and is extended; local is parseTerms'.
func (ix *Index) addIntents(groups []queryGroup, q string, seen map[string]bool, local termCache) []queryGroup {
	iw := ix.opts.IntentWeight
	if iw <= 0 {
		return groups
	}
	for _, tok := range strings.Fields(q) {
		shape := shapeOf(tok)
		if shape == "" || seen[shape] || len(groups) == maxQueryTerms {
			continue
		}
		seen[shape] = true
		g := queryGroup{alts: []alt{{term: shape, w: 1}}}
		for _, m := range ix.intents[shape] {
			g.alts = append(g.alts, alt{term: m, w: iw})
		}
		groups = append(groups, g)
	}
	forEachWord(q, func(word string, cjk bool) {
		if cjk || len(groups) == maxQueryTerms {
			return
		}
		means := ix.intents[strings.ToLower(word)]
		if len(means) == 0 {
			return
		}
		k := ix.an.term(word, local, false)
		if k == "" {
			k = strings.ToLower(word) // a stop word, never indexed
		}
		i := slices.IndexFunc(groups, func(g queryGroup) bool { return g.alts[0].term == k })
		if i < 0 {
			if seen[k] {
				return // a group of its own was added for an earlier word
			}
			seen[k] = true
			// The request word itself is never indexed, so as the group's
			// first term it sets the cap on its meanings' weight high.
			groups = append(groups, queryGroup{alts: []alt{{term: k, w: 1}}})
			i = len(groups) - 1
		}
		g := &groups[i]
		for _, m := range means {
			if m != k && !slices.ContainsFunc(g.alts, func(a alt) bool { return a.term == m }) {
				g.alts = append(g.alts, alt{term: m, w: iw})
			}
		}
	})
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
