package search

import (
	"math"
	"math/bits"
)

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

// plainWindow scores every document of the window [lo, hi) that any
// cursor has, the way the exhaustive scorer does.
func (r *ranker) plainWindow(lo, hi int) {
	// The cursors that were only probed may lag behind.
	for _, ci := range r.ord[:r.first] {
		r.cursors[ci].seek(lo)
	}
	r.fillAll(lo, hi)
	for wi := range r.seen {
		for word := r.seen[wi]; word != 0; word &= word - 1 {
			x := wi*64 + bits.TrailingZeros64(word)
			if isSkipped(r.skip, lo+x) {
				continue
			}
			s := r.psum[x]
			if r.beta > 0 && r.parts[x] > 0 && r.hits[x] > 0 {
				s *= 1 + r.beta*min(1, float64(r.hits[x])/float64(r.parts[x]))
			}
			r.keep(cand{score: s, g: lo + x})
		}
		r.seen[wi] = 0
	}
	r.slow = false
}

// prunedWindow reads the essential cursors' postings in the window
// [lo, hi) and finishes the documents that can still reach the threshold.
func (r *ranker) prunedWindow(lo, hi int) {
	before := r.visits()
	read := r.fill(lo, hi)
	for wi := range r.seen {
		for word := r.seen[wi]; word != 0; word &= word - 1 {
			x := wi*64 + bits.TrailingZeros64(word)
			// Most documents have too little in the essential postings
			// to be worth finishing.
			if (r.psum[x]+r.pre[r.first-1])*r.scale < r.theta {
				continue
			}
			if s := r.finish(lo, x); s > 0 {
				r.keep(cand{score: s, g: lo + x})
			}
		}
		r.seen[wi] = 0
	}
	// When this window read more than two thirds of what reading every
	// posting in it would have (an estimate for the cursors it only
	// probed), read the next one plainly: a posting read here, scored
	// into lists and then probed around, costs more than one read term at
	// a time.
	plain := read
	for _, ci := range r.ord[:r.first] {
		plain += len(r.cursors[ci].post) * (hi - lo) / r.nDocs
	}
	r.slow = 3*(r.visits()-before) > 2*plain
}

// fill scores the essential cursors' postings in the window [lo, hi), at
// most window wide, lists each document's scores in r.ents from r.head,
// and marks the documents found in r.seen. It returns the number of
// postings it read.
func (r *ranker) fill(lo, hi int) (read int) {
	r.ents = r.ents[:0]
	for _, ci := range r.ess {
		c := &r.cursors[ci]
		for c.doc < hi {
			run, base, meta := c.run(hi)
			for i := range run {
				p := &run[i]
				s := postingScore(p, &meta[p.doc], c.wq, r.norm, r.k1)
				if s == 0 {
					continue
				}
				x := base + int(p.doc) - lo
				if r.seen[x>>6]&(1<<(x&63)) == 0 {
					r.seen[x>>6] |= 1 << (x & 63)
					r.head[x] = -1
					r.parts[x] = meta[p.doc].nameParts
					r.psum[x] = 0
				}
				r.psum[x] += s
				r.ents = append(r.ents, entry{s: s, group: int32(c.group), named: p.namePart, next: r.head[x]})
				r.head[x] = int32(len(r.ents) - 1)
			}
			read += len(run)
			c.skip(len(run))
		}
	}
	return read
}

// dense reports whether the next window is better read plainly: the last
// pruned window cost about as much (slow), or the essential cursors hold
// most of the postings left anyway.
func (r *ranker) dense() bool {
	if r.slow {
		return true
	}
	ess, all := 0, 0
	for i, ci := range r.ord {
		c := &r.cursors[ci]
		left := len(c.post) - c.pos
		if c.doc == noDoc {
			left = 0
		}
		all += left
		if i >= r.first {
			ess += left
		}
	}
	// Pruning pays while the essential cursors hold at most about half the
	// postings left: a posting read for a pruned search costs more than
	// one read term at a time, and finishing documents costs probes.
	return 2*ess > all
}

// fillAll scores every cursor's postings in the window [lo, hi) into
// r.psum, exactly as the exhaustive scorer does: group by group in query
// order, a group adding its best alternative, and counts the groups that
// matched a part of the name in r.hits. It marks the documents found in
// r.seen.
func (r *ranker) fillAll(lo, hi int) {
	for ci := 0; ci < len(r.cursors); {
		// A group's cursors are next to each other.
		g := r.cursors[ci].group
		end := ci + 1
		for end < len(r.cursors) && r.cursors[end].group == g {
			end++
		}
		single := end == ci+1
		for ; ci < end; ci++ {
			c := &r.cursors[ci]
			for c.doc < hi {
				run, base, meta := c.run(hi)
				for i := range run {
					p := &run[i]
					m := &meta[p.doc]
					s := postingScore(p, m, c.wq, r.norm, r.k1)
					if s == 0 {
						continue
					}
					x := base + int(p.doc) - lo
					if r.seen[x>>6]&(1<<(x&63)) == 0 {
						r.seen[x>>6] |= 1 << (x & 63)
						r.psum[x], r.hits[x] = 0, 0
						r.parts[x] = m.nameParts
					}
					if single {
						r.psum[x] += s
						if p.namePart && r.hits[x] < math.MaxUint8 {
							r.hits[x]++
						}
						continue
					}
					if r.gbest[x] == 0 {
						r.gdocs = append(r.gdocs, x)
					}
					r.gbest[x] = max(r.gbest[x], s)
					r.gnamed[x] = r.gnamed[x] || p.namePart
				}
				c.skip(len(run))
			}
		}
		for _, x := range r.gdocs {
			r.psum[x] += r.gbest[x]
			if r.gnamed[x] && r.hits[x] < math.MaxUint8 {
				r.hits[x]++
			}
			r.gbest[x], r.gnamed[x] = 0, false
		}
		r.gdocs = r.gdocs[:0]
	}
}

// finish completes document lo+x of the current window: it probes the
// other cursors, highest bound first, while the document can still reach
// the threshold, and returns its text score, or 0 when it cannot reach
// the threshold, matched nothing or is to be skipped.
func (r *ranker) finish(lo, x int) float64 {
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
		if (partial+r.pre[i])*boost*(1+boundSlack) < r.theta {
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
	if isSkipped(r.skip, d) {
		r.clear()
		return 0
	}
	return r.total(parts)
}
