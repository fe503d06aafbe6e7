package search

import (
	"math"
	"slices"
)

// Safe pruning of a request split into clauses.
//
// A split request's score of a tool is its whole-request score A plus,
// for each clause c, scale[c] x its clause score C[c], where scale[c] =
// ClauseWeight x sqrt(best A / best C[c]) (fuseClauses); the best tool of
// each clause (its lead) then gains ClauseLeadBonus. So besides the top k
// fused scores, the ranking needs the best A and each clause's best C[c]
// and lead, each of which any tool may hold. The exhaustive pass scores
// every posting, and adds it to each clause its term is in: at 100,000
// tools a split request cost 1.7 times the same request ranked as one,
// and its median five times the median of the requests not split.
//
// accumulateClausesTop runs one MaxScore pass for all of them at once:
//
//  1. it adds the query groups in falling order of their upper bound to A
//     and to the clauses they are in, as accumulate does but without name
//     coverage, tracking the best partial A and C[c]; with those, each
//     scale lies between two bounds. It stops touching new tools once a
//     tool it has not touched can neither be the best in A nor in any
//     clause, nor reach the k-th best lower bound of the fused score;
//  2. it keeps as candidates the touched tools that could still be any
//     of those, and must (the tools the query names exactly);
//  3. it runs accumulate and fuseClauses on the candidates alone: the
//     same additions in the same order, so every score that reaches the
//     ranking, and every best, scale and lead, is the exhaustive one to
//     the bit (the candidates are touched in the exhaustive pass's
//     order, so a tie for a clause's lead goes the same way). The tests
//     compare the two.

// fusion is a split request resolved for scoring one document at a time
// (admitFeedback).
type fusion struct {
	refs    []groupRef // the whole request's groups
	clauses int
	crefs   [maxClauses][]groupRef // clause c's groups
	scale   [maxClauses]float64
}

// fused is document g's score after fuseClauses (before the leads'
// bonus): the same additions in the same order. Caller holds mu (read).
func (ix *Index) fused(f *fusion, g int) float64 {
	s := ix.exactScore(f.refs, g)
	for c := range f.clauses {
		s += f.scale[c] * ix.exactScore(f.crefs[c], g)
	}
	return s
}

// clauseBounds are the running lower bounds of accumulateClausesTop's
// pass: the best partial whole-request score and clause scores so far.
type clauseBounds struct {
	best  float64
	cbest [maxClauses]float64
}

