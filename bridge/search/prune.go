package search

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Safe pruning of the first pass (MaxScore, a term at a time).
//
// At 100,000 tools a request's common words ("get", "file", "list") have
// tens of thousands of postings, and scoring all of them was three
// quarters of a search. Yet a document that has only common words cannot
// reach the top ten once the rare words have scored ten documents higher
// than the common words could ever add up to. So accumulateTop:
//
//  1. scores the query groups in falling order of their upper bound per
//     posting (cheapFirst: the rare words first) and stops as soon as
//     what the groups left could add, times the name-coverage boost, is
//     under the k-th best score so far (the k-th best partial score, or
//     the k-th best exact score of the k best partial ones, whichever is
//     higher): no document it has not touched can rank;
//  2. keeps as candidates the touched documents whose partial score plus
//     that rest can still reach it, adds the groups left to the
//     candidates alone (skipping the others' postings unread), and drops
//     the candidates that fall behind as the rest shrinks, until a few
//     hundred remain;
//  3. scores those exactly, group by group in the request's order with
//     accumulate's arithmetic, so their scores are bit for bit the
//     exhaustive ones.
//
// The order of step 1 is what it reads: a request's groups have bounds
// within a factor of two or so but from 60 to 60,000 postings, and by
// bound alone a common word a little above the next group was read whole
// before it. By bound per posting, on the mix's plain requests at 100,000
// tools with this pass (BenchmarkTermPass), the CPU p50 went from 1.203
// to 1.074 ms (p=0.002), p99 12.4 -> 10.9 ms; each request's least CPU
// of 5 runs, the two orders interleaved in one process: median 598 -> 527
// us, total -18%.
//
// The ranking does not change; only documents that could not rank go
// unscored. What needs more than the top k stays exact: feedback's
// leader and runner-up are in the top k, feedback admits every document
// its words could lift into the top k (admitFeedback), the tools the
// query names exactly are scored whatever their words, and a one-word
// query (fuzzy names) and a partial match are scored exhaustively. A
// request split into clauses has a pass of its own (prune_clauses.go).
// When every segment is small, accumulateTop scores a segment at a time
// instead, bounded by each chunk's own bound (prune_segs.go).

// pruneMinPostings is the fewest postings a request's terms must have for
// accumulateTop to be worth its bookkeeping: below it the exhaustive
// pass is as fast.
const pruneMinPostings = 4096

// pruneSlack widens every bound by a relative margin, so that rounding in
// the partial sums, which add in another order than the exact scores,
// can never prune a document that ties the threshold.
const pruneSlack = 1e-9

// pruneMode chooses between the pruned and the exhaustive first pass; the
// tests force either to compare them.
type pruneMode int8

const (
	pruneAuto pruneMode = iota
	pruneNever
	pruneAlways
)

// addBounds folds postings p of one segment (whose metadata is meta) into
// e's bounds. Caller holds mu, before p is added to e.
func (e *termEntry) addBounds(p []posting, meta []docMeta) {
	if len(e.chunks) == 0 {
		e.maxTF = [numFields]uint8{}
		for f := range e.minLen {
			e.minLen[f] = math.MaxUint8
		}
	}
	for i := range p {
		m := &meta[p[i].doc]
		for mask := p[i].fields; mask != 0; mask &= mask - 1 {
			f := bits.TrailingZeros8(mask)
			e.maxTF[f] = max(e.maxTF[f], p[i].tf[f])
			e.minLen[f] = min(e.minLen[f], m.lenq[f])
		}
	}
}

// termBound bounds tfn/(K1+tfn) over e's postings: a field's weight over
// its length normalisation only falls as the field grows, so no posting
// scores more in field f than the highest frequency at the shortest
// length. Caller holds mu (read).
func (ix *Index) termBound(e *termEntry) float64 {
	tfn := 0.0
	for f := range numFields {
		if e.maxTF[f] != 0 {
			tfn += float64(e.maxTF[f]) * ix.norm[f][e.minLen[f]]
		}
	}
	if tfn == 0 {
		return 0
	}
	return tfn / (ix.opts.K1 + tfn)
}

