package search

import (
	"math"
	"math/bits"
)

// Safe pruning a segment at a time (plain requests).
//
// A term's MaxScore bound (termBound) is its best posting over the whole
// index, so for a common word it is far above what nearly every tool
// gets from it, and accumulateTop's term-at-a-time pass still read every
// posting of a typical request at 100,000 tools. Each chunk (one
// server's postings of one term) keeps its own bound instead (chunk.ub),
// and accumulateSegs:
//
//  1. reads the request's chunks, not their postings, to bound what each
//     segment's tools can score: per group the best of its alternatives'
//     chunk bounds, summed over the groups, times the name-coverage
//     boost;
//  2. scores whole segments with accumulate's arithmetic (the same
//     additions in the same order, so every score is the exhaustive one
//     to the bit), keeping the k best scores: first the segSeeds
//     segments with the best bounds, which most likely hold the best
//     tools, then, in slot order, every other segment whose bound
//     reaches the k-th best score so far, and whose bound tool by tool
//     (refineBound: the same chunk bounds, summed per tool over the
//     groups its postings are in, times its own name coverage) does too;
//  3. skips the others: no tool of a segment whose bound is under the
//     k-th best score can rank.
//
// The segments are servers, a few to a few dozen tools each, so a bound
// per segment is far tighter than a term's: over the benchmark's plain
// requests at 100,000 tools a fifth of the segments the requests' terms
// occur in pass the segment bound, and 3.5% the bound tool by tool; the
// pass scores 95 segments a request (the seeds included), 1.1 of their
// 13.9 million postings. A segment of more
// than Index.segPassMax tools would make the bound as loose as a term's,
// so an index holding one keeps the term-at-a-time pass.
//
// Requests split into clauses keep theirs (prune_clauses.go). Two ways
// of pruning them by segment were built and measured at 100,000 tools,
// and not kept: scoring them a segment at a time (the best whole-request
// score and each clause's best first, then the fused top k) had to
// score 39% of the segments, out of the postings' order, and cost 20%
// more than the term-at-a-time pass; leaving out first the segments
// whose bounds show no tool of theirs matters (44% of them) cost more
// in bounds and seeds than it saved that pass (+5 to +12%). Nor was a
// tighter name-coverage factor in the segments' bounds kept (the groups
// with a name part in the segment over its tools' fewest name parts):
// a quarter fewer segments pass, but the plain requests' median moved
// by less than this machine's noise. With refineBound, two ways of
// feeding it were measured and not kept (the plain requests' least CPU
// of 5 runs each, at 100,000 tools): each chunk's tool classes computed
// in step 1 for every chunk, streaming all the request's postings, cut
// the plain requests' total by 9% but raised their median by 12% (501
// -> 561 us), the cheap requests paying for the stream; and loading a
// batch of 16 segments' postings before scoring them, so that their
// cache misses overlap, changed nothing (486 -> 493 us). Nor was keeping
// each chunk's tool classes in the index (8 bytes a chunk), so that
// refineBound reads no posting, its name flags given up (hits counted
// from the groups that reach a class): 123 segments a request scored
// instead of 95, index heap +7% (150.1 -> 160.7 MiB), and no CPU
// change (the mix's p50 at 100,000 tools 1.010 -> 1.016 ms, p=0.699;
// the plain requests' 582 -> 601 us, p=0.065; 6 runs alternated). Nor
// was keeping refineBound's sums in ss, cleared class by class, instead
// of zeroing 1.3 KB of arrays a call (the mix's p50 at 100,000 tools
// 1.066 -> 1.064 ms, p=0.818; the plain requests' 612 -> 585 us,
// p=0.065).

// segPassMaxDocs is the most tools a segment may hold for accumulateTop
// to use the segment pass.
const segPassMaxDocs = 512

// segSeeds is how many segments, best bound first, the segment pass
// scores before it takes the rest in slot order.
const segSeeds = 32

// segEntry is one chunk of the request's terms, listed under its segment
// in the order accumulate reads them (group, then alternative).
type segEntry struct {
	next       int32   // the segment's next entry plus one, 0 at the end
	grp, alt   int32   // the group in the request, its alternative in refs
	start, end int32   // the chunk's postings, post[start:end]
	ub         float32 // the chunk's bound, chunk.ub
}

