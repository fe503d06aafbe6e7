package search

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// docInfo is what a segment keeps of one document besides its postings.
type docInfo struct {
	id, name string
	// lname is the lowercase name, for fuzzy matching.
	lname string
	// ascii says lname is pure ASCII, so fuzzy matching can compare bytes.
	ascii bool
}

// docMeta is the per-document data scoring reads for every posting, kept
// apart from docInfo so the hot loop touches 8 bytes per document.
type docMeta struct {
	// lenq are the field lengths in terms, quantised by lengthBucket.
	lenq [numFields]uint8
	// nameParts is the number of distinct terms in the split name.
	nameParts uint8
}

// Field lengths below exactLenBuckets are kept exactly; longer ones in
// steps of 2^(1/16) (about 4%), up to about 30,000 terms.
const exactLenBuckets = 128

// lengthBucket quantises a field length to a byte.
func lengthBucket(n int) uint8 {
	if n < exactLenBuckets {
		return uint8(n)
	}
	b := exactLenBuckets + int(math.Round(16*math.Log2(float64(n)/exactLenBuckets)))
	return uint8(min(b, math.MaxUint8))
}

// bucketLengths maps a length bucket back to a representative length.
var bucketLengths = func() (t [math.MaxUint8 + 1]float64) {
	for b := range t {
		if b < exactLenBuckets {
			t[b] = float64(b)
		} else {
			t[b] = exactLenBuckets * math.Exp2(float64(b-exactLenBuckets)/16)
		}
	}
	return t
}()

// posting is one document's term frequencies for one term, per field.
// Frequencies saturate at 255; BM25 saturates long before that.
type posting struct {
	doc uint32
	tf  [numFields]uint8
	// namePart says the term is one of the parts of the split name (not
	// a whole-name form), for the name-coverage boost.
	namePart bool
	// fields has bit f set when tf[f] > 0, so scoring skips empty fields.
	fields uint8
}

// segment is the immutable analysed form of one server's tools. Only base
// changes after construction, under the index's write lock.
type segment struct {
	server string
	docs   []docInfo
	meta   []docMeta // parallel to docs
	// keys are the docs' name keys for fuzzy matching, sorted by length.
	keys []nameKey
	// terms are the segment's distinct terms and postings their postings,
	// each list in document order.
	terms    []string
	postings [][]posting
	// fwd lists each document's terms, doc d's in fwd[fwdOff[d]:fwdOff[d+1]],
	// for pseudo-relevance feedback (feedback.go), which needs the terms
	// of the best tools and the postings keep no per-document view.
	fwd    []fwdTerm
	fwdOff []int32
	lenSum [numFields]float64
	// base is the segment's offset in the index-wide document numbering
	// that Search's score accumulators use.
	base int
	// slot is the segment's place in Index.slots while it is linked.
	slot int32
}

// buildSegment analyses one server's documents. It runs outside the index
// lock. Documents with an empty name are skipped; a repeated id keeps the
// first.
//
// Terms get small segment-local numbers so counting needs no per-document
// map, and the postings end up in one contiguous array, grouped by term
// with a counting sort. The scratch space comes from a reused builder.
func buildSegment(a *analyzer, server string, docs []Document) *segment {
	b := a.takeBuilder()
	defer a.giveBuilder(b)
	b.reset()
	seg := &segment{server: server, keys: make([]nameKey, 0, len(docs))}
	serverTerms := wholeForms(a.text(nil, server, b.cache, true), server)
	for _, d := range docs {
		id := d.ID
		if id == "" {
			id = toolid.Join(server, d.Name)
		}
		if d.Name == "" || b.seen[id] {
			continue
		}
		b.seen[id] = true
		b.analyse(a, d, serverTerms)
		info := docInfo{id: id, name: d.Name, lname: strings.ToLower(d.Name)}
		info.ascii = isASCII(info.lname)
		seg.docs = append(seg.docs, info)
		seg.keys = append(seg.keys, newNameKey(info.lname, len(seg.docs)-1))
		seg.meta = append(seg.meta, b.count(int32(len(seg.docs)-1), &seg.lenSum))
	}

	sortNameKeys(seg.keys)

	// Group the postings by term: count, place, slice.
	nTerms := len(b.termStrs)
	offs := make([]int32, nTerms+1)
	for _, tp := range b.pairs {
		offs[tp.term+1]++
	}
	for i := 1; i < len(offs); i++ {
		offs[i] += offs[i-1]
	}
	all := make([]posting, len(b.pairs))
	next := slices.Clone(offs[:nTerms])
	for _, tp := range b.pairs {
		all[next[tp.term]] = tp.p
		next[tp.term]++
	}
	// Terms never alias a description (the analyzer clones what it caches
	// and what it builds), so the postings keep no document text alive.
	seg.terms = slices.Clone(b.termStrs)
	seg.postings = make([][]posting, nTerms)
	for n := range nTerms {
		seg.postings[n] = all[offs[n]:offs[n+1]:offs[n+1]]
	}
	seg.buildForward(b.pairs)
	return seg
}

