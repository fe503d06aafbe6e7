package search

import (
	"slices"
	"strings"
)

// scratch is one search's reusable working space, pooled per index.
type scratch struct {
	r ranker
}

func (ix *Index) getScratch() *scratch {
	sc, _ := ix.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	return sc
}

func (ix *Index) putScratch(sc *scratch) {
	// A pasted document can make a search's window lists large: do not
	// keep those around.
	if cap(sc.r.ents) > maxPooledEntries {
		return
	}
	// Keep nothing that pins the index's postings.
	clear(sc.r.cursors[:cap(sc.r.cursors)])
	ix.scratch.Put(sc)
}

// maxPooledEntries bounds the window entries a pooled scratch keeps.
const maxPooledEntries = 1 << 16

// scored is a candidate hit during ranking.
type scored struct {
	g     int     // index-wide document number
	score float64 // final score, bonuses included
	base  float64 // text score, for the cutoff
	sim   float64 // name similarity of a fuzzy bonus
	exact bool
	fuzzy bool
}

// Search ranks the tools for query and returns at most limit hits (limit
// <= 0 means Options.DefaultLimit; larger than Options.MaxLimit is capped).
// An empty query browses: Result.Browse lists tool names by server. A query
// that matches nothing gets Browse and DidYouMean instead of hits.
func (ix *Index) Search(query string, limit int) Result {
	res, _ := ix.search(query, limit)
	return res
}

// search is Search that also returns how many postings it read.
func (ix *Index) search(query string, limit int) (Result, int) {
	if limit <= 0 {
		limit = ix.opts.DefaultLimit
	}
	limit = min(limit, ix.opts.MaxLimit)
	query = strings.TrimSpace(truncate(query, ix.opts.MaxQueryBytes))

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if query == "" || ix.nDocs == 0 {
		return Result{Browse: ix.browse()}, 0
	}

	sc := ix.getScratch()
	defer ix.putScratch(sc)
	r := &sc.r
	r.prepare(ix, ix.parseQuery(query))

	bonus := make(map[int]*scored)
	for _, ref := range ix.exactRefs(query) {
		g := ref.seg.base + int(ref.doc)
		bonus[g] = &scored{g: g, exact: true}
	}
	// Fuzzy name matching is for one-word queries: a misspelt tool name,
	// or a single word that matched nothing. Did-you-mean on a sentence
	// helps no one and would scan every name. A query shaped like a name
	// gets it whatever matched, so its bonus documents are known before
	// scoring; another word only when nothing matched at all.
	fuzzy := len(bonus) == 0 && isOneWord(query)
	var dym []fuzzyCand
	addFuzzy := func() {
		dym = ix.fuzzyNames(query)
		for _, c := range dym {
			if c.sim < fuzzyHitSim {
				continue
			}
			g := c.ref.seg.base + int(c.ref.doc)
			bonus[g] = &scored{g: g, sim: c.sim, fuzzy: true}
		}
	}
	early := fuzzy && isIdentifierLike(query)
	if early {
		addFuzzy()
	}

	// Bonus documents rank on their exact text score plus the bonus,
	// whether or not that score would make the hits, so score them apart
	// and leave them out of the pruned search.
	skip := make([]int, 0, len(bonus))
	for g := range bonus {
		skip = append(skip, g)
	}
	slices.Sort(skip)
	best := 0.0
	for i, s := range r.scoreDocs(skip) {
		bonus[skip[i]].base = s
		best = max(best, s)
	}
	best = r.run(limit, skip, best, ix.opts.Cutoff)
	if fuzzy && !early && best == 0 {
		addFuzzy() // nothing matched, so every text score is zero
	}
	for _, b := range bonus {
		if b.exact {
			b.score = b.base + ix.opts.ExactBonus
		} else {
			b.score = b.base + b.sim*max(best, 1)
		}
	}

	hits := ix.topHits(r.heap, bonus, best, limit)
	res := Result{Hits: hits}
	for i, c := range dym {
		if i == ix.opts.DidYouMeanMax {
			break
		}
		res.DidYouMean = append(res.DidYouMean, c.ref.id())
	}
	if len(hits) == 0 {
		res.Browse = ix.browse()
	}
	return res, r.visits()
}

// topHits ranks the candidates (none a bonus document) and the bonus
// documents, applies the cutoff and turns the best limit into hits.
// Caller holds mu (read).
func (ix *Index) topHits(cands []cand, bonus map[int]*scored, best float64, limit int) []Hit {
	floor := 0.0
	if ix.opts.Cutoff > 0 {
		floor = ix.opts.Cutoff * best
	}
	top := make([]scored, 0, min(limit, len(cands))+len(bonus))
	for _, c := range cands {
		if c.score >= floor {
			top = append(top, scored{g: c.g, score: c.score, base: c.score})
		}
	}
	for _, b := range bonus {
		if b.exact || b.fuzzy || b.base >= floor {
			top = append(top, *b)
		}
	}
	// Best first; equal scores go to the lower document number.
	slices.SortFunc(top, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return a.g - b.g
	})
	top = top[:min(len(top), limit)]
	hits := make([]Hit, 0, len(top))
	for _, c := range top {
		seg, d := ix.locate(c.g)
		if seg == nil {
			continue
		}
		hits = append(hits, Hit{
			ID:     seg.docs[d].id,
			Server: seg.server,
			Name:   seg.docs[d].name,
			Score:  c.score,
			Exact:  c.exact,
			Fuzzy:  c.fuzzy,
		})
	}
	return hits
}
