package search

import (
	"cmp"
	"math"
	"slices"
)

// boundSlack widens every upper bound before it is compared: bounds add the
// same kind of numbers as scores but in another order, so either can be
// off by a few units in the last place. A relative 1e-9 is far above that
// (a sum of at most maxQueryTerms terms errs by under 1e-13) and far below
// any difference that matters for pruning.
const boundSlack = 1e-9

// ranker scores one query with dynamic pruning (MaxScore). Each query
// alternative (a term or a synonym) has an upper bound on what it can add
// to a document's score. Once the k-th best score found is higher than the
// bounds of the weakest alternatives added together, a document that has
// only those cannot make the top k, so their postings are no longer read
// in full: they are only probed, to finish the documents found in the
// other alternatives' postings, and only while such a document can still
// make it.
//
// Pruning decides which documents are scored, never how: every document
// that can be returned is scored completely, its groups added in query
// order, with the same arithmetic as a plain term-at-a-time scorer, so
// the scores are the same bit for bit.
//
// A ranker lives in the pooled scratch and is reused between searches.
type ranker struct {
	norm     *[numFields][math.MaxUint8 + 1]float64
	k1, beta float64
	cursors  []cursor
	// ord lists the cursors by bound ascending. pre[i] bounds what the
	// cursors ord[:i+1] add to a document together: per group the highest
	// of their bounds, as a group scores its best alternative.
	ord []int
	pre []float64
	// nameCap[i] counts the groups of the cursors ord[:i+1] whose terms
	// occur in some name, so could add to a document's name coverage.
	nameCap []int
	// first is the start of the essential cursors in ord: no document
	// outside their postings can reach the threshold. ess are ord[first:].
	first int
	ess   []int
	// slow says the last window, pruned, cost about what reading all its
	// postings would have, so the next one is read plainly.
	slow bool
	// nDocs is the number of documents in the index.
	nDocs int
	// contrib and named are the current document's per-group score and
	// whether the group matched a part of its name; touched lists the
	// groups to clear. gmax is order's working space, as wide.
	contrib []float64
	named   []bool
	touched []int
	gmax    []float64
	// ents are the essential postings' scores in the current window,
	// listed per document from head; psum are their sums per document (at
	// least the sum of the document's group scores; fillAll keeps the
	// exact text scores there), parts the documents' name part counts,
	// and seen marks the documents found.
	ents  []entry
	head  [window]int32
	psum  [window]float64
	parts [window]uint8
	seen  [window / 64]uint64
	// fillAll's working space: the documents' name hits, and the current
	// group's best score and name match per document, set for gdocs.
	hits   [window]uint8
	gbest  [window]float64
	gnamed [window]bool
	gdocs  []int
	// heap holds the best documents found so far, worst first.
	heap []cand
	// The current run: the k best are wanted, skip (sorted) lists the
	// documents never to offer, cutoff is Options.Cutoff, scale widens
	// the bounds for the boost and rounding, no document scoring under
	// theta can make the hits, and best is the best text score found.
	k                          int
	skip                       []int
	cutoff, scale, theta, best float64
}

// prepare sets r up for groups on ix. Caller holds ix.mu (read).
func (r *ranker) prepare(ix *Index, groups []queryGroup) {
	r.norm, r.k1, r.beta = &ix.norm, ix.opts.K1, ix.opts.NameCoverage
	r.nDocs, r.slow = ix.nDocs, false
	n := float64(ix.nDocs)
	idf := func(df int) float64 {
		return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
	}
	r.cursors = r.cursors[:0]
	for gi, grp := range groups {
		// A synonym is worth at most what the query's own word is worth:
		// a rare synonym must not outscore a common exact match.
		df0 := 0
		if e := ix.terms[grp.alts[0].term]; e != nil {
			df0 = e.df
		}
		maxIDF := idf(df0)
		for _, a := range grp.alts {
			e := ix.terms[a.term]
			if e == nil || e.df == 0 {
				continue
			}
			tb := e.bound.tfn(r.norm)
			if tb == 0 {
				continue // every posting has a zero frequency: none counts
			}
			wq := a.w * min(idf(e.df), maxIDF)
			r.cursors = append(r.cursors, cursor{})
			c := &r.cursors[len(r.cursors)-1]
			c.reset(e, wq, gi)
			// The same expression as a posting's score, so that a posting
			// with the bound's frequency scores the bound.
			c.ub = wq * tb / (r.k1 + tb)
			c.inName = e.bound.fields&(1<<FieldName) != 0
		}
	}
	if cap(r.contrib) < len(groups) {
		r.contrib = make([]float64, len(groups))
		r.named = make([]bool, len(groups))
		r.gmax = make([]float64, len(groups))
	}
	r.contrib, r.named, r.gmax = r.contrib[:len(groups)], r.named[:len(groups)], r.gmax[:len(groups)]
	r.heap = r.heap[:0]
}

