package search

import (
	"math"
	"math/bits"
	"slices"
	"strings"
)

// scratch holds one search's score accumulators, indexed by index-wide
// document number. Entries are zeroed after use via the touched lists.
type scratch struct {
	acc   []float64
	group []float64
	// nameHits counts the query groups that matched a part of the
	// document's name; nameParts caches the document's part count.
	nameHits  []uint8
	nameParts []uint8
	groupName []bool
	// cand marks the documents accumulateOnly scores, and cands lists
	// them (accumulateClausesTop).
	cand  []bool
	cands []int
	// prow holds accumulateClausesTop's partial scores, a row per
	// touched document, and crows its candidates' rows.
	prow     []float64
	crows    []int32
	touched  []int
	gtouched []int
	// With a split request (clauses > 0), slot[g]-1 is the position of
	// document g in touched, and clause c's score and name hits of the
	// document at position i are cacc[i*clauses+c] and cname[...].
	clauses int
	slot    []int32
	cacc    []float64
	cname   []uint8
	// cbest is each clause's best score and scale each clause's scale,
	// set by fuseClauses; cterms is each clause's number of terms.
	cbest  [maxClauses]float64
	scale  [maxClauses]float64
	cterms [maxClauses]int
	// segs is the segment pass's scratch (prune_segs.go).
	segs segScratch
}

func (ix *Index) getScratch(n int) *scratch {
	sc, _ := ix.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if len(sc.acc) < n {
		sc.acc = make([]float64, n)
		sc.group = make([]float64, n)
		sc.nameHits = make([]uint8, n)
		sc.nameParts = make([]uint8, n)
		sc.groupName = make([]bool, n)
		sc.cand = make([]bool, n)
		sc.slot = make([]int32, n)
	}
	return sc
}

func (ix *Index) putScratch(sc *scratch) {
	for _, g := range sc.touched {
		sc.acc[g] = 0
		sc.nameHits[g] = 0
		sc.slot[g] = 0
	}
	sc.clauses = 0
	sc.cbest = [maxClauses]float64{}
	sc.scale = [maxClauses]float64{}
	sc.cterms = [maxClauses]int{}
	sc.cacc = sc.cacc[:0]
	sc.cname = sc.cname[:0]
	sc.prow = sc.prow[:0]
	sc.touched = sc.touched[:0]
	sc.gtouched = sc.gtouched[:0]
	ix.scratch.Put(sc)
}

// scored is a candidate hit during ranking.
type scored struct {
	g     int     // index-wide document number
	score float64 // final score, bonuses included
	base  float64 // text score, for the cutoff
	exact bool
	fuzzy bool
}