// shouldPrune reports whether the first pass of groups is pruned.
// Caller holds mu (read).
func (ix *Index) shouldPrune(groups []queryGroup) bool {
	if len(groups) < 2 {
		return false // one group: nothing to skip
	}
	switch ix.prune {
	case pruneNever:
		return false
	case pruneAlways:
		return true
	}
	n := 0
	for _, g := range groups {
		for _, a := range g.alts {
			if e := ix.terms[a.term]; e != nil {
				n += e.df
			}
		}
	}
	return n >= pruneMinPostings
}

// pruned describes a first pass that accumulateTop pruned.
type pruned struct {
	// k is the number of top documents that are exact.
	k int
	// theta bounds the first-pass score of every document left out of
	// sc.touched.
	theta float64
	// refs are the request's groups, resolved for exactScore.
	refs []groupRef
	// fused is set when the request is split into clauses: the first
	// pass's score is then fused (accumulateClausesTop).
	fused *fusion
}

// accumulateTop is accumulate for the top k documents only: when it
// returns a non-nil state, sc.touched holds every document that can rank
// in the top k, and must (documents a caller needs the score of, sorted
// or not), each with the score accumulate would give it, and
// sc.slot[g] != 0 marks them. A nil return means nothing was pruned and
// sc is as it was: the caller runs accumulate. Caller holds mu (read).
func (ix *Index) accumulateTop(groups []queryGroup, sc *scratch, k int, must []int) *pruned {
	if ix.useSegPass() {
		return ix.accumulateSegs(groups, sc, k, must)
	}
	boost := 1 + ix.opts.NameCoverage
	refs := ix.resolve(groups)
	ub, order := ix.groupBounds(refs)
	cheapFirst(refs, ub, order)
	// rest[i] is what the groups from order[i] on can add at most.
	rest := make([]float64, len(order)+1)
	for i := len(order) - 1; i >= 0; i-- {
		rest[i] = rest[i+1] + ub[order[i]]
	}
	left, theta := 0.0, 0.0
	stop := len(order)
	for i, j := range order {
		if len(sc.touched) >= k {
			need := rest[i] * boost * (1 + pruneSlack)
			theta = max(theta, sc.kthBest(k, nil))
			if need >= theta {
				// The partial scores miss what the groups left add; the
				// exact scores of the k best so far are a higher floor,
				// as MaxScore's threshold from fully scored documents.
				theta = max(theta, ix.exactFloor(refs, sc, k))
			}
			if need < theta {
				left, stop = rest[i], i
				break
			}
		}
		ix.addGroup(groups[j], sc, false)
	}
	if len(sc.touched) < k {
		// Fewer documents matched than the top holds: every one ranks,
		// and the exhaustive pass costs no more.
		for _, g := range sc.touched {
			sc.acc[g] = 0
		}
		sc.touched = sc.touched[:0]
		return nil
	}
	theta = max(theta, sc.kthBest(k, nil))
	sc.keepCandidates(left*boost, boost, theta)
	// Stopping as early as the bound allows leaves every document a
	// rest to add that nearly reaches the threshold, so most of those
	// touched stay candidates. The groups left are added to the
	// candidates alone (skipping the others' postings without scoring
	// them), each shrinking the rest, until few enough remain to look up
	// one by one: MaxScore's non-essential lists, a term at a time.
	for i := stop; i < len(order) && len(sc.touched) > lookupMax; i++ {
		ix.addGroup(groups[order[i]], sc, true)
		left = rest[i+1]
		theta = max(theta, sc.kthBest(k, nil))
		sc.keepCandidates(left*boost, boost, theta)
	}
	cands := sc.touched
	for _, g := range cands {
		sc.acc[g] = 0
	}
	for _, g := range must {
		if !slices.Contains(cands, g) {
			cands = append(cands, g)
		}
	}
	slices.Sort(cands)
	sc.touched = cands
	ix.admit(groups, refs, sc, cands)
	return &pruned{k: k, theta: theta, refs: refs}
}

// lookupMax is the most documents admit scores one by one (exactScore);
// more are scored in one walk over each term's chunks (rescore).
const lookupMax = 256

