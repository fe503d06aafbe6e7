package search

import (
	"math"
	"strings"
)

// docInfo is what a segment keeps of one document besides its postings.
type docInfo struct {
	id, name string
	// lname is the lowercase name, for fuzzy matching.
	lname string
	// lens are the field lengths in terms, for BM25 length normalisation.
	lens [numFields]float32
	// nameParts is the number of distinct terms in the split name.
	nameParts uint8
}

// posting is one document's term frequencies for one term, per field.
// Frequencies saturate at 255; BM25 saturates long before that.
type posting struct {
	doc uint32
	tf  [numFields]uint8
	// namePart says the term is one of the parts of the split name (not
	// a whole-name form), for the name-coverage boost.
	namePart bool
}

// segment is the immutable analysed form of one server's tools. Only base
// changes after construction, under the index's write lock.
type segment struct {
	server string
	docs   []docInfo
	terms  map[string][]posting
	lenSum [numFields]float64
	// base is the segment's offset in the index-wide document numbering
	// that Search's score accumulators use.
	base int
}

// buildSegment analyses one server's documents. It runs outside the index
// lock. Documents with an empty name are skipped; a repeated id keeps the
// first.
func buildSegment(a *analyzer, server string, docs []Document) *segment {
	seg := &segment{server: server, terms: make(map[string][]posting)}
	seen := make(map[string]bool, len(docs))
	var fields [numFields][]string
	counts := make(map[string]*[numFields]uint8)
	parts := make(map[string]bool)
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
		fields[FieldName] = a.text(fields[FieldName], d.Name, true)
		clear(parts)
		for _, t := range fields[FieldName] {
			parts[t] = true
		}
		fields[FieldName] = wholeForms(fields[FieldName], d.Name)
		fields[FieldServer] = wholeForms(a.text(fields[FieldServer], server, true), server)
		fields[FieldTitle] = a.text(fields[FieldTitle], d.Title, true)
		fields[FieldDescription] = a.text(fields[FieldDescription], d.Description, true)
		for _, p := range d.Params {
			fields[FieldParamName] = a.text(fields[FieldParamName], p.Name, true)
			fields[FieldParamDescription] = a.text(fields[FieldParamDescription], p.Description, true)
		}
		docNo := uint32(len(seg.docs))
		info := docInfo{id: id, name: d.Name, lname: strings.ToLower(d.Name), nameParts: uint8(min(len(parts), math.MaxUint8))}
		clear(counts)
		for f, terms := range fields {
			info.lens[f] = float32(len(terms))
			seg.lenSum[f] += float64(len(terms))
			for _, t := range terms {
				c := counts[t]
				if c == nil {
					c = new([numFields]uint8)
					counts[t] = c
				}
				if c[f] < math.MaxUint8 {
					c[f]++
				}
			}
		}
		for t, c := range counts {
			seg.terms[t] = append(seg.terms[t], posting{doc: docNo, tf: *c, namePart: parts[t]})
		}
		seg.docs = append(seg.docs, info)
	}
	return seg
}