// Search ranks the tools for query and returns at most limit hits (limit
// <= 0 means Options.DefaultLimit; larger than Options.MaxLimit is capped).
// An empty query browses: Result.Browse lists tool names by server. A query
// that matches nothing gets Browse and DidYouMean instead of hits.
func (ix *Index) Search(query string, limit int) Result {
	if limit <= 0 {
		limit = ix.opts.DefaultLimit
	}
	limit = min(limit, ix.opts.MaxLimit)
	query = strings.TrimSpace(truncate(query, ix.opts.MaxQueryBytes))

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if query == "" || ix.nDocs == 0 {
		return Result{Browse: ix.browse()}
	}

	sc := ix.getScratch(ix.nDocs)
	defer ix.putScratch(sc)
	groups, clauses := ix.parseRequest(query)
	sc.clauses = clauses
	sc.cterms = clauseTerms(groups, clauses)
	exact := ix.exactRefs(query)
	// A one-word query may rank by fuzzy name, which reads any tool's
	// score: it is scored exhaustively.
	var pr *pruned
	var lead []int
	if !isOneWord(query) && ix.shouldPrune(groups) {
		must := make([]int, len(exact))
		for i, ref := range exact {
			must[i] = ref.seg.base + int(ref.doc)
		}
		if clauses == 0 {
			pr = ix.accumulateTop(groups, sc, max(limit, 2), must)
		} else {
			pr, lead = ix.accumulateClausesTop(groups, sc, max(limit, 2), must)
		}
	}
	if pr == nil {
		ix.accumulate(groups, sc)
		lead = ix.fuseClauses(sc)
	}

	top, best, second := sc.leaders()
	// Feedback comes after best, so the cutoff stays relative to how well
	// the request's own words matched: the leader gains most from its own
	// words, and a cutoff on its new score dropped the runners-up (BFCL
	// Recall@5 fell 0.5 points, MetaTool 3.1).
	ix.feedback(groups, sc, top, best, second, pr)
	bonus := make(map[int]*scored)
	for _, ref := range exact {
		g := ref.seg.base + int(ref.doc)
		bonus[g] = &scored{g: g, base: sc.acc[g], score: sc.acc[g] + ix.opts.ExactBonus, exact: true}
	}
	var dym []fuzzyCand
	// Fuzzy name matching is for one-word queries: a misspelt tool name,
	// or a single word that matched nothing. Did-you-mean on a sentence
	// helps no one and would scan every name.
	if len(bonus) == 0 && isOneWord(query) && (best == 0 || isIdentifierLike(query)) {
		dym = ix.fuzzyNames(query)
		for _, c := range dym {
			if c.sim < fuzzyHitSim {
				continue
			}
			g := c.ref.seg.base + int(c.ref.doc)
			bonus[g] = &scored{g: g, base: sc.acc[g], score: sc.acc[g] + c.sim*max(best, 1), fuzzy: true}
		}
	}

	hits := ix.topHits(sc, bonus, best, limit, lead)
	res := Result{Hits: hits}
	for i, c := range dym {
		if i == ix.opts.DidYouMeanMax {
			break
		}
		res.DidYouMean = append(res.DidYouMean, c.ref.id())
	}
	if len(hits) == 0 {
		res.Hits = ix.partialHits(query, limit)
		res.Partial = len(res.Hits) > 0
		res.Browse = ix.browse()
	}
	return res
}

// partialHits ranks the tools for the partial matches of query's words
// (partialGroups), for a request that matched nothing as written. Caller
// holds mu (read).
func (ix *Index) partialHits(query string, limit int) []Hit {
	sc := ix.getScratch(ix.nDocs)
	defer ix.putScratch(sc)
	ix.accumulate(ix.partialGroups(query), sc)
	best := 0.0
	for _, g := range sc.touched {
		best = max(best, sc.acc[g])
	}
	// A tool named like one word of the request ("help" in "can you
	// help") counts as much as the best partial match: its name may be a
	// stop word that no term carries.
	forEachWord(query, func(word string, _ bool) {
		for _, ref := range ix.names[strings.ToLower(word)] {
			g := ref.seg.base + int(ref.doc)
			if sc.acc[g] == 0 {
				sc.touch(g)
			}
			sc.acc[g] += max(best, 1)
		}
	})
	return ix.topHits(sc, nil, best, limit, nil)
}

// accumulate adds every document's BM25F score for groups into sc.acc.
// Caller holds mu (read).
func (ix *Index) accumulate(groups []queryGroup, sc *scratch) {
	ix.accumulateOnly(groups, sc, nil, nil)
}