// accumulateClausesTop is accumulateTop for a request split into
// clauses: when it returns a non-nil state, sc holds what accumulate and
// fuseClauses leave in it for every document that can rank in the top k,
// each clause's lead and must, and lead is what fuseClauses returns. A
// nil state means nothing was pruned and sc is as it was: the caller runs
// accumulate and fuseClauses. Caller holds mu (read).
func (ix *Index) accumulateClausesTop(groups []queryGroup, sc *scratch, k int, must []int) (*pruned, []int) {
	nc := sc.clauses
	w := ix.opts.ClauseWeight
	if nc < 2 || w <= 0 {
		return nil, nil
	}
	boost := 1 + ix.opts.NameCoverage
	slack := 1 + pruneSlack
	refs := ix.resolve(groups)
	if !ordered(refs) {
		// admitFeedback would have no fused score to give a document.
		return nil, nil
	}
	ub, order := ix.groupBounds(refs)
	// rest[i] and crest[i][c] are what the groups from order[i] on can
	// add at most to A and to C[c].
	rest := make([]float64, len(order)+1)
	crest := make([][maxClauses]float64, len(order)+1)
	for i := len(order) - 1; i >= 0; i-- {
		j := order[i]
		rest[i], crest[i] = rest[i+1]+ub[j], crest[i+1]
		for c := range nc {
			if groups[j].clauses&(1<<c) != 0 {
				crest[i][c] += ub[j]
			}
		}
	}
	// scales bounds each clause's scale from below (lo) and above (hi)
	// with the groups from order[i] on left to add; hi is +Inf while a
	// clause with terms left has no score yet.
	var cb clauseBounds
	scales := func(i int) (lo, hi [maxClauses]float64) {
		bestHi := boost * (cb.best + rest[i])
		for c := range nc {
			if up := boost * (cb.cbest[c] + crest[i][c]); up > 0 {
				lo[c] = w * math.Sqrt(cb.best/up)
			}
			switch {
			case cb.cbest[c] > 0:
				hi[c] = w * math.Sqrt(bestHi/cb.cbest[c]) * slack
			case crest[i][c] > 0:
				hi[c] = math.Inf(1)
			}
		}
		return lo, hi
	}
	// frest is what the groups from order[i] on can add at most to the
	// fused score, given the scales' upper bounds.
	frest := func(i int, hi *[maxClauses]float64) float64 {
		r := 0.0
		for _, j := range order[i:] {
			m := 1.0
			for c := range nc {
				if groups[j].clauses&(1<<c) != 0 {
					m += hi[c]
				}
			}
			r += ub[j] * m
		}
		return r
	}
	// fusedLow is a lower bound of the fused score of touched document g.
	fusedLow := func(g int, lo *[maxClauses]float64) float64 {
		s := sc.acc[g]
		p := int(sc.slot[g]) - 1
		for c, v := range sc.cacc[p*nc : (p+1)*nc] {
			s += lo[c] * v
		}
		return s
	}
	theta := 0.0 // a lower bound of the k-th best fused score
	stop := len(order)
	for i, j := range order {
		if len(sc.touched) >= k && boost*rest[i]*slack < cb.best && cb.cbestAbove(boost*slack, crest[i][:nc]) {
			lo, hi := scales(i)
			// No touched document's lower bound exceeds best + sum
			// lo[c] x cbest[c]: while the rest reaches that, the k-th
			// best bound is not worth a pass over the touched.
			if r := frest(i, &hi); !math.IsInf(r, 1) && boost*r*slack < cb.fusedHigh(&lo, nc) {
				for _, g := range sc.touched {
					sc.group[g] = fusedLow(g, &lo)
				}
				theta = max(theta, kthOf(sc.touched, k, sc.group))
				for _, g := range sc.touched {
					sc.group[g] = 0
				}
				if boost*r*slack < theta {
					stop = i
					break
				}
			}
		}
		ix.addGroupClauses(groups[j], sc, &cb, nil)
	}
	if stop == len(order) {
		// Nothing left to skip: the exhaustive pass costs no more.
		ix.clearClauses(sc)
		return nil, nil
	}
	// The candidates: every touched document that may still be the best
	// in A or in a clause, or reach theta in the fused score, with the
	// groups from order[i] on left to add.
	cands := append(sc.cands[:0], sc.touched...)
	defer func() { sc.cands = cands[:0] }()
	filter := func(i int) {
		lo, hi := scales(i)
		r := frest(i, &hi)
		row := func(g int) []float64 {
			p := int(sc.slot[g]) - 1
			return sc.cacc[p*nc : (p+1)*nc]
		}
		// The fused scores' lower bounds, for the threshold, reuse
		// sc.group, which is zero outside addGroupClauses.
		for _, g := range cands {
			s := sc.acc[g]
			for c, v := range row(g) {
				s += lo[c] * v
			}
			sc.group[g] = s
		}
		theta = max(theta, kthOf(cands, k, sc.group))
		for _, g := range cands {
			sc.group[g] = 0
		}
		kept := cands[:0]
		for _, g := range cands {
			keep := boost*(sc.acc[g]+rest[i])*slack >= cb.best
			up := sc.acc[g] + r
			for c, v := range row(g) {
				keep = keep || cb.cbest[c] > 0 && boost*(v+crest[i][c])*slack >= cb.cbest[c]
				up += hi[c] * v
			}
			if keep || boost*up*slack >= theta {
				kept = append(kept, g)
				continue
			}
			sc.cand[g] = false
		}
		cands = kept
	}
	for _, g := range cands {
		sc.cand[g] = true
	}
	filter(stop)
	// Like accumulateTop, the groups left are added to the candidates
	// alone, each shrinking the rests, until few remain.
	for i := stop; i < len(order) && len(cands) > lookupMax; i++ {
		ix.addGroupClauses(groups[order[i]], sc, &cb, sc.cand)
		filter(i + 1)
	}
	ix.clearClauses(sc)
	for _, g := range must {
		sc.cand[g] = true
	}
	ix.accumulateOnly(groups, sc, sc.cand)
	lead := ix.fuseClauses(sc)
	for _, g := range cands {
		sc.cand[g] = false
	}
	for _, g := range must {
		sc.cand[g] = false
	}
	f := &fusion{refs: refs, clauses: nc, scale: sc.scale}
	for c := range nc {
		for j := range groups {
			if groups[j].clauses&(1<<c) != 0 {
				f.crefs[c] = append(f.crefs[c], refs[j])
			}
		}
	}
	return &pruned{k: k, theta: theta, refs: refs, fused: f}, lead
}

