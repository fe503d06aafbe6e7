package search

import (
	"math"
)

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