// accumulateOnly is accumulate for the documents g with only[g] set
// (every document when only is nil): the others' postings are skipped
// unread. docs, when not nil, lists those documents in order: a term's
// chunks that hold none of them are then skipped whole, for a few
// hundred candidates meet few of a common term's thousands of chunks.
// Caller holds mu (read).
func (ix *Index) accumulateOnly(groups []queryGroup, sc *scratch, only []bool, docs []int) {
	n := float64(ix.nDocs)
	norm := &ix.norm
	k1 := ix.opts.K1
	idf := func(t string) float64 {
		df := 0.0
		if e := ix.terms[t]; e != nil {
			df = float64(e.df)
		}
		return math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	for _, grp := range groups {
		single := len(grp.alts) == 1
		// A synonym is worth at most what the query's own word is worth:
		// a rare synonym must not outscore a common exact match.
		maxIDF := idf(grp.alts[0].term)
		for _, a := range grp.alts {
			e := ix.terms[a.term]
			if e == nil || e.df == 0 {
				continue
			}
			wq := a.w * min(idf(a.term), maxIDF)
			post := e.post
			// lo is the first of docs not before the chunk; chunks in
			// document order meet docs in order.
			skip, lo := docs != nil && !e.unordered, 0
			for _, c := range e.chunks {
				base := int(ix.bases[c.slot])
				meta := ix.meta[base:]
				run := post[:c.n]
				post = post[c.n:]
				if skip && len(run) > 0 {
					for lo < len(docs) && docs[lo] < base {
						lo++
					}
					if lo == len(docs) {
						break
					}
					if docs[lo] > base+int(run[len(run)-1].doc) {
						continue
					}
				}
				for _, p := range run {
					g := base + int(p.doc)
					if only != nil && !only[g] {
						continue
					}
					m := &meta[p.doc]
					tfn := norm.tfNorm(&p, m)
					if tfn == 0 {
						continue
					}
					s := wq * tfn / (k1 + tfn)
					if single {
						if sc.acc[g] == 0 {
							sc.touch(g)
							sc.nameParts[g] = m.nameParts
						}
						sc.acc[g] += s
						if p.namePart && sc.nameHits[g] < math.MaxUint8 {
							sc.nameHits[g]++
						}
						if grp.clauses != 0 {
							sc.addClauses(g, grp.clauses, s, p.namePart)
						}
						continue
					}
					if sc.group[g] == 0 {
						sc.gtouched = append(sc.gtouched, g)
						sc.nameParts[g] = m.nameParts
					}
					sc.group[g] = max(sc.group[g], s)
					sc.groupName[g] = sc.groupName[g] || p.namePart
				}
			}
		}
		for _, g := range sc.gtouched {
			if sc.acc[g] == 0 {
				sc.touch(g)
			}
			sc.acc[g] += sc.group[g]
			if grp.clauses != 0 {
				sc.addClauses(g, grp.clauses, sc.group[g], sc.groupName[g])
			}
			sc.group[g] = 0
			if sc.groupName[g] {
				sc.nameHits[g] = min(sc.nameHits[g], math.MaxUint8-1) + 1
				sc.groupName[g] = false
			}
		}
		sc.gtouched = sc.gtouched[:0]
	}
	// Tools are named for what they do ("create_issue"), so a query that
	// covers the whole name is a strong signal beyond the terms' weights.
	if beta := ix.opts.NameCoverage; beta > 0 {
		for i, g := range sc.touched {
			parts := float64(sc.nameParts[g])
			if parts == 0 {
				continue
			}
			if sc.nameHits[g] > 0 {
				sc.acc[g] *= 1 + beta*min(1, float64(sc.nameHits[g])/parts)
			}
			for c := range sc.clauses {
				if h := sc.cname[i*sc.clauses+c]; h > 0 {
					sc.cacc[i*sc.clauses+c] *= 1 + beta*min(1, float64(h)/parts)
				}
			}
		}
	}
}

// keepLeads puts the lead documents missing from top into it, each in
// place of the lowest-ranked document that is not a lead, and keeps top
// in score order.
func keepLeads(top []scored, lead []int, sc *scratch, limit int) []scored {
	isLead := func(g int) bool { return slices.Contains(lead, g) }
	for _, g := range lead {
		if slices.ContainsFunc(top, func(c scored) bool { return c.g == g }) {
			continue
		}
		c := scored{g: g, score: sc.acc[g], base: sc.acc[g]}
		if len(top) < limit {
			top = append(top, c)
			continue
		}
		i := len(top) - 1
		for i >= 0 && isLead(top[i].g) {
			i--
		}
		if i < 0 {
			break
		}
		top[i] = c
	}
	slices.SortStableFunc(top, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.g - b.g
	})
	return top
}

// leaders returns the document with the best score in sc.acc (-1 if
// none), that score and the second best.
func (sc *scratch) leaders() (lead int, first, second float64) {
	lead = -1
	for _, g := range sc.touched {
		switch s := sc.acc[g]; {
		case s > first:
			lead, first, second = g, s, first
		case s > second:
			second = s
		}
	}
	return lead, first, second
}

// touch records the first score of document g.
func (sc *scratch) touch(g int) {
	sc.touched = append(sc.touched, g)
	if sc.clauses > 0 {
		sc.slot[g] = int32(len(sc.touched))
		for range sc.clauses {
			sc.cacc = append(sc.cacc, 0)
			sc.cname = append(sc.cname, 0)
		}
	}
}

