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
