package search

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Index is a BM25F index of tools, one segment per server. Its methods are
// safe for concurrent use.
type Index struct {
	opts Options
	an   *analyzer
	syn  synonymTable
	// intents maps request words to tool words (intents.go).
	intents intentTable

	// scratch pools per-search score accumulators.
	scratch sync.Pool
	// prune chooses the first pass (prune.go); tests force either kind.
	prune pruneMode

	mu    sync.RWMutex
	segs  map[string]*segment // by server name
	order []*segment          // sorted by server name; bases follow this order
	terms map[string]*termEntry
	// names maps a lowercase tool name to every tool with that name.
	names map[string][]nameRef
	// ids maps a lowercase canonical id to its tools (several only when
	// ids differ by case alone).
	ids    map[string][]nameRef
	nDocs  int
	lenSum [numFields]float64
	// meta is every segment's docMeta in the index-wide document
	// numbering. Scoring reads a document's entry for every posting; in
	// one array, a term's postings (in segment order) read it front to
	// back, where the segments' own arrays, each a small allocation of
	// its own, cost a cache miss per segment at 100,000 tools.
	meta []docMeta
	// slots holds every linked segment at its slot, the number its
	// chunks carry, and bases[slot] is that segment's base: a posting
	// loop reads a chunk's base from this small dense array, where
	// following a pointer to each segment cost a cache miss per chunk
	// (at 100,000 tools a common term has thousands of chunks of a few
	// postings each). free lists the slots of unlinked segments.
	slots []*segment
	bases []int32
	free  []int32
	// norm[f][b] is field f's BM25F weight over its length normalisation
	// for a document whose field length is in bucket b. It depends on the
	// average field lengths, so link and unlink refresh it.
	norm normTable
	// refNorm is the norm table the chunks' bounds (chunk.ub) were
	// computed with, and drift the most any entry of norm has grown
	// against it since, as a factor: drift x chunk.ub bounds a chunk's
	// length-normalised frequencies under the current norms. The norms
	// change with every upsert; recomputing every chunk's bound each
	// time would cost a pass over every posting, so updateNorms does it
	// only when drift leaves [1/driftMax, driftMax] (refSet false: never
	// computed yet).
	refNorm normTable
	drift   float64
	refSet  bool
	// maxSegDocs is the most tools one segment holds, and segPassMax the
	// most for which accumulateTop scores a segment at a time (prune_segs.go).
	maxSegDocs int
	segPassMax int
}

// termEntry is one term's postings across segments, in one array so that
// scoring a common term streams through memory instead of visiting one
// small allocation per segment: at 100,000 tools a query reads tens of
// thousands of postings, and a cache miss per segment dominated its time.
type termEntry struct {
	df int
	// post holds every segment's postings for the term, one chunk after
	// another in the order of chunks.
	post   []posting
	chunks []chunk
	// pendPost and pendChunks count what reserve is about to add.
	pendPost, pendChunks int32
	// maxTF[f] is the highest frequency of the term in field f over its
	// postings, and minLen[f] the shortest length bucket of field f among
	// the documents that have it there: with the norms, they bound what
	// one posting can score (termBound), for pruning (prune.go). Removing
	// a server leaves them as they were, a looser but still safe bound.
	maxTF, minLen [numFields]uint8
	// unordered says chunks are not in server order, which is the order
	// of the index-wide document numbers, so lookup cannot bisect them.
	unordered bool
}

// chunk is one segment's run of postings in a termEntry, post[start:start+n];
// slot is the segment's slot in Index.slots and Index.bases. The fields
// are 32-bit so that a chunk is 16 bytes: at 100,000 tools the index
// holds over a million of them.
type chunk struct {
	slot, n, start int32
	// ub bounds the length-normalised frequency (tfNorm) of the chunk's
	// postings under Index.refNorm, rounded up: the segment pass
	// (prune_segs.go) bounds a segment's scores with it, without reading
	// its postings.
	ub float32
}

