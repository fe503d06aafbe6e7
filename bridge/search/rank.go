package search

import (
	"cmp"
	"math"
	"math/bits"
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
	// contrib and named are the current document's per-group score and
	// whether the group matched a part of its name; touched lists the
	// groups to clear. gmax is order's working space, as wide.
	contrib []float64
	named   []bool
	touched []int
	gmax    []float64
	// ents are the essential postings' scores in the current window,
	// listed per document from head; psum are their sums per document (at
	// least the sum of the document's group scores), parts the documents'
	// name part counts, and seen marks the documents found.
	ents  []entry
	head  [window]int32
	psum  [window]float64
	parts [window]uint8
	seen  [window / 64]uint64
	// heap holds the best documents found so far, worst first.
	heap []cand
}

// Bounds of the width of the document windows run works in.
const (
	minWindow = 64
	window    = 1024
)

// entry is one essential posting's score in the window, listed per
// document.
type entry struct {
	s     float64
	group int32
	next  int32 // the document's previous entry, or -1
	named bool
}

// prepare sets r up for groups on ix. Caller holds ix.mu (read).
func (r *ranker) prepare(ix *Index, groups []queryGroup) {
	r.norm, r.k1, r.beta = &ix.norm, ix.opts.K1, ix.opts.NameCoverage
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

// take adds the current posting of c to its document's group scores and
// returns how much the group's score grew.
func (r *ranker) take(c *cursor) float64 {
	s, named := c.score(r.norm, r.k1)
	if s == 0 {
		return 0
	}
	g := c.group
	old := r.contrib[g]
	if old == 0 {
		r.touched = append(r.touched, g)
	}
	r.named[g] = r.named[g] || named
	if s <= old {
		return 0
	}
	r.contrib[g] = s
	return s - old
}

// total returns the text score of the document whose group scores r
// holds, summed in query order and boosted for name coverage exactly as
// the exhaustive scorer does, and clears the group scores.
func (r *ranker) total(parts uint8) float64 {
	// The exhaustive scorer adds the matching groups' scores in query
	// order: sort the few groups this document matched.
	t := r.touched
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j] < t[j-1]; j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
	score := 0.0
	hits := uint8(0)
	for _, g := range t {
		score += r.contrib[g]
		if r.named[g] && hits < math.MaxUint8 {
			hits++
		}
	}
	r.clear()
	if r.beta > 0 && parts > 0 && hits > 0 {
		score *= 1 + r.beta*min(1, float64(hits)/float64(parts))
	}
	return score
}

// clear zeroes the current document's group scores.
func (r *ranker) clear() {
	for _, g := range r.touched {
		r.contrib[g] = 0
		r.named[g] = false
	}
	r.touched = r.touched[:0]
}

// scoreDocs returns the text scores of docs, ascending document numbers,
// and leaves every cursor back on its first posting.
func (r *ranker) scoreDocs(docs []int) []float64 {
	if len(docs) == 0 {
		return nil
	}
	out := make([]float64, len(docs))
	for i, d := range docs {
		parts := uint8(0)
		for ci := range r.cursors {
			c := &r.cursors[ci]
			c.seek(d)
			if c.doc == d {
				r.take(c)
				parts = c.nameParts()
			}
		}
		out[i] = r.total(parts)
	}
	for ci := range r.cursors {
		r.cursors[ci].enter(0)
	}
	return out
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
// still reach the threshold.
func (r *ranker) run(k int, skip []int, best, cutoff float64) float64 {
	r.order()
	// A document's score is at most the sum of its bounds times the
	// largest name-coverage boost.
	scale := 1 + boundSlack
	if r.beta > 0 {
		scale *= 1 + r.beta
	}
	theta := 0.0
	if cutoff > 0 {
		theta = cutoff * best
	}
	r.first = -1
	r.raise(theta, scale)
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
		r.fill(lo, lo+w)
		w = min(2*w, window)
		for wi := range r.seen {
			for word := r.seen[wi]; word != 0; word &= word - 1 {
				x := wi*64 + bits.TrailingZeros64(word)
				// Most documents have too little in the essential
				// postings to be worth finishing.
				if r.first > 0 && (r.psum[x]+r.pre[r.first-1])*scale < theta {
					continue
				}
				s := r.finish(lo, x, theta, skip)
				if s == 0 {
					continue
				}
				best = max(best, s)
				r.offer(cand{score: s, g: lo + x}, k)
				if len(r.heap) == k {
					theta = max(theta, r.heap[0].score)
				}
				if cutoff > 0 {
					theta = max(theta, cutoff*best)
				}
			}
			r.seen[wi] = 0
		}
		r.raise(theta, scale)
	}
	return best
}

