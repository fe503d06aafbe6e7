package search

import (
	"math"
	"math/bits"
)

// termBound summarises a set of one term's postings so that Search can
// bound what any of them scores without reading them: per field, the
// highest term frequency and the shortest length bucket among the
// postings that have the term in that field.
//
// It holds no normalisation: a posting's normalised frequency is a sum
// over its fields of frequency times norm[f][length bucket], and norm only
// falls as the bucket grows, whatever the average lengths are. So the
// bound stays valid when an upsert changes the averages, and tfn prices
// it with the norms of the moment.
type termBound struct {
	maxTF  [numFields]uint8
	minLen [numFields]uint8
	// fields has bit f set when some posting has the term in field f.
	fields uint8
}

// add widens b to cover p, a posting of a document with metadata m.
func (b *termBound) add(p *posting, m *docMeta) {
	for mask := p.fields; mask != 0; mask &= mask - 1 {
		f := bits.TrailingZeros8(mask)
		if b.fields&(1<<f) == 0 {
			b.maxTF[f], b.minLen[f] = p.tf[f], m.lenq[f]
			continue
		}
		b.maxTF[f] = max(b.maxTF[f], p.tf[f])
		b.minLen[f] = min(b.minLen[f], m.lenq[f])
	}
	b.fields |= p.fields
}

// merge widens b to cover what o covers.
func (b *termBound) merge(o termBound) {
	for mask := o.fields; mask != 0; mask &= mask - 1 {
		f := bits.TrailingZeros8(mask)
		if b.fields&(1<<f) == 0 {
			b.maxTF[f], b.minLen[f] = o.maxTF[f], o.minLen[f]
			continue
		}
		b.maxTF[f] = max(b.maxTF[f], o.maxTF[f])
		b.minLen[f] = min(b.minLen[f], o.minLen[f])
	}
	b.fields |= o.fields
}

// attains reports whether o reaches one of b's extremes, so that b could
// shrink once o's postings are gone.
func (b *termBound) attains(o termBound) bool {
	for mask := o.fields; mask != 0; mask &= mask - 1 {
		f := bits.TrailingZeros8(mask)
		if o.maxTF[f] >= b.maxTF[f] || o.minLen[f] <= b.minLen[f] {
			return true
		}
	}
	return false
}

// boundOf returns the bound of postings post, all of documents of one
// segment with metadata meta.
func boundOf(post []posting, meta []docMeta) termBound {
	var b termBound
	for i := range post {
		b.add(&post[i], &meta[post[i].doc])
	}
	return b
}

// tfn returns an upper bound of the normalised term frequency of every
// posting b covers, under norm: each posting's sum has a subset of the
// same fields, in the same order, each term no larger.
func (b *termBound) tfn(norm *[numFields][math.MaxUint8 + 1]float64) float64 {
	tfn := 0.0
	for mask := b.fields; mask != 0; mask &= mask - 1 {
		f := bits.TrailingZeros8(mask)
		tfn += float64(b.maxTF[f]) * norm[f][b.minLen[f]]
	}
	return tfn
}