// keepCandidates keeps in sc.touched, marked in sc.slot, the documents
// whose partial score in sc.acc, with rest added and times boost, can
// still reach theta, and clears the others.
func (sc *scratch) keepCandidates(rest, boost, theta float64) {
	kept := sc.touched[:0]
	for _, g := range sc.touched {
		if (sc.acc[g]*boost+rest)*(1+pruneSlack) >= theta {
			kept = append(kept, g)
			sc.slot[g] = 1
			continue
		}
		sc.acc[g] = 0
		sc.slot[g] = 0
	}
	sc.touched = kept
}

// admit scores documents docs (sorted, new to sc) exactly and marks them
// touched. Caller holds mu (read).
func (ix *Index) admit(groups []queryGroup, refs []groupRef, sc *scratch, docs []int) {
	if len(docs) <= lookupMax && ordered(refs) {
		for _, g := range docs {
			sc.slot[g] = 1
			sc.acc[g] = ix.exactScore(refs, g)
		}
		return
	}
	// ix.meta is in the index-wide numbering: no segment to look up.
	for _, g := range docs {
		sc.slot[g] = 1
		sc.nameParts[g] = ix.meta[g].nameParts
	}
	ix.rescore(groups, sc, docs)
}

// groupRef is a query group resolved for scoring one document at a time:
// its alternatives' term entries and weights, as accumulate weighs them.
type groupRef struct {
	single bool
	alts   []altRef
}

type altRef struct {
	e  *termEntry
	wq float64
}

// resolve looks up the terms of groups. Caller holds mu (read).
func (ix *Index) resolve(groups []queryGroup) []groupRef {
	n := float64(ix.nDocs)
	out := make([]groupRef, len(groups))
	for j, grp := range groups {
		out[j].single = len(grp.alts) == 1
		maxIDF := ix.termIDF(grp.alts[0].term)
		for _, a := range grp.alts {
			if e := ix.terms[a.term]; e != nil && e.df > 0 {
				out[j].alts = append(out[j].alts, altRef{e: e, wq: a.w * min(termIDF(n, e.df), maxIDF)})
			}
		}
	}
	return out
}

// ordered reports whether every term of refs keeps its chunks in
// document order, so that lookup can bisect them.
func ordered(refs []groupRef) bool {
	for _, r := range refs {
		for _, a := range r.alts {
			if a.e.unordered {
				return false
			}
		}
	}
	return true
}

// lookup returns e's posting for index-wide document g with g's
// metadata, or nil. Caller holds mu (read).
func (ix *Index) lookup(e *termEntry, g int) (*posting, *docMeta) {
	cs := e.chunks
	i := -1
	if e.unordered {
		for k := range cs {
			if b := int(ix.bases[cs[k].slot]); g >= b && g < b+len(ix.slots[cs[k].slot].meta) {
				i = k
				break
			}
		}
	} else {
		i = sort.Search(len(cs), func(k int) bool { return int(ix.bases[cs[k].slot]) > g }) - 1
	}
	if i < 0 {
		return nil, nil
	}
	c := &cs[i]
	// A document past the segment's end has a local number above all
	// of the chunk's postings, so the search below misses it.
	local := g - int(ix.bases[c.slot])
	run := e.post[c.start : c.start+c.n]
	j, found := slices.BinarySearchFunc(run, uint32(local), func(p posting, d uint32) int {
		return cmp.Compare(p.doc, d)
	})
	if !found {
		return nil, nil
	}
	return &run[j], &ix.meta[g]
}

// exactScore is document g's score from accumulate, computed alone: the
// same additions in the same order. Caller holds mu (read).
func (ix *Index) exactScore(refs []groupRef, g int) float64 {
	norm := &ix.norm
	k1 := ix.opts.K1
	acc := 0.0
	var hits, parts uint8
	for _, r := range refs {
		best, name := 0.0, false
		for _, a := range r.alts {
			p, m := ix.lookup(a.e, g)
			if p == nil {
				continue
			}
			tfn := norm.tfNorm(p, m)
			if tfn == 0 {
				continue
			}
			parts = m.nameParts
			s := a.wq * tfn / (k1 + tfn)
			if r.single {
				acc += s
				if p.namePart && hits < math.MaxUint8 {
					hits++
				}
				continue
			}
			best = max(best, s)
			name = name || p.namePart
		}
		if best != 0 {
			acc += best
			if name {
				hits = min(hits, math.MaxUint8-1) + 1
			}
		}
	}
	if beta := ix.opts.NameCoverage; beta > 0 && parts != 0 && hits > 0 {
		acc *= 1 + beta*min(1, float64(hits)/float64(parts))
	}
	return acc
}