// addClauses adds score s of one query group to document g's score in
// every clause of mask; name says the group matched a part of its name.
func (sc *scratch) addClauses(g int, mask uint8, s float64, name bool) {
	base := (int(sc.slot[g]) - 1) * sc.clauses
	for ; mask != 0; mask &= mask - 1 {
		c := base + bits.TrailingZeros8(mask)
		sc.cacc[c] += s
		if name && sc.cname[c] < math.MaxUint8 {
			sc.cname[c]++
		}
	}
}

// fuseClauses folds the clauses' rankings of a split request into sc.acc:
// each tool gains ClauseWeight x its score in each clause, scaled by
// sqrt(best whole-request score / that clause's best score). The tool
// that best answers a clause thus gains ClauseWeight x the geometric mean
// of the two best scores however little the rest of the request says
// about it, so a task that needs several tools gets each of them a place
// near the top, while a clause that matches little ("in Seoul, South
// Korea") lifts little. Plain normalisation by the clause's best (every
// clause's best gains the same) cost BFCL 0.5 points of Recall@5.
//
// The tool that leads a clause of three terms or more then gains
// ClauseLeadBonus x its clause score on top (boostLeads, clauselead.go).
//
// It returns the document that leads each clause, for topHits to keep.
func (ix *Index) fuseClauses(sc *scratch) []int {
	w := ix.opts.ClauseWeight
	if sc.clauses == 0 || w <= 0 {
		return nil
	}
	var best float64
	var cbest [maxClauses]float64
	var lead [maxClauses]int
	for i, g := range sc.touched {
		best = max(best, sc.acc[g])
		for c := range sc.clauses {
			if v := sc.cacc[i*sc.clauses+c]; v > cbest[c] {
				cbest[c], lead[c] = v, g
			}
		}
	}
	// Each clause's scale once, not a square root per tool and clause:
	// a long request touches thousands of tools.
	var scale [maxClauses]float64
	for c := range sc.clauses {
		if cbest[c] > 0 {
			scale[c] = w * math.Sqrt(best/cbest[c])
		}
	}
	top := 0.0
	for i, g := range sc.touched {
		row := sc.cacc[i*sc.clauses : (i+1)*sc.clauses]
		for c, v := range row {
			sc.acc[g] += scale[c] * v
		}
		top = max(top, sc.acc[g])
	}
	sc.cbest, sc.scale = cbest, scale
	sc.boostLeads(lead, ix.opts.ClauseLeadBonus, top)
	var out []int
	for c := range sc.clauses {
		if cbest[c] > 0 && !slices.Contains(out, lead[c]) {
			out = append(out, lead[c])
		}
	}
	return out
}

// topHits selects the best limit candidates, applies the cutoff and turns
// them into hits. The documents of lead, the best of each clause of a
// split request, are kept in whatever the limit (unless the limit is
// smaller than their number), in place of the lowest-ranked others, so
// that each part of a task gets a tool. Caller holds mu (read).
func (ix *Index) topHits(sc *scratch, bonus map[int]*scored, best float64, limit int, lead []int) []Hit {
	floor := 0.0
	if ix.opts.Cutoff > 0 {
		floor = ix.opts.Cutoff * best
	}
	top := make([]scored, 0, limit+1)
	better := func(a, b scored) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.g < b.g
	}
	offer := func(c scored) {
		if len(top) == limit && !better(c, top[len(top)-1]) {
			return
		}
		i, _ := slices.BinarySearchFunc(top, c, func(x, y scored) int {
			if better(x, y) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, c)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	for _, g := range sc.touched {
		if _, ok := bonus[g]; ok {
			continue
		}
		if s := sc.acc[g]; s >= floor {
			offer(scored{g: g, score: s, base: s})
		}
	}
	for _, b := range bonus {
		if b.exact || b.fuzzy || b.base >= floor {
			offer(*b)
		}
	}
	top = keepLeads(top, lead, sc, limit)
	hits := make([]Hit, 0, len(top))
	for _, c := range top {
		seg, d := ix.locate(c.g)
		if seg == nil {
			continue
		}
		hits = append(hits, Hit{
			ID:     seg.docs[d].id,
			Server: seg.server,
			Name:   seg.docs[d].name,
			Score:  c.score,
			Exact:  c.exact,
			Fuzzy:  c.fuzzy,
		})
	}
	return hits
}
