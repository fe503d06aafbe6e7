package search

import (
	"math"
	"slices"
	"strings"
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
	// terms are the segment's distinct terms and postings their postings,
	// each list in document order.
	terms    []string
	postings [][]posting
	lenSum   [numFields]float64
	// base is the segment's offset in the index-wide document numbering
	// that Search's score accumulators use.
	base int
}

// buildSegment analyses one server's documents. It runs outside the index
// lock. Documents with an empty name are skipped; a repeated id keeps the
// first.
//
// Terms get small segment-local numbers so counting needs no per-document
// map, and the postings end up in one contiguous array, grouped by term
// with a counting sort.
func buildSegment(a *analyzer, server string, docs []Document) *segment {
	seg := &segment{server: server}
	seen := make(map[string]bool, len(docs))
	local := a.takeLocal()
	defer a.giveLocal(local)
	termIDs := make(map[string]int32, 1024)
	var (
		termStrs []string
		// Per term number: the last document that used it (stamp), its
		// row in that document's tfs (row), and the last document whose
		// name it is a part of (part).
		stamp, row, part []int32
		fields           [numFields][]string
		tfs              [][numFields]uint8
		order            []int32
		pairs            []termPosting
	)
	serverTerms := wholeForms(a.text(nil, server, local, true), server)
	for _, d := range docs {
		id := d.ID
		if id == "" {
			id = server + "::" + d.Name
		}
		if d.Name == "" || seen[id] {
			continue
		}
		seen[id] = true
		for f := range fields {
			fields[f] = fields[f][:0]
		}
		fields[FieldName] = a.text(fields[FieldName], d.Name, local, true)
		nameParts := len(fields[FieldName])
		fields[FieldName] = wholeForms(fields[FieldName], d.Name)
		fields[FieldServer] = append(fields[FieldServer], serverTerms...)
		fields[FieldTitle] = a.text(fields[FieldTitle], d.Title, local, true)
		fields[FieldDescription] = a.text(fields[FieldDescription], d.Description, local, true)
		for _, p := range d.Params {
			fields[FieldParamName] = a.text(fields[FieldParamName], p.Name, local, true)
			fields[FieldParamDescription] = a.text(fields[FieldParamDescription], p.Description, local, true)
		}

		docNo := int32(len(seg.docs))
		info := docInfo{id: id, name: d.Name, lname: strings.ToLower(d.Name)}
		info.ascii = isASCII(info.lname)
		var meta docMeta
		distinctParts := 0
		tfs, order = tfs[:0], order[:0]
		for f, terms := range fields {
			meta.lenq[f] = lengthBucket(len(terms))
			seg.lenSum[f] += float64(len(terms))
			for k, t := range terms {
				n, ok := termIDs[t]
				if !ok {
					n = int32(len(termStrs))
					termIDs[t] = n
					termStrs = append(termStrs, t)
					stamp, row, part = append(stamp, -1), append(row, 0), append(part, -1)
				}
				if stamp[n] != docNo {
					stamp[n], row[n] = docNo, int32(len(tfs))
					tfs = append(tfs, [numFields]uint8{})
					order = append(order, n)
				}
				if tf := &tfs[row[n]][f]; *tf < math.MaxUint8 {
					*tf++
				}
				if f == int(FieldName) && k < nameParts && part[n] != docNo {
					part[n] = docNo
					distinctParts++
				}
			}
		}
		meta.nameParts = uint8(min(distinctParts, math.MaxUint8))
		for i, n := range order {
			p := posting{doc: uint32(docNo), tf: tfs[i], namePart: part[n] == docNo}
			for f, tf := range p.tf {
				if tf != 0 {
					p.fields |= 1 << f
				}
			}
			pairs = append(pairs, termPosting{term: n, p: p})
		}
		seg.docs = append(seg.docs, info)
		seg.meta = append(seg.meta, meta)
	}

	// Group the postings by term: count, place, slice.
	offs := make([]int32, len(termStrs)+1)
	for _, tp := range pairs {
		offs[tp.term+1]++
	}
	for i := 1; i < len(offs); i++ {
		offs[i] += offs[i-1]
	}
	all := make([]posting, len(pairs))
	next := slices.Clone(offs[:len(termStrs)])
	for _, tp := range pairs {
		all[next[tp.term]] = tp.p
		next[tp.term]++
	}
	// Terms never alias a description (the analyzer clones what it caches
	// and what it builds), so the postings keep no document text alive.
	seg.terms = termStrs
	seg.postings = make([][]posting, len(termStrs))
	for n := range termStrs {
		seg.postings[n] = all[offs[n]:offs[n+1]:offs[n+1]]
	}
	return seg
}

// termPosting is a posting tagged with its segment-local term number,
// before grouping.
type termPosting struct {
	term int32
	p    posting
}