// exactFloor returns the k-th best exact score among the k documents with
// the best partial scores in sc: a lower bound on the k-th best score.
// Caller holds mu (read).
func (ix *Index) exactFloor(refs []groupRef, sc *scratch, k int) float64 {
	if !ordered(refs) {
		return 0
	}
	floor := math.Inf(1)
	for _, g := range sc.topDocs(k) {
		floor = min(floor, ix.exactScore(refs, g))
	}
	return floor
}

// termIDF is the idf of term t in the index. Caller holds mu (read).
func (ix *Index) termIDF(t string) float64 {
	df := 0
	if e := ix.terms[t]; e != nil {
		df = e.df
	}
	return termIDF(float64(ix.nDocs), df)
}

// addGroup adds one group's scores to sc.acc: the partial sums
// accumulateTop bounds with. It touches the documents new to sc, or with
// only, adds to the documents sc.slot marks alone, skipping the other
// postings before reading anything else of them. Caller holds mu (read).
func (ix *Index) addGroup(grp queryGroup, sc *scratch, only bool) {
	n := float64(ix.nDocs)
	norm := &ix.norm
	k1 := ix.opts.K1
	single := len(grp.alts) == 1
	maxIDF := ix.termIDF(grp.alts[0].term)
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
				if only && sc.slot[g] == 0 {
					continue
				}
				m := &meta[p.doc]
				tfn := norm.tfNorm(&p, m)
				if tfn == 0 {
					continue
				}
				s := wq * tfn / (k1 + tfn)
				if single {
					if sc.acc[g] == 0 && !only {
						sc.touched = append(sc.touched, g)
					}
					sc.acc[g] += s
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
		if sc.acc[g] == 0 && !only {
			sc.touched = append(sc.touched, g)
		}
		sc.acc[g] += sc.group[g]
		sc.group[g] = 0
	}
	sc.gtouched = sc.gtouched[:0]
}