// nameRef locates one tool for name resolution.
type nameRef struct {
	seg *segment
	doc uint32
}

func (r nameRef) id() string   { return r.seg.docs[r.doc].id }
func (r nameRef) name() string { return r.seg.docs[r.doc].name }

// New returns an empty index. Zero fields of opts take the tuned defaults.
func New(opts Options) *Index {
	ix := &Index{
		opts:  opts.withDefaults(),
		an:    newAnalyzer(),
		segs:  make(map[string]*segment),
		terms: make(map[string]*termEntry),
		names: make(map[string][]nameRef),
		ids:   make(map[string][]nameRef),

		segPassMax: segPassMaxDocs,
	}
	ix.syn = buildSynonyms(ix.an)
	ix.intents = buildIntents(ix.an)
	return ix
}

// Options returns the options in force, defaults filled in.
func (ix *Index) Options() Options { return ix.opts }

// Upsert replaces the tools of server with docs; an empty docs removes the
// server. Only this server's tools are analysed; the rest of the index is
// untouched.
func (ix *Index) Upsert(server string, docs []Document) {
	if len(docs) == 0 {
		ix.Remove(server)
		return
	}
	seg := buildSegment(ix.an, server, docs)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old := ix.segs[server]; old != nil {
		ix.unlink(old)
	}
	ix.link(seg, nil)
	ix.renumber()
	ix.updateNorms()
}

// UpsertAll replaces the tools of several servers at once, analysing them
// in parallel (one goroutine per CPU) and taking the write lock once. It is
// the fast path for indexing a whole catalog at start-up; servers not
// named keep their tools, and an entry with no docs removes its server.
func (ix *Index) UpsertAll(servers []ServerDocs) {
	segs := make([]*segment, len(servers))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(servers)) {
		wg.Go(func() {
			for i := range next {
				if len(servers[i].Docs) > 0 {
					segs[i] = buildSegment(ix.an, servers[i].Server, servers[i].Docs)
				}
			}
		})
	}
	for i := range servers {
		next <- i
	}
	close(next)
	wg.Wait()

	// A server named twice keeps its last entry, as if upserted in turn.
	last := make(map[string]int, len(servers))
	for i, sd := range servers {
		last[sd.Server] = i
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i, sd := range servers {
		if old := ix.segs[sd.Server]; old != nil && last[sd.Server] == i {
			ix.unlink(old)
		}
	}
	var linked []*segment
	for i, sd := range servers {
		if segs[i] != nil && last[sd.Server] == i {
			linked = append(linked, segs[i])
		}
	}
	ents := ix.reserve(linked)
	for i, seg := range linked {
		ix.link(seg, ents[i])
	}
	ix.renumber()
	ix.updateNorms()
}

// reserve finds or makes the term entries segs will be linked into, one
// list per segment parallel to its terms, and grows each to its final size
// at once: appending segment after segment would copy a common term's
// postings over and over, and leave up to a quarter of each array unused.
// Caller holds mu.
func (ix *Index) reserve(segs []*segment) [][]*termEntry {
	ents := make([][]*termEntry, len(segs))
	var grown []*termEntry
	for i, seg := range segs {
		ents[i] = make([]*termEntry, len(seg.terms))
		for n, t := range seg.terms {
			e := ix.terms[t]
			if e == nil {
				e = &termEntry{}
				ix.terms[t] = e
			}
			if e.pendChunks == 0 {
				grown = append(grown, e)
			}
			e.pendPost += int32(len(seg.postings[n]))
			e.pendChunks++
			ents[i][n] = e
		}
	}
	for _, e := range grown {
		e.post = slices.Grow(e.post, int(e.pendPost))
		e.chunks = slices.Grow(e.chunks, int(e.pendChunks))
		e.pendPost, e.pendChunks = 0, 0
	}
	return ents
}