// segScratch is the segment pass's scratch space, by segment slot and by
// document within a segment. Entries are zeroed after use.
type segScratch struct {
	bound []float64 // a slot's bound, before the boost
	gbest []float64 // a slot's best alternative in the current group
	head  []int32   // a slot's first entry plus one
	tail  []int32   // a slot's last entry plus one
	slots []int32   // the slots with an entry
	gslot []int32   // the slots the current group touched
	ents  []segEntry
	heap  []int32
	// Per document of the segment being scored: accumulate's acc, group,
	// nameHits and groupName, and the documents touched.
	acc, group []float64
	hits       []uint8
	gname      []bool
	touched    []int32
	gtouched   []int32
	// docs and scores are the scored documents (index-wide numbers).
	docs   []int
	scores []float64
}

func (s *segScratch) grow(slots, docs int) {
	if len(s.bound) < slots {
		s.bound = make([]float64, slots)
		s.gbest = make([]float64, slots)
		s.head = make([]int32, slots)
		s.tail = make([]int32, slots)
	}
	if len(s.acc) < docs {
		s.acc = make([]float64, docs)
		s.group = make([]float64, docs)
		s.hits = make([]uint8, docs)
		s.gname = make([]bool, docs)
	}
}

// useSegPass reports whether accumulateTop scores a segment at a time.
// Caller holds mu (read).
func (ix *Index) useSegPass() bool {
	return ix.maxSegDocs <= ix.segPassMax
}

// accumulateSegs is accumulateTop for an index of small segments, with
// the same contract. Caller holds mu (read).
func (ix *Index) accumulateSegs(groups []queryGroup, sc *scratch, k int, must []int) *pruned {
	ss := &sc.segs
	ss.grow(len(ix.slots), ix.maxSegDocs)
	refs := ix.resolve(groups)
	ix.segBounds(refs, ss)
	// 2. and 3. The segments, best bound first, until the k best scores
	// are in and a few segments were scored: their k-th best is then
	// near the final one.
	boost := (1 + ix.opts.NameCoverage) * (1 + pruneSlack)
	slack := 1 + pruneSlack
	var best topScores
	best.reset(k)
	ss.heap = append(ss.heap[:0], ss.slots...)
	h := slotHeap{s: ss.heap, bound: ss.bound}
	h.init()
	for n := 0; len(h.s) > 0 && (n < segSeeds || best.kth() == 0); n++ {
		s := h.pop()
		if boost*ss.bound[s] < best.kth() {
			break
		}
		if kth := best.kth(); kth == 0 || slack*ix.refineBound(refs, ss, s) >= kth {
			ix.scoreSegment(refs, ss, s, &best)
		}
		ss.bound[s] = -ss.bound[s] // done: scored, or no tool of it ranks
	}
	// Then every other segment whose bound reaches the k-th best, in
	// slot order: the order is not worth a heap once the threshold is
	// near, and the postings are then read in the order they are stored,
	// most often.
	//
	// The segment's bound adds up each group's best chunk, whichever
	// tool holds it: over the plain requests of the benchmark's mix at
	// 100,000 tools, 420 segments a request reach the final k-th best,
	// of which 13 hold a tool that does. Before scoring one, refineBound
	// bounds its tools one by one from its chunks' bounds and which tools
	// their postings name, skipping the arithmetic of scoring: 79 reach
	// it then.
	for s, b := range ss.bound[:len(ix.slots)] {
		if b > 0 && boost*b >= best.kth() && slack*ix.refineBound(refs, ss, int32(s)) >= best.kth() {
			ix.scoreSegment(refs, ss, int32(s), &best)
		}
	}
	theta := best.kth()
	docs, scores := ss.docs, ss.scores
	ss.reset()
	if len(docs) < k {
		// Fewer documents matched than the top holds: every one ranks,
		// and the exhaustive pass costs no more.
		return nil
	}
	// The candidates: every document scored that reaches the k-th best,
	// and must. Their scores are accumulate's already.
	for i, g := range docs {
		if scores[i]*(1+pruneSlack) >= theta {
			sc.touched = append(sc.touched, g)
			sc.slot[g] = 1
			sc.acc[g] = scores[i]
		}
	}
	for _, g := range must {
		if sc.slot[g] == 0 {
			sc.touched = append(sc.touched, g)
			sc.slot[g] = 1
			sc.acc[g] = ix.exactScore(refs, g)
		}
	}
	return &pruned{k: k, theta: theta, refs: refs}
}