// builder is the scratch space of segment builds, reused between builds
// so that indexing a catalog allocates little besides the index itself.
type builder struct {
	// cache maps raw word parts to terms, in front of the shared cache.
	cache termCache
	// termIDs numbers the segment's terms; termStrs lists them by number.
	termIDs  map[string]int32
	termStrs []string
	// Per term number: the last document that used it (stamp), its row
	// in that document's tfs (row), and the last document whose name it
	// is a part of (part).
	stamp, row, part []int32
	// fields are the current document's terms by field, and nameParts how
	// many of fields[FieldName] are name parts (the rest are whole forms).
	fields    [numFields][]string
	nameParts int
	tfs       [][numFields]uint8
	order     []int32
	pairs     []termPosting
	seen      map[string]bool
}

// reset empties everything but the term cache.
func (b *builder) reset() {
	clear(b.termIDs)
	clear(b.seen)
	b.termStrs, b.stamp, b.row, b.part = b.termStrs[:0], b.stamp[:0], b.row[:0], b.part[:0]
	b.pairs = b.pairs[:0]
}

// analyse fills b.fields with the terms of d.
func (b *builder) analyse(a *analyzer, d Document, serverTerms []string) {
	f := &b.fields
	for i := range f {
		f[i] = f[i][:0]
	}
	f[FieldName] = a.text(f[FieldName], d.Name, b.cache, true)
	b.nameParts = len(f[FieldName])
	f[FieldName] = wholeForms(f[FieldName], d.Name)
	f[FieldServer] = append(f[FieldServer], serverTerms...)
	f[FieldTitle] = a.text(f[FieldTitle], d.Title, b.cache, true)
	f[FieldDescription] = a.text(f[FieldDescription], d.Description, b.cache, true)
	for _, p := range d.Params {
		f[FieldParamName] = a.text(f[FieldParamName], p.Name, b.cache, true)
		f[FieldParamDescription] = a.text(f[FieldParamDescription], p.Description, b.cache, true)
	}
}

// count turns b.fields into document docNo's postings (appended to
// b.pairs) and returns its metadata; lenSum accumulates the field lengths.
func (b *builder) count(docNo int32, lenSum *[numFields]float64) docMeta {
	var meta docMeta
	distinctParts := 0
	b.tfs, b.order = b.tfs[:0], b.order[:0]
	for f, terms := range b.fields {
		meta.lenq[f] = lengthBucket(len(terms))
		lenSum[f] += float64(len(terms))
		for k, t := range terms {
			n, ok := b.termIDs[t]
			if !ok {
				n = int32(len(b.termStrs))
				b.termIDs[t] = n
				b.termStrs = append(b.termStrs, t)
				b.stamp, b.row, b.part = append(b.stamp, -1), append(b.row, 0), append(b.part, -1)
			}
			if b.stamp[n] != docNo {
				b.stamp[n], b.row[n] = docNo, int32(len(b.tfs))
				b.tfs = append(b.tfs, [numFields]uint8{})
				b.order = append(b.order, n)
			}
			if tf := &b.tfs[b.row[n]][f]; *tf < math.MaxUint8 {
				*tf++
			}
			if f == int(FieldName) && k < b.nameParts && b.part[n] != docNo {
				b.part[n] = docNo
				distinctParts++
			}
		}
	}
	meta.nameParts = uint8(min(distinctParts, math.MaxUint8))
	for i, n := range b.order {
		p := posting{doc: uint32(docNo), tf: b.tfs[i], namePart: b.part[n] == docNo}
		for f, tf := range p.tf {
			if tf != 0 {
				p.fields |= 1 << f
			}
		}
		b.pairs = append(b.pairs, termPosting{term: n, p: p})
	}
	return meta
}

// termPosting is a posting tagged with its segment-local term number,
// before grouping.
type termPosting struct {
	term int32
	p    posting
}

// tfNorm is p's term frequency over its fields, each normalised by the
// document's length in that field: the one formula that accumulate, the
// pruned passes and feedback share, so that their scores match to the bit.
func (norm *normTable) tfNorm(p *posting, m *docMeta) float64 {
	tfn := 0.0
	for mask := p.fields; mask != 0; mask &= mask - 1 {
		f := bits.TrailingZeros8(mask)
		tfn += float64(p.tf[f]) * norm[f][m.lenq[f]]
	}
	return tfn
}

// normTable holds, per field and quantised length, the BM25F length
// normalisation.
type normTable [numFields][math.MaxUint8 + 1]float64