// fusedHigh bounds the fused lower bounds of every touched document:
// its partial A and clause scores are at most the bests.
func (cb *clauseBounds) fusedHigh(lo *[maxClauses]float64, nc int) float64 {
	s := cb.best
	for c := range nc {
		s += lo[c] * cb.cbest[c]
	}
	return s
}

// cbestAbove reports whether every clause's rest, times boost, is under
// its best partial score: no untouched document can lead a clause that
// still has terms to add.
func (cb *clauseBounds) cbestAbove(boost float64, crest []float64) bool {
	for c, r := range crest {
		if r > 0 && boost*r >= cb.cbest[c] {
			return false
		}
	}
	return true
}

// kthOf returns the k-th best of score[g] over docs, 0 if fewer.
func kthOf(docs []int, k int, score []float64) float64 {
	best := make([]float64, 0, k)
	for _, g := range docs {
		v := score[g]
		if len(best) == k {
			if v <= best[0] {
				continue
			}
			best = best[1:]
		}
		i, _ := slices.BinarySearch(best, v)
		best = slices.Insert(best, i, v)
	}
	if len(best) < k {
		return 0
	}
	return best[0]
}

// clearClauses empties sc of a split request's scores, keeping the
// clause count and terms.
func (ix *Index) clearClauses(sc *scratch) {
	for _, g := range sc.touched {
		sc.acc[g] = 0
		sc.nameHits[g] = 0
		sc.slot[g] = 0
	}
	sc.touched = sc.touched[:0]
	sc.cacc = sc.cacc[:0]
	sc.cname = sc.cname[:0]
}

// addGroupClauses adds one group's scores to sc.acc and, for the clauses
// it is in, to sc.cacc, touching the documents new to sc, and raises cb's
// bests: accumulate's inner loop without name coverage, which the
// bounds allow for. With only, it adds to the documents only marks
// alone, skipping the others' postings unread. Caller holds mu (read).
func (ix *Index) addGroupClauses(grp queryGroup, sc *scratch, cb *clauseBounds, only []bool) {
	n := float64(ix.nDocs)
	norm := &ix.norm
	k1 := ix.opts.K1
	nc := sc.clauses
	single := len(grp.alts) == 1
	maxIDF := ix.termIDF(grp.alts[0].term)
	add := func(g int, s float64) {
		if sc.acc[g] == 0 {
			sc.touch(g)
		}
		sc.acc[g] += s
		cb.best = max(cb.best, sc.acc[g])
		if grp.clauses == 0 {
			return
		}
		row := sc.cacc[(int(sc.slot[g])-1)*nc:]
		for c := range nc {
			if grp.clauses&(1<<c) != 0 {
				row[c] += s
				cb.cbest[c] = max(cb.cbest[c], row[c])
			}
		}
	}
	for _, a := range grp.alts {
		e := ix.terms[a.term]
		if e == nil || e.df == 0 {
			continue
		}
		wq := a.w * min(termIDF(n, e.df), maxIDF)
		post := e.post
		for _, c := range e.chunks {
			base := int(ix.bases[c.slot])
			meta := ix.meta[base:]
			run := post[:c.n]
			post = post[c.n:]
			for _, p := range run {
				g := base + int(p.doc)
				if only != nil && !only[g] {
					continue
				}
				tfn := norm.tfNorm(&p, &meta[p.doc])
				if tfn == 0 {
					continue
				}
				s := wq * tfn / (k1 + tfn)
				if single {
					add(g, s)
					continue
				}
				if sc.group[g] == 0 {
					sc.gtouched = append(sc.gtouched, g)
				}
				sc.group[g] = max(sc.group[g], s)
			}
		}
	}
	for _, g := range sc.gtouched {
		add(g, sc.group[g])
		sc.group[g] = 0
	}
	sc.gtouched = sc.gtouched[:0]
}