// segBounds is the segment pass's first step: it bounds each segment's
// tools from the request's chunks alone (ss.bound, ss.slots), and lists
// each segment's chunks as its entries (ss.head, ss.ents) in the order
// accumulate reads them. Caller holds mu (read).
func (ix *Index) segBounds(refs []groupRef, ss *segScratch) {
	k1 := ix.opts.K1
	drift := ix.drift
	for j, r := range refs {
		for ai, a := range r.alts {
			for _, c := range a.e.chunks {
				tb := drift * float64(c.ub)
				if c.n == 0 || tb == 0 {
					continue // no posting scores
				}
				s := a.wq * tb / (k1 + tb)
				if ss.gbest[c.slot] == 0 {
					ss.gslot = append(ss.gslot, c.slot)
				}
				ss.gbest[c.slot] = max(ss.gbest[c.slot], s)
				ss.ents = append(ss.ents, segEntry{grp: int32(j), alt: int32(ai), start: c.start, end: c.start + c.n, ub: c.ub})
				e := int32(len(ss.ents))
				if ss.head[c.slot] == 0 {
					ss.head[c.slot] = e
				} else {
					ss.ents[ss.tail[c.slot]-1].next = e
				}
				ss.tail[c.slot] = e
			}
		}
		for _, s := range ss.gslot {
			if ss.bound[s] == 0 {
				ss.slots = append(ss.slots, s)
			}
			ss.bound[s] += ss.gbest[s]
			ss.gbest[s] = 0
		}
		ss.gslot = ss.gslot[:0]
	}
}

// reset empties s for the next search.
func (s *segScratch) reset() {
	for _, slot := range s.slots {
		s.bound[slot], s.head[slot], s.tail[slot] = 0, 0, 0
	}
	s.slots, s.ents, s.heap = s.slots[:0], s.ents[:0], s.heap[:0]
	s.docs, s.scores = s.docs[:0], s.scores[:0]
}

// scoreSegment scores the documents of the segment at slot with
// accumulate's arithmetic (its additions, in its order: group by group,
// each group's alternatives in turn, then the name coverage), appends
// them to ss.docs and ss.scores, and offers their scores to best.
// Caller holds mu (read).
func (ix *Index) scoreSegment(refs []groupRef, ss *segScratch, slot int32, best *topScores) {
	norm := &ix.norm
	k1 := ix.opts.K1
	base := int(ix.bases[slot])
	meta := ix.meta[base : base+len(ix.slots[slot].meta)]
	acc, group, hits, gname := ss.acc, ss.group, ss.hits, ss.gname
	// fold adds a group of alternatives' best to its documents.
	fold := func() {
		for _, d := range ss.gtouched {
			if acc[d] == 0 {
				ss.touched = append(ss.touched, d)
			}
			acc[d] += group[d]
			group[d] = 0
			if gname[d] {
				hits[d] = min(hits[d], math.MaxUint8-1) + 1
				gname[d] = false
			}
		}
		ss.gtouched = ss.gtouched[:0]
	}
	cur := int32(-1)
	for e := ss.head[slot]; e != 0; {
		en := &ss.ents[e-1]
		e = en.next
		if en.grp != cur {
			fold()
			cur = en.grp
		}
		r := &refs[en.grp]
		a := &r.alts[en.alt]
		wq := a.wq
		for _, p := range a.e.post[en.start:en.end] {
			d := p.doc
			tfn := norm.tfNorm(&p, &meta[d])
			if tfn == 0 {
				continue
			}
			s := wq * tfn / (k1 + tfn)
			if r.single {
				if acc[d] == 0 {
					ss.touched = append(ss.touched, int32(d))
				}
				acc[d] += s
				if p.namePart && hits[d] < math.MaxUint8 {
					hits[d]++
				}
				continue
			}
			if group[d] == 0 {
				ss.gtouched = append(ss.gtouched, int32(d))
			}
			group[d] = max(group[d], s)
			gname[d] = gname[d] || p.namePart
		}
	}
	fold()
	beta := ix.opts.NameCoverage
	for _, d := range ss.touched {
		v := acc[d]
		if parts := float64(meta[d].nameParts); beta > 0 && parts != 0 && hits[d] > 0 {
			v *= 1 + beta*min(1, float64(hits[d])/parts)
		}
		ss.docs = append(ss.docs, base+int(d))
		ss.scores = append(ss.scores, v)
		best.offer(v)
		acc[d], hits[d] = 0, 0
	}
	ss.touched = ss.touched[:0]
}