// Remove drops every tool of server.
func (ix *Index) Remove(server string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old := ix.segs[server]; old != nil {
		ix.unlink(old)
		ix.renumber()
		ix.updateNorms()
	}
}

// Len returns the number of tools in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.nDocs
}

// Servers returns the indexed server names, sorted.
func (ix *Index) Servers() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]string, len(ix.order))
	for i, s := range ix.order {
		out[i] = s.server
	}
	return out
}

// link adds seg's postings, names and statistics. ents are the term
// entries from reserve, or nil to look them up. Caller holds mu.
func (ix *Index) link(seg *segment, ents []*termEntry) {
	ix.segs[seg.server] = seg
	if n := len(ix.free); n > 0 {
		seg.slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
		ix.slots[seg.slot] = seg
	} else {
		seg.slot = int32(len(ix.slots))
		ix.slots = append(ix.slots, seg)
		ix.bases = append(ix.bases, 0)
	}
	i, _ := slices.BinarySearchFunc(ix.order, seg.server, func(s *segment, name string) int {
		return strings.Compare(s.server, name)
	})
	ix.order = slices.Insert(ix.order, i, seg)
	for n, t := range seg.terms {
		p := seg.postings[n]
		var e *termEntry
		if ents != nil {
			e = ents[n]
		} else if e = ix.terms[t]; e == nil {
			e = &termEntry{}
			ix.terms[t] = e
		}
		e.addBounds(p, seg.meta)
		if k := len(e.chunks); k > 0 && ix.slots[e.chunks[k-1].slot].server > seg.server {
			e.unordered = true
		}
		e.df += len(p)
		e.chunks = append(e.chunks, chunk{slot: seg.slot, n: int32(len(p)), start: int32(len(e.post)), ub: chunkBound(&ix.refNorm, p, seg.meta)})
		e.post = append(e.post, p...)
	}
	// The term entries now hold the postings; the segment's copy would
	// only double the index's memory.
	seg.postings = nil
	for d := range seg.docs {
		ref := nameRef{seg: seg, doc: uint32(d)}
		ln := strings.ToLower(seg.docs[d].name)
		ix.names[ln] = append(ix.names[ln], ref)
		li := strings.ToLower(seg.docs[d].id)
		ix.ids[li] = append(ix.ids[li], ref)
	}
	ix.nDocs += len(seg.docs)
	for f := range ix.lenSum {
		ix.lenSum[f] += seg.lenSum[f]
	}
}

// unlink removes everything link added for seg. Caller holds mu.
func (ix *Index) unlink(seg *segment) {
	delete(ix.segs, seg.server)
	ix.order = slices.DeleteFunc(ix.order, func(s *segment) bool { return s == seg })
	for _, t := range seg.terms {
		e := ix.terms[t]
		if e == nil {
			continue
		}
		e.unlink(seg)
		if len(e.chunks) == 0 {
			delete(ix.terms, t)
		}
	}
	drop := func(m map[string][]nameRef, key string) {
		refs := slices.DeleteFunc(m[key], func(r nameRef) bool { return r.seg == seg })
		if len(refs) == 0 {
			delete(m, key)
		} else {
			m[key] = refs
		}
	}
	for d := range seg.docs {
		drop(ix.names, strings.ToLower(seg.docs[d].name))
		drop(ix.ids, strings.ToLower(seg.docs[d].id))
	}
	ix.nDocs -= len(seg.docs)
	for f := range ix.lenSum {
		ix.lenSum[f] -= seg.lenSum[f]
	}
	ix.slots[seg.slot] = nil
	ix.free = append(ix.free, seg.slot)
}

// unlink removes seg's chunk from e.
func (e *termEntry) unlink(seg *segment) {
	off := 0
	for i, c := range e.chunks {
		if c.slot != seg.slot {
			off += int(c.n)
			continue
		}
		e.df -= int(c.n)
		e.post = slices.Delete(e.post, off, off+int(c.n))
		e.chunks = slices.Delete(e.chunks, i, i+1)
		for j := i; j < len(e.chunks); j++ {
			e.chunks[j].start -= c.n
		}
		return
	}
}

