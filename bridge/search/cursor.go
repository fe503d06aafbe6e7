package search

import (
	"math"
	"math/bits"
)

// noDoc is a cursor's document once it has run out of postings: it
// compares after every real document.
const noDoc = math.MaxInt

// cursor walks one query alternative's postings in index-wide document
// order, chunk by chunk. Caller holds the index's read lock.
type cursor struct {
	post   []posting
	chunks []chunk
	ci     int       // current chunk
	pos    int       // current posting, in post
	end    int       // end of the current chunk, in post
	base   int       // current chunk's segment base
	segEnd int       // current chunk's segment end: base plus its size
	meta   []docMeta // current chunk's segment metadata
	// doc is the current posting's index-wide document number, or noDoc.
	doc int
	// wq is the alternative's weight: its synonym weight times its capped
	// IDF, as the exhaustive scorer computes it.
	wq float64
	// group is the alternative's query group, in query order.
	group int
	// ub bounds the score of every posting; inName says some posting
	// has the term in the name field.
	ub     float64
	inName bool
	// visits counts the postings read, for tests of pruning.
	visits int
}

// reset puts c on the first posting of e.
func (c *cursor) reset(e *termEntry, wq float64, group int) {
	*c = cursor{post: e.post, chunks: e.chunks, wq: wq, group: group}
	c.enter(0)
}

// enter puts c on the first posting of chunk ci, or past the end.
func (c *cursor) enter(ci int) {
	c.ci = ci
	if ci >= len(c.chunks) {
		c.doc = noDoc
		return
	}
	ch := &c.chunks[ci]
	c.pos, c.end = int(ch.off), int(ch.off+ch.n)
	c.base, c.meta = ch.seg.base, ch.seg.meta
	c.segEnd = c.base + len(ch.seg.docs)
	c.doc = c.base + int(c.post[c.pos].doc)
	c.visits++
}

// next moves c to its next posting.
func (c *cursor) next() {
	c.pos++
	if c.pos < c.end {
		c.doc = c.base + int(c.post[c.pos].doc)
		c.visits++
		return
	}
	c.enter(c.ci + 1)
}

// seek moves c to its first posting at or after document d, galloping
// over chunks and then postings, so that skipping a long run of postings
// costs a few probes.
func (c *cursor) seek(d int) {
	if c.doc >= d {
		return
	}
	if seg := c.chunks[c.ci].seg; seg.base+len(seg.docs) <= d {
		// d lies beyond this chunk's segment: find the first chunk whose
		// segment ends after d.
		past := func(i int) bool {
			s := c.chunks[i].seg
			c.visits++
			return s.base+len(s.docs) > d
		}
		lo, hi, step := c.ci+1, c.ci+1, 1
		for hi < len(c.chunks) && !past(hi) {
			lo = hi + 1
			hi += step
			step *= 2
		}
		hi = min(hi, len(c.chunks))
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); past(mid) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		c.enter(lo)
		if c.doc >= d {
			return
		}
	}
	// d lies in this chunk's segment, after the current posting.
	target := uint32(d - c.base)
	lo, hi, step := c.pos+1, c.pos+1, 1
	for hi < c.end && c.post[hi].doc < target {
		c.visits++
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, c.end)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		c.visits++
		if c.post[mid].doc < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == c.end {
		c.enter(c.ci + 1)
		return
	}
	c.pos = lo
	c.doc = c.base + int(c.post[lo].doc)
}

// score returns the current posting's contribution and whether the term
// is a part of the document's name. A zero score means the posting does
// not count.
func (c *cursor) score(norm *[numFields][math.MaxUint8 + 1]float64, k1 float64) (float64, bool) {
	p := &c.post[c.pos]
	return postingScore(p, &c.meta[p.doc], c.wq, norm, k1), p.namePart
}

// postingScore returns what posting p of a document with metadata m adds
// for a term of weight wq, computed exactly as the exhaustive scorer
// computes it: the same operations in the same order, so the same bits.
// Zero means the posting does not count.
func postingScore(p *posting, m *docMeta, wq float64, norm *[numFields][math.MaxUint8 + 1]float64, k1 float64) float64 {
	tfn := 0.0
	for mask := p.fields; mask != 0; mask &= mask - 1 {
		f := bits.TrailingZeros8(mask)
		tfn += float64(p.tf[f]) * norm[f][m.lenq[f]]
	}
	if tfn == 0 {
		return 0
	}
	return wq * tfn / (k1 + tfn)
}

// run returns the postings of the current chunk from the current one on
// whose documents are below hi, with the chunk's segment base and
// metadata. The caller reads them, then calls skip(len(run)).
func (c *cursor) run(hi int) (run []posting, base int, meta []docMeta) {
	end := c.end
	if c.segEnd > hi {
		for lim, i := uint32(hi-c.base), c.pos; i < end; i++ {
			if c.post[i].doc >= lim {
				end = i
				break
			}
		}
	}
	return c.post[c.pos:end], c.base, c.meta
}

// skip moves c past n postings of its current chunk (those run returned).
func (c *cursor) skip(n int) {
	if c.pos+n < c.end {
		c.pos += n
		c.doc = c.base + int(c.post[c.pos].doc)
		c.visits += n
		return
	}
	c.visits += n - 1
	c.enter(c.ci + 1)
}

// nameParts returns the current document's name part count.
func (c *cursor) nameParts() uint8 {
	return c.meta[c.post[c.pos].doc].nameParts
}
