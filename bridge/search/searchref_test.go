package search

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// This file keeps the exhaustive term-at-a-time scorer that Search used
// before dynamic pruning, unchanged but for names, its own scratch space
// and the size of one allocation. It is the reference the pruned scorer must match exactly: the
// same hits in the same order, every field equal and scores equal bit for
// bit, the same DidYouMean and Browse (see prune_test.go).

// refScratch holds one reference search's score accumulators, indexed by
// index-wide document number.
type refScratch struct {
	acc       []float64
	group     []float64
	nameHits  []uint8
	nameParts []uint8
	groupName []bool
	touched   []int
	gtouched  []int
}

func newRefScratch(n int) *refScratch {
	return &refScratch{
		acc:       make([]float64, n),
		group:     make([]float64, n),
		nameHits:  make([]uint8, n),
		nameParts: make([]uint8, n),
		groupName: make([]bool, n),
	}
}

// refScored is a candidate hit during reference ranking.
type refScored struct {
	g     int     // index-wide document number
	score float64 // final score, bonuses included
	base  float64 // text score, for the cutoff
	exact bool
	fuzzy bool
}

// refScratches keeps one reference scratch per index: the differential
// tests run hundreds of thousands of reference searches. They run one
// search at a time per index.
var refScratches sync.Map // *Index -> *refScratch

// refScratch returns ix's reference scratch, grown to the index's size.
func (ix *Index) refScratch() *refScratch {
	v, _ := refScratches.Load(ix)
	sc, _ := v.(*refScratch)
	if sc == nil || len(sc.acc) < ix.nDocs {
		sc = newRefScratch(ix.nDocs)
		refScratches.Store(ix, sc)
	}
	return sc
}

// reset zeroes what a search left in sc.
func (sc *refScratch) reset() {
	for _, g := range sc.touched {
		sc.acc[g] = 0
		sc.nameHits[g] = 0
	}
	sc.touched = sc.touched[:0]
	sc.gtouched = sc.gtouched[:0]
}

// searchRef is Search with the exhaustive scorer.
func (ix *Index) searchRef(query string, limit int) Result {
	return ix.searchRefLimits(query, []int{limit})[0]
}

// searchRefLimits answers query once per limit, scoring it once: the
// scores do not depend on the limit, only the selection does.
func (ix *Index) searchRefLimits(query string, limits []int) []Result {
	out := make([]Result, len(limits))
	limits = slices.Clone(limits)
	for i, limit := range limits {
		if limit <= 0 {
			limit = ix.opts.DefaultLimit
		}
		limits[i] = min(limit, ix.opts.MaxLimit)
	}
	query = strings.TrimSpace(truncate(query, ix.opts.MaxQueryBytes))

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if query == "" || ix.nDocs == 0 {
		for i := range out {
			out[i] = Result{Browse: ix.browse()}
		}
		return out
	}

	sc := ix.refScratch()
	defer sc.reset()
	ix.accumulateRef(ix.parseQuery(query), sc)

	best := 0.0
	for _, g := range sc.touched {
		best = max(best, sc.acc[g])
	}
	bonus := make(map[int]*refScored)
	for _, ref := range ix.exactRefs(query) {
		g := ref.seg.base + int(ref.doc)
		bonus[g] = &refScored{g: g, base: sc.acc[g], score: sc.acc[g] + ix.opts.ExactBonus, exact: true}
	}
	var dym []fuzzyCand
	if len(bonus) == 0 && isOneWord(query) && (best == 0 || isIdentifierLike(query)) {
		dym = ix.fuzzyNames(query)
		for _, c := range dym {
			if c.sim < fuzzyHitSim {
				continue
			}
			g := c.ref.seg.base + int(c.ref.doc)
			bonus[g] = &refScored{g: g, base: sc.acc[g], score: sc.acc[g] + c.sim*max(best, 1), fuzzy: true}
		}
	}

	for i, limit := range limits {
		hits := ix.topHitsRef(sc, bonus, best, limit)
		res := Result{Hits: hits}
		for i, c := range dym {
			if i == ix.opts.DidYouMeanMax {
				break
			}
			res.DidYouMean = append(res.DidYouMean, c.ref.id())
		}
		if len(hits) == 0 {
			res.Browse = ix.browse()
		}
		out[i] = res
	}
	return out
}

// accumulateRef adds every document's BM25F score for groups into sc.acc.
// Caller holds mu (read).
func (ix *Index) accumulateRef(groups []queryGroup, sc *refScratch) {
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
		maxIDF := idf(grp.alts[0].term)
		for _, a := range grp.alts {
			e := ix.terms[a.term]
			if e == nil || e.df == 0 {
				continue
			}
			wq := a.w * min(idf(a.term), maxIDF)
			post := e.post
			for _, c := range e.chunks {
				base, meta := c.seg.base, c.seg.meta
				run := post[:c.n]
				post = post[c.n:]
				for _, p := range run {
					m := &meta[p.doc]
					tfn := 0.0
					for mask := p.fields; mask != 0; mask &= mask - 1 {
						f := bits.TrailingZeros8(mask)
						tfn += float64(p.tf[f]) * norm[f][m.lenq[f]]
					}
					if tfn == 0 {
						continue
					}
					s := wq * tfn / (k1 + tfn)
					g := base + int(p.doc)
					if single {
						if sc.acc[g] == 0 {
							sc.touched = append(sc.touched, g)
							sc.nameParts[g] = m.nameParts
						}
						sc.acc[g] += s
						if p.namePart && sc.nameHits[g] < math.MaxUint8 {
							sc.nameHits[g]++
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
				sc.touched = append(sc.touched, g)
			}
			sc.acc[g] += sc.group[g]
			sc.group[g] = 0
			if sc.groupName[g] {
				sc.nameHits[g] = min(sc.nameHits[g], math.MaxUint8-1) + 1
				sc.groupName[g] = false
			}
		}
		sc.gtouched = sc.gtouched[:0]
	}
	if beta := ix.opts.NameCoverage; beta > 0 {
		for _, g := range sc.touched {
			if parts := sc.nameParts[g]; parts > 0 && sc.nameHits[g] > 0 {
				sc.acc[g] *= 1 + beta*min(1, float64(sc.nameHits[g])/float64(parts))
			}
		}
	}
}

// topHitsRef selects the best limit candidates, applies the cutoff and
// turns them into hits. Caller holds mu (read).
func (ix *Index) topHitsRef(sc *refScratch, bonus map[int]*refScored, best float64, limit int) []Hit {
	floor := 0.0
	if ix.opts.Cutoff > 0 {
		floor = ix.opts.Cutoff * best
	}
	top := make([]refScored, 0, min(limit, len(sc.touched)+len(bonus))+1)
	better := func(a, b refScored) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.g < b.g
	}
	offer := func(c refScored) {
		if len(top) == limit && !better(c, top[len(top)-1]) {
			return
		}
		i, _ := slices.BinarySearchFunc(top, c, func(x, y refScored) int {
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
			offer(refScored{g: g, score: s, base: s})
		}
	}
	for _, b := range bonus {
		if b.exact || b.fuzzy || b.base >= floor {
			offer(*b)
		}
	}
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