// toolClasses returns the tool classes that postings p (one chunk) reach,
// a bit each: tool d is in class d%64, so in a segment of up to 64 tools
// each tool is a class of its own. names has the classes whose posting
// is a part of the tool's name.
func toolClasses(p []posting) (docs, names uint64) {
	for i := range p {
		bit := uint64(1) << (p[i].doc & 63)
		docs |= bit
		if p[i].namePart {
			names |= bit
		}
	}
	return docs, names
}

// refineBound bounds what any tool of the segment at slot can score,
// from its entries' chunk bounds and tool classes (toolClasses) alone.
// Per class it sums, group by group, the best chunk bound among the
// alternatives that reach the class, and applies the name-coverage
// boost with the groups that reach the class with a name part over the
// fewest name parts a tool of the class has; the segment's bound is the
// highest class's. A tool's score takes, per group, what its own
// postings give, at most its chunk's bound, and its own name coverage,
// so none exceeds its class's bound; ss.bound[slot] is looser because it
// adds up each group's best chunk whichever tool holds it. Caller holds
// mu (read).
func (ix *Index) refineBound(refs []groupRef, ss *segScratch, slot int32) float64 {
	k1, drift := ix.opts.K1, ix.drift
	var sum, gbest [64]float64
	var hits [64]int32
	// reached and named are the classes the current group reached, with
	// a name part or not; all those any group reached.
	var reached, named, all uint64
	fold := func() {
		for m := reached; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			sum[b] += gbest[b]
			gbest[b] = 0
		}
		for m := named; m != 0; m &= m - 1 {
			hits[bits.TrailingZeros64(m)]++
		}
		all |= reached
		reached, named = 0, 0
	}
	cur := int32(-1)
	for e := ss.head[slot]; e != 0; {
		en := &ss.ents[e-1]
		e = en.next
		if en.grp != cur {
			fold()
			cur = en.grp
		}
		tb := drift * float64(en.ub)
		a := &refs[en.grp].alts[en.alt]
		s := a.wq * tb / (k1 + tb)
		docs, names := toolClasses(a.e.post[en.start:en.end])
		for m := docs; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			gbest[b] = max(gbest[b], s)
		}
		reached |= docs
		named |= names
	}
	fold()
	beta := ix.opts.NameCoverage
	base := int(ix.bases[slot])
	// parts[b] is the fewest name parts of a tool of class b that has
	// any (a tool with none gets no boost). When no segment has more
	// than 64 tools, each class is one tool, whose own count it is.
	var parts [64]uint8
	alone := ix.maxSegDocs <= 64
	if beta > 0 && all != 0 && !alone {
		for d, m := range ix.meta[base : base+len(ix.slots[slot].meta)] {
			if p, b := m.nameParts, d&63; p != 0 && (parts[b] == 0 || p < parts[b]) {
				parts[b] = p
			}
		}
	}
	best := 0.0
	for m := all; m != 0; m &= m - 1 {
		b := bits.TrailingZeros64(m)
		v := sum[b]
		if beta > 0 && hits[b] > 0 {
			p := parts[b]
			if alone {
				p = ix.meta[base+b].nameParts
			}
			if p != 0 {
				v *= 1 + beta*min(1, float64(hits[b])/float64(p))
			}
		}
		best = max(best, v)
	}
	return best
}

// slotHeap is a max-heap of segment slots by bound.
type slotHeap struct {
	s     []int32
	bound []float64
}

func (h *slotHeap) less(i, j int) bool { return h.bound[h.s[i]] > h.bound[h.s[j]] }

func (h *slotHeap) init() {
	for i := len(h.s)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *slotHeap) pop() int32 {
	top := h.s[0]
	n := len(h.s) - 1
	h.s[0] = h.s[n]
	h.s = h.s[:n]
	h.down(0)
	return top
}

func (h *slotHeap) down(i int) {
	n := len(h.s)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			return
		}
		h.s[i], h.s[j] = h.s[j], h.s[i]
		i = j
	}
}