// renumber lays the segments out one after another in the index-wide
// document numbering and copies their metadata into it (7 bytes a tool).
// Caller holds mu.
func (ix *Index) renumber() {
	base := 0
	// Readers are locked out, so the array is refilled in place.
	ix.meta = ix.meta[:0]
	ix.maxSegDocs = 0
	for _, s := range ix.order {
		s.base = base
		ix.bases[s.slot] = int32(base)
		base += len(s.docs)
		ix.meta = append(ix.meta, s.meta...)
		ix.maxSegDocs = max(ix.maxSegDocs, len(s.docs))
	}
}

// updateNorms recomputes the length-normalisation table from the current
// average field lengths. Caller holds mu.
func (ix *Index) updateNorms() {
	n := float64(ix.nDocs)
	for f, fp := range ix.opts.Fields {
		bLen := 0.0
		if ix.lenSum[f] > 0 {
			bLen = fp.B * n / ix.lenSum[f] // B / average length
		}
		for b, l := range bucketLengths {
			ix.norm[f][b] = fp.Weight / (1 - fp.B + bLen*l)
		}
	}
	ix.drift = normDrift(&ix.norm, &ix.refNorm)
	if !ix.refSet || !(ix.drift <= driftMax && ix.drift >= 1/driftMax) {
		ix.rebaseBounds()
	}
}

// driftMax is how far the norms may move from those the chunks' bounds
// were computed with before updateNorms recomputes the bounds: the
// bounds loosen by up to that factor, and recomputing them reads every
// posting.
const driftMax = 1.1

// normDrift returns the most an entry of norm has grown against ref, as
// a factor: tfNorm under norm is at most that times tfNorm under ref.
// Bucket 0 is left out, as a posting never has a field of length 0 with
// a frequency in it. A ratio that is not a number (a field whose weight
// or length became zero or infinite) makes it NaN, so the caller
// recomputes the bounds.
func normDrift(norm, ref *normTable) float64 {
	d := 0.0
	for f := range norm {
		for b := 1; b < len(norm[f]); b++ {
			if norm[f][b] == 0 {
				continue
			}
			if r := norm[f][b] / ref[f][b]; !(r <= d) {
				d = r
			}
		}
	}
	return d
}

// rebaseBounds recomputes every chunk's bound under the current norms.
// Caller holds mu, after renumber.
func (ix *Index) rebaseBounds() {
	ix.refNorm, ix.drift, ix.refSet = ix.norm, 1, true
	for _, e := range ix.terms {
		for i := range e.chunks {
			c := &e.chunks[i]
			base := int(ix.bases[c.slot])
			c.ub = chunkBound(&ix.refNorm, e.post[c.start:c.start+c.n], ix.meta[base:])
		}
	}
}

// chunkBound returns the highest tfNorm of postings p under norm, whose
// documents' metadata is meta, rounded up to a float32.
func chunkBound(norm *normTable, p []posting, meta []docMeta) float32 {
	m := 0.0
	for i := range p {
		m = max(m, norm.tfNorm(&p[i], &meta[p[i].doc]))
	}
	u := float32(m)
	if float64(u) < m {
		u = math.Nextafter32(u, float32(math.Inf(1)))
	}
	return u
}

// locate maps an index-wide document number to its segment and local
// number. Caller holds mu (read).
func (ix *Index) locate(g int) (*segment, uint32) {
	i, found := slices.BinarySearchFunc(ix.order, g, func(s *segment, g int) int {
		switch {
		case s.base+len(s.docs) <= g:
			return -1
		case s.base > g:
			return 1
		}
		return 0
	})
	if !found {
		return nil, 0
	}
	s := ix.order[i]
	return s, uint32(g - s.base)
}