// visits returns the postings the cursors have read.
func (r *ranker) visits() int {
	n := 0
	for i := range r.cursors {
		n += r.cursors[i].visits
	}
	return n
}

// run finds the k best text scores among the documents not in skip
// (sorted), leaving them in r.heap, and returns the best text score of
// all documents. best is a text score already known (of a skipped
// document); cutoff is Options.Cutoff: documents under cutoff times the
// best score are dropped from the hits, so they need not be found either.
//
// It works window by window over the document numbers: first it scores
// every posting of the essential cursors in the window, a cursor at a
// time (cheap, however many cursors there are), then it finishes each
// document found, probing the other cursors only while the document can
// still reach the threshold. A window where nothing can be pruned yet, or
// where pruning would not pay, is read plainly: every cursor's postings
// term at a time.
func (r *ranker) run(k int, skip []int, best, cutoff float64) float64 {
	r.order()
	r.k, r.skip, r.best, r.cutoff = k, skip, best, cutoff
	// A document's score is at most the sum of its bounds times the
	// largest name-coverage boost.
	r.scale = 1 + boundSlack
	if r.beta > 0 {
		r.scale *= 1 + r.beta
	}
	r.theta = 0
	if cutoff > 0 {
		r.theta = cutoff * best
	}
	r.first, r.slow = -1, false
	r.raise()
	// The first windows are narrow: nothing is pruned until the heap has
	// filled, so let it fill from few documents.
	w := minWindow
	for r.first < len(r.ord) {
		lo := noDoc
		for _, ci := range r.ess {
			lo = min(lo, r.cursors[ci].doc)
		}
		if lo == noDoc {
			break
		}
		if r.first == 0 || r.dense() {
			r.plainWindow(lo, lo+w)
		} else {
			r.prunedWindow(lo, lo+w)
		}
		w = min(2*w, window)
		r.raise()
	}
	return r.best
}

// keep records c, a document and its text score: it raises the best score
// and offers c to the heap unless it scores under the threshold (then it
// cannot make the k best, or the cutoff drops it), and raises the
// threshold.
func (r *ranker) keep(c cand) {
	r.best = max(r.best, c.score)
	if c.score < r.theta {
		return
	}
	r.offer(c, r.k)
	if len(r.heap) == r.k {
		r.theta = max(r.theta, r.heap[0].score)
	}
	if r.cutoff > 0 {
		r.theta = max(r.theta, r.cutoff*r.best)
	}
}

// order sorts the cursors by bound and sums the bounds per group.
func (r *ranker) order() {
	r.ord = r.ord[:0]
	for ci := range r.cursors {
		r.ord = append(r.ord, ci)
	}
	slices.SortFunc(r.ord, func(a, b int) int { return cmp.Compare(r.cursors[a].ub, r.cursors[b].ub) })
	r.pre, r.nameCap = r.pre[:0], r.nameCap[:0]
	sum := 0.0
	capable := 0
	for _, ci := range r.ord {
		// In ascending order a cursor's bound is its group's highest yet.
		c := &r.cursors[ci]
		if c.ub > r.gmax[c.group] {
			sum += c.ub - r.gmax[c.group]
			r.gmax[c.group] = c.ub
		}
		r.pre = append(r.pre, sum)
		if c.inName && !r.named[c.group] {
			r.named[c.group] = true // borrowed: cleared below
			capable++
		}
		r.nameCap = append(r.nameCap, capable)
	}
	clear(r.gmax)
	clear(r.named)
}

// raise moves the essential cursors' start past every cursor whose bound,
// with those of the cursors below it, cannot reach the threshold, and
// when it moved lists the essential cursors anew.
func (r *ranker) raise() {
	first := max(r.first, 0)
	for first < len(r.ord) && r.pre[first]*r.scale < r.theta {
		first++
	}
	if first == r.first {
		return
	}
	r.first = first
	r.ess = append(r.ess[:0], r.ord[first:]...)
	r.slow = false
}

// isSkipped reports whether d is in skip (sorted).
func isSkipped(skip []int, d int) bool {
	if len(skip) == 0 {
		return false
	}
	_, ok := slices.BinarySearch(skip, d)
	return ok
}
