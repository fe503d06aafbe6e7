package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestChunkBoundsHold checks what the segment pass's safety rests on:
// while upserts and removals move the average field lengths both ways
// (servers with long descriptions added, then removed, then servers with
// none), every chunk's bound times the index's drift is at least the
// tfNorm of each of its postings under the current norms, and the drift
// stays within driftMax of 1, the bounds being recomputed when it would
// not. It also checks that the drift moved and the bounds were
// recomputed, so that both cases were met.
func TestChunkBoundsHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 25))
	ix := New(Options{})
	ix.UpsertAll(randomCatalog(rng, pruneVocab, 20, 30))
	rebases, drifted := 0, 0
	check := func(step string) {
		t.Helper()
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		if !(ix.drift <= driftMax && ix.drift >= 1/driftMax) {
			t.Fatalf("%s: drift %v outside [1/%v, %v]", step, ix.drift, driftMax, driftMax)
		}
		if ix.drift != 1 {
			drifted++
		}
		for term, e := range ix.terms {
			for _, c := range e.chunks {
				base := int(ix.bases[c.slot])
				for _, p := range e.post[c.start : c.start+c.n] {
					if tfn := ix.norm.tfNorm(&p, &ix.meta[base+int(p.doc)]); tfn > ix.drift*float64(c.ub) {
						t.Fatalf("%s: %q: a posting's tfNorm %v over its chunk's bound %v x drift %v", step, term, tfn, c.ub, ix.drift)
					}
				}
			}
		}
	}
	upsert := func(step, server string, docs []Document) {
		t.Helper()
		ref := ix.refNorm
		if docs == nil {
			ix.Remove(server)
		} else {
			ix.Upsert(server, docs)
		}
		if ix.refNorm != ref {
			rebases++
		}
		check(step)
	}
	check("built")
	withDescription := func(words int) []Document {
		docs := randomCatalog(rng, pruneVocab, 1, 30)[0].Docs
		for i := range docs {
			var b strings.Builder
			for range words {
				b.WriteString(pruneVocab[rng.IntN(len(pruneVocab))] + " ")
			}
			docs[i].Description = b.String()
		}
		return docs
	}
	for i := range 6 {
		upsert("long added", fmt.Sprintf("long%d", i), withDescription(200))
	}
	for i := range 6 {
		upsert("long removed", fmt.Sprintf("long%d", i), nil)
	}
	for i := range 6 {
		upsert("short added", fmt.Sprintf("short%d", i), withDescription(0))
	}
	if rebases < 2 || drifted == 0 {
		t.Fatalf("%d recomputations of the bounds, %d checks with a drift: the cases were not met", rebases, drifted)
	}
}

// TestRefineBoundHolds checks the bound the segment pass skips segments
// by (refineBound): for random requests over catalogs whose servers hold
// up to 64 tools (each tool a class of its own) and more (tools sharing
// a class), no tool of a segment scores above its segment's refined
// bound, which is never looser than the segment's bound. It also checks
// that the refined bound is tighter for some segments and, where each
// tool is a class of its own, for most, and there reached by some
// segment's best tool, so that the cases matter.
func TestRefineBoundHolds(t *testing.T) {
	for _, tools := range []int{40, 300} {
		t.Run(fmt.Sprintf("tools=%d", tools), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tools), 25))
			ix := New(Options{})
			ix.UpsertAll(randomCatalog(rng, pruneVocab, 12, tools))
			if alone := ix.maxSegDocs <= 64; alone != (tools <= 64) {
				t.Fatalf("largest server has %d tools: the case is not met", ix.maxSegDocs)
			}
			boost := 1 + ix.opts.NameCoverage
			segs, reached, tighter := 0, 0, 0
			for range 300 {
				ws := make([]string, 2+rng.IntN(7))
				for i := range ws {
					ws[i] = pruneVocab[rng.IntN(len(pruneVocab))]
				}
				q := strings.Join(ws, " ")
				ix.mu.RLock()
				groups, _ := ix.parseRequest(q)
				refs := ix.resolve(groups)
				var ss segScratch
				ss.grow(len(ix.slots), ix.maxSegDocs)
				ix.segBounds(refs, &ss)
				for _, slot := range ss.slots {
					rb := ix.refineBound(refs, &ss, slot)
					var best topScores
					best.reset(1)
					from := len(ss.scores)
					ix.scoreSegment(refs, &ss, slot, &best)
					top := 0.0
					for _, v := range ss.scores[from:] {
						top = max(top, v)
					}
					if top > rb*(1+pruneSlack) {
						t.Fatalf("%q: a tool of segment %d scores %v, over its refined bound %v", q, slot, top, rb)
					}
					if coarse := boost * ss.bound[slot]; rb > coarse*(1+pruneSlack) {
						t.Fatalf("%q: segment %d's refined bound %v is over its bound %v", q, slot, rb, coarse)
					} else if rb < coarse*(1-1e-6) {
						tighter++
					}
					if top >= rb*(1-1e-12) {
						reached++
					}
					segs++
				}
				ss.reset()
				ix.mu.RUnlock()
			}
			t.Logf("%d segments: the refined bound is reached in %d, tighter than the segment's in %d", segs, reached, tighter)
			// Tools that share a class share its bound, so it is reached
			// only where each is a class of its own.
			if tighter == 0 || tools <= 64 && (reached == 0 || tighter < segs/2) {
				t.Fatal("the refined bound was never reached, or seldom tighter: the cases were not met")
			}
		})
	}
}
