package search

import (
	"cmp"
	"math"
	"math/bits"
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
//  1. it adds the query groups in falling order of their upper bound per
//     posting (cheapFirst) to A and to the clauses they are in, as
//     accumulate does but without name coverage, tracking the best
//     partial A and C[c]; with those, each scale lies between two
//     bounds. It stops touching new tools once a tool it has not touched
//     can neither be the best in A nor in any clause, nor reach the k-th
//     best lower bound of the fused score;
//  2. it keeps as candidates the touched tools that could still be any
//     of those, and must (the tools the query names exactly);
//  3. it runs accumulate and fuseClauses on the candidates alone: the
//     same additions in the same order, so every score that reaches the
//     ranking, and every best, scale and lead, is the exhaustive one to
//     the bit (the candidates are touched in the exhaustive pass's
//     order, so a tie for a clause's lead goes the same way). The tests
//     compare the two.
//
// The first phase's order is what it reads: a request's groups have
// bounds within a factor of two or so, and from 60 to 60,000 postings, so
// in falling order of bound alone a common word a few percent above the
// next group was read whole before it. By bound per posting, over the
// mix's split requests at 100,000 tools, the first phase reads 23,900
// postings a request instead of 31,400, touches 16,500 tools instead of
// 20,500, and keeps 6,000 candidates after its first filter instead of
// 7,200; the requests' median (each one's least CPU of 5 runs, the
// orders interleaved in one process) 2.04 -> 1.68 and 2.10 -> 1.77 ms,
// their total -14%. Ordered by the bound squared or cubed per posting,
// the median was 1.75 and 1.78 ms; by the bound over the square root or
// the log of the postings, 1.72 and 1.84 ms; by the bound times one
// plus the number of clauses the group is in, per posting, or with 64
// postings more counted a term, 1.84 and 1.90 ms against 1.91 ms in
// that run (the machine busier), within its noise. Nor did putting the
// groups left after the first phase back in falling order of bound, so
// that the candidates shrink fastest, change anything (median 1.74 ->
// 1.75 ms, the total within 0.2%).
//
// Measured at 100,000 tools on the mix's 394 split requests that prune,
// and not kept (each exact: the same top 10 as without it):
//
//   - The first phase is held by the groups' term bounds, not by its
//     thresholds: with the final best, clause bests and k-th best fused
//     score known from the start, it would still read 8.4 of a request's
//     13.8 groups (9.3 now), 23,300 of its 57,000 postings (30,600 now).
//     The best chunk bound as a term's bound is a median 4% tighter.
//   - Cold segments: a segment whose chunks' bounds for the groups left,
//     whole request and clause by clause, reach none of the thresholds
//     touches no new tool. It skipped 25% of the first phase's postings,
//     but the bounds cost as much: the requests' CPU p50 (each one's least
//     of 3 runs) 2.56-2.94 ms against 2.65-2.95 ms without, three rounds;
//     also skipping, unread, the chunks of cold
//     segments with no tool touched: 2.69-2.94 against 2.56-2.77 ms. Every
//     segment was cold before the term bounds stopped the phase in 54
//     requests, 0.2 groups earlier on average.
//   - The same test a chunk at a time, against the groups' term bounds:
//     it applied to 7% of the postings and skipped 2%, no change (2.29-2.49
//     against 2.35-2.45 ms).
//   - In one process, each request's least CPU of 5 runs interleaved:
//     marking the candidates after the first filter instead of every
//     touched tool before it, -1.7% (since done, with the first filter
//     walking the rows without listing them first: the split requests'
//     CPU p50 2.40 -> 2.11 ms, p=0.015, test binaries alternated six
//     times); a group of one clause added without
//     the loop over its clauses, -0.5%; skipping a chunk in
//     accumulateOnly by the next chunk's base instead of its last
//     posting, +1.5 to +2.3%; filterRows and kthFusedLow with local
//     copies of the thresholds for rows of three clauses or more, -4.0
//     to -4.4% on those 144 requests, but within noise in the test
//     binaries alternated six times (SplitRequests CPU p50 2.22 -> 2.37
//     ms, p=0.589; Scaling at 100,000 tools 1.09 -> 1.04 ms, p=0.310).
//   - The per-posting work of addGroupClauses, which the profile puts
//     in tfNorm's length lookup and the row appends: room for a row per
//     posting reserved up front, so that touching a document takes no
//     append (the 394 requests' median 2.47 -> 2.51 and 2.47 -> 2.46 ms,
//     their total -0.9% and -0.3%, each request's least CPU of 5 runs
//     interleaved in one process); docMeta padded to 8 bytes, so that no
//     entry straddles a cache line (median 2.23 -> 2.33 and 2.35 -> 2.22
//     ms, the two binaries alternated twice); tfNorm adding all six
//     fields without a branch (norm[f][0] set to 0 to keep it finite),
//     slower (SplitRequests CPU p50 2.40 -> 2.47 and 2.43 -> 2.66 ms).
//     The loop is bound by its memory reads, not by those instructions.
//     Nor did keeping a multi-term group's best alternative per row
//     (beside sc.prow) instead of per document (sc.group, 800 KB read
//     at random) change anything: the split requests' median 2.23 ->
//     2.13, 2.26 -> 2.37 and 2.37 -> 2.32 ms, the total within 1%
//     (each request's least CPU of 5 runs, the binaries alternated
//     three times).
//   - Scoring a segment at a time, with the chunk bounds and a bound
//     tool class by tool class as the plain requests' segment pass has
//     them (prune_segs.go), and this pass's last step on the tools that
//     may reach the best whole-request score, a clause's best (ties
//     included) or the fused top k: the 32 segments of best bound and
//     each clause's best segment first; then every segment that may hold
//     a best, after which the scales are exact; then every segment that
//     may hold a fused top-k tool. Exact (the tests above pass), and it
//     scores 166 of a request's 2,428 segments (3,158 tools, 23 of them
//     candidates), but bounding costs more than reading the postings
//     term at a time: 1,586 tool-class bounds a request, each reading
//     its chunks' postings (toolClasses), were 63% of the pass. The 394
//     requests' median 2.20 -> 3.12 and 2.35 -> 3.28 ms (+42%), their
//     total +50% (each request's least CPU of 5 runs, the two binaries
//     alternated twice). With one sweep, the scales bounded from the
//     unscored segments' bounds and the full name-coverage boost in the
//     class bounds, it scored 759 segments a request and was +45%.
//   - Skipping chunks with no candidate after the first phase. A
//     profile of 600 split requests (SplitRequests/prune=auto) puts
//     accumulateClausesTop's 1.71 s at: the first phase's additions 650
//     ms, the k-th bound passes while it runs (kthFusedLow) 40 ms,
//     filter(stop) over every touched row 180 ms, the second phase's
//     additions 190 ms and its filters 130 ms, accumulateOnly 330 ms.
//     In the second phase, skipping a chunk whose documents (first to
//     last posting) hold no candidate, tested on a bit per document kept
//     beside sc.cand (set with it, cleared in filterRows): the split
//     requests' CPU p50 2.38 -> 2.41 ms (p=1.000). In accumulateOnly,
//     skipping a chunk on a mark per segment slot (the candidates'
//     segments, found by bisecting ix.order) instead of advancing
//     through docs by each chunk's base and last posting: its profile
//     share 330 -> 210 ms, but the split requests' CPU p50 2.12 -> 2.16
//     ms (p=0.589) and 2.27 -> 2.31 ms (p=0.699), Scaling at 100,000
//     tools 945 -> 967 us (p=0.240), at 10,000 200 -> 208 us (p=0.394).
//     Each exact (the tests above pass); test binaries alternated six
//     times, benchstat. The k-th bound pass at the stop point and
//     filter(stop) merged into one walk of the rows would save at most
//     the 40 ms above, about 2%, under this noise: not tried.

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
	cheapFirst(refs, ub, order)
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
	// The pass keeps its partial scores in sc.prow, a row per touched
	// document in the order touched: the whole request's score, then
	// each clause's. The passes over the touched documents that bound
	// the fused scores (the threshold and the filter below) then read
	// memory front to back, where reading sc.acc and sc.slot by
	// document number, at random, cost a cache miss per document at
	// 100,000 tools: those passes were a third of a split request.
	nr := nc + 1
	theta := 0.0 // a lower bound of the k-th best fused score
	var best topScores
	stop := len(order)
	for i, j := range order {
		if len(sc.touched) >= k && boost*rest[i]*slack < cb.best && cb.cbestAbove(boost*slack, crest[i][:nc]) {
			lo, hi := scales(i)
			// No touched document's lower bound exceeds best + sum
			// lo[c] x cbest[c]: while the rest reaches that, the k-th
			// best bound is not worth a pass over the touched.
			if r := frest(i, &hi); !math.IsInf(r, 1) && boost*r*slack < cb.fusedHigh(&lo, nc) {
				theta = max(theta, best.kthFusedLow(k, sc.prow, nr, nil, &lo))
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
		sc.clearPass()
		return nil, nil
	}
	// The candidates, by row: every touched document that may still be
	// the best in A or in a clause, or reach theta in the fused score,
	// with the groups from order[i] on left to add.
	// nil stands for every touched row until the first filter, which
	// lists and marks in sc.cand the rows it keeps.
	var cands []int32
	// fresh says theta already holds the k-th best lower bound over
	// cands with the bounds of the groups from stop on, as the loop
	// above computed it when it stopped.
	fresh := true
	filter := func(i int) {
		lo, hi := scales(i)
		r := frest(i, &hi)
		// The fused scores' lower bounds give the threshold, in one
		// pass that keeps the k best.
		if !fresh {
			theta = max(theta, best.kthFusedLow(k, sc.prow, nr, cands, &lo))
		}
		fresh = false
		// A candidate stays when boost x (its score + the rest) x
		// slack reaches the best, in A or in a clause, or its fused
		// upper bound reaches theta: the same tests with each
		// threshold divided out once, so the loop compares rows with
		// constants. That moves each test's rounding by a few ulps,
		// far inside pruneSlack, and keeping a document more than
		// needed changes no score.
		bs := boost * slack
		at := cb.best/bs - rest[i]
		var ct [maxClauses]float64
		for c := range nc {
			ct[c] = math.Inf(1)
			if cb.cbest[c] > 0 {
				ct[c] = cb.cbest[c]/bs - crest[i][c]
			}
		}
		cands = filterRows(sc, nr, cands, at, &ct, r, &hi, theta/bs)
	}
	filter(stop)
	// Like accumulateTop, the groups left are added to the candidates
	// alone, each shrinking the rests, until few remain.
	for i := stop; i < len(order) && len(cands) > lookupMax; i++ {
		ix.addGroupClauses(groups[order[i]], sc, &cb, sc.cand)
		filter(i + 1)
	}
	docs := sc.cands[:0]
	for _, p := range cands {
		docs = append(docs, sc.touched[p])
	}
	sc.crows = cands[:0]
	sc.clearPass()
	for _, g := range must {
		if !sc.cand[g] {
			sc.cand[g] = true
			docs = append(docs, g)
		}
	}
	slices.Sort(docs)
	ix.accumulateOnly(groups, sc, sc.cand, docs)
	lead := ix.fuseClauses(sc)
	for _, g := range docs {
		sc.cand[g] = false
	}
	sc.cands = docs[:0]
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

// cheapFirst reorders order, the groups of refs, by falling bound ub per
// posting of the group's terms, so that a MaxScore pass's first phase
// (here and in accumulateTop) reads first the groups that take the most
// off the rest for the fewest postings (see the file's header). Any
// order gives the same scores; it only moves where the phase stops.
func cheapFirst(refs []groupRef, ub []float64, order []int) {
	gain := make([]float64, len(refs))
	for j, r := range refs {
		n := 0
		for _, a := range r.alts {
			n += len(a.e.post)
		}
		gain[j] = ub[j] / float64(n+1)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(gain[b], gain[a]) })
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

// filterRows keeps the candidate rows of sc.prow (nr scores each) whose
// whole-request score reaches at, or whose clause c score reaches ct[c]
// for some c, or whose fused upper bound (scores plus r, the clause
// scores weighed by hi) reaches ft, and unmarks the others in sc.cand.
// With cands nil it tests every touched row, keeps them in sc.crows and
// marks those it keeps instead: one walk of the rows, where listing
// them all, marking them and then filtering took three.
func filterRows(sc *scratch, nr int, cands []int32, at float64, ct *[maxClauses]float64, r float64, hi *[maxClauses]float64, ft float64) []int32 {
	prow, touched, cand := sc.prow, sc.touched, sc.cand
	all := cands == nil
	n, kept := len(cands), cands[:0]
	if all {
		n, kept = len(touched), sc.crows[:0]
		if kept == nil {
			kept = make([]int32, 0, n)
		}
	}
	if nr == 3 {
		// Two clauses, the most common split: the same tests in the
		// same order, with the thresholds held in registers.
		ct0, ct1, hi0, hi1 := ct[0], ct[1], hi[0], hi[1]
		for q := range n {
			p := int32(q)
			if !all {
				p = cands[q]
			}
			i := int(p) * 3
			row := prow[i : i+3 : i+3]
			a, c0, c1 := row[0], row[1], row[2]
			over := max(a-at, c0-ct0)
			over = max(over, c1-ct1)
			up := a + r
			up += hi0 * c0
			up += hi1 * c1
			if over >= 0 || up >= ft {
				kept = append(kept, p)
				if all {
					cand[touched[p]] = true
				}
				continue
			}
			if !all {
				cand[touched[p]] = false
			}
		}
		return kept
	}
	for q := range n {
		p := int32(q)
		if !all {
			p = cands[q]
		}
		row := prow[int(p)*nr : int(p)*nr+nr]
		a := row[0]
		// over is at least 0 when a score reaches its threshold.
		over := a - at
		up := a + r
		for c, v := range row[1:] {
			over = max(over, v-ct[c])
			up += hi[c] * v
		}
		if over >= 0 || up >= ft {
			kept = append(kept, p)
			if all {
				cand[touched[p]] = true
			}
			continue
		}
		if !all {
			cand[touched[p]] = false
		}
	}
	return kept
}

// kthFusedLow returns the k-th best fused lower bound, 0 if fewer, of the
// rows of prow (nr scores each) listed in cands, or of every row when
// cands is nil: a row's whole-request score plus lo[c] x its clause c
// score.
func (t *topScores) kthFusedLow(k int, prow []float64, nr int, cands []int32, lo *[maxClauses]float64) float64 {
	t.reset(k)
	if nr == 3 {
		// Two clauses: the same sums, the weights in registers.
		lo0, lo1 := lo[0], lo[1]
		offer := func(p int) {
			i := p * 3
			row := prow[i : i+3 : i+3]
			s := row[0]
			s += lo0 * row[1]
			s += lo1 * row[2]
			if len(t.best) < k || s > t.best[0] {
				t.offer(s)
			}
		}
		if cands == nil {
			for p := range len(prow) / 3 {
				offer(p)
			}
		} else {
			for _, p := range cands {
				offer(int(p))
			}
		}
		return t.kth()
	}
	low := func(p int) {
		row := prow[p*nr : p*nr+nr]
		s := row[0]
		for c, v := range row[1:] {
			s += lo[c] * v
		}
		if len(t.best) < k || s > t.best[0] {
			t.offer(s)
		}
	}
	if cands == nil {
		for p := range len(prow) / nr {
			low(p)
		}
	} else {
		for _, p := range cands {
			low(int(p))
		}
	}
	return t.kth()
}

// topScores keeps the k best of the scores offered to it, so that the
// k-th best of a candidate list's bounds takes one pass over it, with no
// score written per document.
type topScores struct {
	k    int
	best []float64 // ascending; best[0] is the k-th best once full
}

func (t *topScores) reset(k int) { t.k, t.best = k, t.best[:0] }

func (t *topScores) offer(v float64) {
	if len(t.best) < t.k {
		i, _ := slices.BinarySearch(t.best, v)
		t.best = slices.Insert(t.best, i, v)
		return
	}
	if v <= t.best[0] {
		return
	}
	// Drop the lowest and shift the ones under v down in place.
	i, _ := slices.BinarySearch(t.best, v)
	copy(t.best, t.best[1:i])
	t.best[i-1] = v
}

// kth returns the k-th best score offered, 0 if fewer were.
func (t *topScores) kth() float64 {
	if len(t.best) < t.k {
		return 0
	}
	return t.best[0]
}

// clearPass empties sc of accumulateClausesTop's partial scores.
func (sc *scratch) clearPass() {
	for _, g := range sc.touched {
		sc.slot[g] = 0
	}
	sc.touched = sc.touched[:0]
	sc.prow = sc.prow[:0]
}

// addGroupClauses adds one group's scores to the documents' rows in
// sc.prow (the whole request's score and, for the clauses it is in, the
// clause scores), touching the documents new to sc (sc.slot[g] is the
// row's number plus one), and raises cb's bests: accumulate's inner loop
// without name coverage, which the bounds allow for. With only, it adds
// to the documents only marks alone, skipping the others' postings
// unread. Caller holds mu (read).
func (ix *Index) addGroupClauses(grp queryGroup, sc *scratch, cb *clauseBounds, only []bool) {
	n := float64(ix.nDocs)
	norm := &ix.norm
	k1 := ix.opts.K1
	nc := sc.clauses
	single := len(grp.alts) == 1
	maxIDF := ix.termIDF(grp.alts[0].term)
	nr := nc + 1
	add := func(g int, s float64) {
		p := int(sc.slot[g])
		if p == 0 {
			sc.touched = append(sc.touched, g)
			p = len(sc.touched)
			sc.slot[g] = int32(p)
			for range nr {
				sc.prow = append(sc.prow, 0)
			}
		}
		row := sc.prow[(p-1)*nr : p*nr]
		row[0] += s
		cb.best = max(cb.best, row[0])
		for m := grp.clauses; m != 0; m &= m - 1 {
			c := bits.TrailingZeros8(m)
			row[1+c] += s
			cb.cbest[c] = max(cb.cbest[c], row[1+c])
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