// fill scores the essential cursors' postings in the window [lo, hi), at
// most window wide, lists each document's scores in r.ents from r.head,
// and marks the documents found in r.seen.
func (r *ranker) fill(lo, hi int) {
	r.ents = r.ents[:0]
	for _, ci := range r.ess {
		c := &r.cursors[ci]
		for c.doc < hi {
			if s, named := c.score(r.norm, r.k1); s > 0 {
				x := c.doc - lo
				if r.seen[x>>6]&(1<<(x&63)) == 0 {
					r.seen[x>>6] |= 1 << (x & 63)
					r.head[x] = -1
					r.parts[x] = c.nameParts()
					r.psum[x] = 0
				}
				r.psum[x] += s
				r.ents = append(r.ents, entry{s: s, group: int32(c.group), named: named, next: r.head[x]})
				r.head[x] = int32(len(r.ents) - 1)
			}
			c.next()
		}
	}
}

// finish completes document lo+x of the current window: it probes the
// other cursors, highest bound first, while the document can still reach
// theta, and returns its text score, or 0 when it cannot reach theta,
// matched nothing or is in skip.
func (r *ranker) finish(lo, x int, theta float64, skip []int) float64 {
	partial := 0.0
	hits := 0
	for i := r.head[x]; i >= 0; i = r.ents[i].next {
		e := &r.ents[i]
		g := int(e.group)
		old := r.contrib[g]
		if old == 0 {
			r.touched = append(r.touched, g)
		}
		if e.named && !r.named[g] {
			r.named[g] = true
			hits++
		}
		if e.s > old {
			r.contrib[g] = e.s
			partial += e.s - old
		}
	}
	d := lo + x
	parts := r.parts[x]
	for i := r.first - 1; i >= 0; i-- {
		// The boost can grow only with the groups left that can match a
		// name: on a document with many name parts it stays small.
		boost := 1.0
		if r.beta > 0 && parts > 0 {
			boost += r.beta * min(1, float64(hits+r.nameCap[i])/float64(parts))
		}
		if (partial+r.pre[i])*boost*(1+boundSlack) < theta {
			r.clear()
			return 0
		}
		c := &r.cursors[r.ord[i]]
		if c.doc < d {
			c.seek(d)
		}
		if c.doc == d {
			was := r.named[c.group]
			partial += r.take(c)
			if r.named[c.group] && !was {
				hits++
			}
		}
	}
	if isSkipped(skip, d) {
		r.clear()
		return 0
	}
	return r.total(parts)
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
// with those of the cursors below it, cannot reach theta, and when it
// moved lists the essential cursors anew.
func (r *ranker) raise(theta, scale float64) {
	first := max(r.first, 0)
	for first < len(r.ord) && r.pre[first]*scale < theta {
		first++
	}
	if first == r.first {
		return
	}
	r.first = first
	r.ess = append(r.ess[:0], r.ord[first:]...)
}

// isSkipped reports whether d is in skip (sorted).
func isSkipped(skip []int, d int) bool {
	if len(skip) == 0 {
		return false
	}
	_, ok := slices.BinarySearch(skip, d)
	return ok
}

// cand is a document in the heap of the best found.
type cand struct {
	score float64
	g     int
}

// worse orders candidates worst first: lower score, then higher document
// number (ties go to the lower one, as in the hits).
func worse(a, b cand) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.g > b.g
}

// offer adds c to the heap of the k best, dropping the worst when full.
func (r *ranker) offer(c cand, k int) {
	h := r.heap
	if len(h) < k {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		r.heap = h
		return
	}
	if !worse(h[0], c) {
		return
	}
	// Sift down, moving the hole rather than swapping.
	i := 0
	for {
		w, l := i, 2*i+1
		if l >= len(h) {
			break
		}
		if l+1 < len(h) && worse(h[l+1], h[l]) {
			l++
		}
		if !worse(h[l], c) {
			break
		}
		h[w] = h[l]
		i = l
	}
	h[i] = c
}