// rescore gives documents docs (sorted, with zero scores and name hits)
// the scores accumulate gives them, looking each up in the postings
// instead of reading every posting. The additions per document are
// accumulate's, in its order, so the scores are identical to the bit.
// Caller holds mu (read).
func (ix *Index) rescore(groups []queryGroup, sc *scratch, docs []int) {
	n := float64(ix.nDocs)
	norm := &ix.norm
	k1 := ix.opts.K1
	for _, grp := range groups {
		single := len(grp.alts) == 1
		maxIDF := ix.termIDF(grp.alts[0].term)
		for _, a := range grp.alts {
			e := ix.terms[a.term]
			if e == nil || e.df == 0 {
				continue
			}
			wq := a.w * min(termIDF(n, e.df), maxIDF)
			post := e.post
			// In document order, the chunks meet the documents in
			// order: a cursor replaces a search per chunk.
			lo := 0
			for _, c := range e.chunks {
				run := post[:c.n]
				post = post[c.n:]
				if len(run) == 0 {
					continue
				}
				base := int(ix.bases[c.slot])
				meta := ix.meta[base:]
				// The chunk's last document ends the candidates it can
				// hold, without a look at its segment.
				end := base + int(run[len(run)-1].doc)
				if e.unordered {
					lo, _ = slices.BinarySearch(docs, base)
				} else {
					for lo < len(docs) && docs[lo] < base {
						lo++
					}
					if lo == len(docs) {
						break
					}
				}
				for _, g := range docs[lo:] {
					if g > end {
						break
					}
					i, found := slices.BinarySearchFunc(run, uint32(g-base), func(p posting, d uint32) int {
						return cmp.Compare(p.doc, d)
					})
					if !found {
						run = run[i:]
						continue
					}
					p := run[i]
					run = run[i+1:]
					m := &meta[p.doc]
					tfn := norm.tfNorm(&p, m)
					if tfn == 0 {
						continue
					}
					s := wq * tfn / (k1 + tfn)
					if single {
						sc.acc[g] += s
						if p.namePart && sc.nameHits[g] < math.MaxUint8 {
							sc.nameHits[g]++
						}
						continue
					}
					if sc.group[g] == 0 {
						sc.gtouched = append(sc.gtouched, g)
					}
					sc.group[g] = max(sc.group[g], s)
					sc.groupName[g] = sc.groupName[g] || p.namePart
				}
			}
		}
		for _, g := range sc.gtouched {
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
		for _, g := range docs {
			parts := float64(sc.nameParts[g])
			if parts == 0 {
				continue
			}
			if sc.nameHits[g] > 0 {
				sc.acc[g] *= 1 + beta*min(1, float64(sc.nameHits[g])/parts)
			}
		}
	}
}

// topDocs returns the k touched documents with the best sc.acc.
func (sc *scratch) topDocs(k int) []int {
	// best holds the k best so far, ascending by score.
	best := make([]int, 0, k)
	for _, g := range sc.touched {
		v := sc.acc[g]
		if len(best) == k {
			if v <= sc.acc[best[0]] {
				continue
			}
			best = best[1:]
		}
		i, _ := slices.BinarySearchFunc(best, v, func(d int, v float64) int { return cmp.Compare(sc.acc[d], v) })
		best = slices.Insert(best, i, g)
	}
	return best
}

// kthBest returns the k-th best of sc.acc[g] (plus extra[g] when extra
// is not nil) over the touched documents, 0 if fewer.
func (sc *scratch) kthBest(k int, extra []float64) float64 {
	// best holds the k best so far, ascending.
	best := make([]float64, 0, k)
	for _, g := range sc.touched {
		v := sc.acc[g]
		if extra != nil {
			v += extra[g]
		}
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

// admitFeedback scores exactly, before feedback adds the words of terms
// (weights wq), every document outside the pruned first pass that those
// words could lift into the top: its first-pass score is under pr.theta,
// so one whose feedback score and theta stay under the k-th best
// candidate's final score cannot rank. Caller holds mu (read).
func (ix *Index) admitFeedback(groups []queryGroup, sc *scratch, pr *pruned, terms []*termEntry, wqs []float64) {
	k1 := ix.opts.K1
	for i, e := range terms {
		wq := wqs[i]
		post := e.post
		for _, c := range e.chunks {
			base := int(ix.bases[c.slot])
			meta := ix.meta[base:]
			run := post[:c.n]
			post = post[c.n:]
			for _, p := range run {
				tfn := 0.0
				for f := range numFields {
					if p.tf[f] != 0 {
						tfn += float64(p.tf[f]) * ix.norm[f][meta[p.doc].lenq[f]]
					}
				}
				if tfn == 0 {
					continue
				}
				g := base + int(p.doc)
				if sc.group[g] == 0 {
					sc.gtouched = append(sc.gtouched, g)
				}
				sc.group[g] += wq * tfn / (k1 + tfn)
			}
		}
	}
	floor := sc.kthBest(pr.k, sc.group)
	var add []int
	for _, g := range sc.gtouched {
		if sc.slot[g] == 0 && (pr.theta+sc.group[g])*(1+pruneSlack) >= floor {
			add = append(add, g)
		}
		sc.group[g] = 0
	}
	sc.gtouched = sc.gtouched[:0]
	if len(add) == 0 {
		return
	}
	slices.Sort(add)
	sc.touched = append(sc.touched, add...)
	if pr.fused != nil {
		for _, g := range add {
			sc.slot[g] = 1
			sc.acc[g] = ix.fused(pr.fused, g)
		}
		return
	}
	ix.admit(groups, pr.refs, sc, add)
}

// groupBounds returns each group's score bound (the best of its
// alternatives') and the groups' order by that bound, highest first: the
// order both pruned passes read postings in, so that the rarest, most
// telling terms decide early which documents can still rank.
func (ix *Index) groupBounds(refs []groupRef) (ub []float64, order []int) {
	ub = make([]float64, len(refs))
	for j, r := range refs {
		for _, a := range r.alts {
			ub[j] = max(ub[j], a.wq*ix.termBound(a.e))
		}
	}
	order = make([]int, len(refs))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ub[b], ub[a]) })
	return ub, order
}
