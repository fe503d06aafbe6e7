package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// searchWith runs Search with the first pass forced to mode. Callers do
// not search ix concurrently.
func searchWith(ix *Index, mode pruneMode, q string, limit int) Result {
	old := ix.prune
	ix.prune = mode
	defer func() { ix.prune = old }()
	return ix.Search(q, limit)
}

// segPasses are the values of Index.segPassMax the pruning tests run
// with, so that both pruned passes of a plain request are checked: the
// segment pass (prune_segs.go) and, as for an index with a segment too
// large for it, the term-at-a-time pass (accumulateTop).
var segPasses = []int{segPassMaxDocs, 0}

// searchPruned runs Search with the first pass forced to be pruned, a
// segment at a time when segMax admits every segment of ix. Callers do
// not search ix concurrently.
func searchPruned(ix *Index, segMax int, q string, limit int) Result {
	old := ix.segPassMax
	ix.segPassMax = segMax
	defer func() { ix.segPassMax = old }()
	return searchWith(ix, pruneAlways, q, limit)
}

// diffResults describes how two results differ, "" when they are equal
// to the bit (scores included).
func diffResults(want, got Result) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	var b strings.Builder
	n := max(len(want.Hits), len(got.Hits))
	for i := range n {
		var w, g Hit
		if i < len(want.Hits) {
			w = want.Hits[i]
		}
		if i < len(got.Hits) {
			g = got.Hits[i]
		}
		mark := " "
		if w != g {
			mark = "!"
		}
		fmt.Fprintf(&b, "%s %d: exhaustive %s %.17g | pruned %s %.17g\n", mark, i, w.ID, w.Score, g.ID, g.Score)
	}
	if !reflect.DeepEqual(want.DidYouMean, got.DidYouMean) || want.Partial != got.Partial {
		fmt.Fprintf(&b, "did-you-mean %q vs %q, partial %v vs %v\n", want.DidYouMean, got.DidYouMean, want.Partial, got.Partial)
	}
	return b.String()
}

// randomCatalog makes a catalog from a small vocabulary with a skewed
// word distribution, so that common words have long postings, rare words
// short ones, and many tools tie.
func randomCatalog(rng *rand.Rand, vocab []string, servers, tools int) []ServerDocs {
	word := func() string {
		// Squaring a uniform draw favours the first words of vocab.
		f := rng.Float64()
		return vocab[int(f*f*float64(len(vocab)))]
	}
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	var out []ServerDocs
	for s := range servers {
		sd := ServerDocs{Server: fmt.Sprintf("srv%d%s", s, vocab[rng.IntN(len(vocab))])}
		seen := map[string]bool{}
		for range tools {
			name := strings.ReplaceAll(words(1+rng.IntN(3)), " ", "_")
			if seen[name] {
				continue
			}
			seen[name] = true
			d := Document{Name: name, Description: words(rng.IntN(30))}
			if rng.IntN(3) == 0 {
				d.Title = words(1 + rng.IntN(3))
			}
			for range rng.IntN(4) {
				d.Params = append(d.Params, Param{Name: word(), Description: words(rng.IntN(8))})
			}
			sd.Docs = append(sd.Docs, d)
		}
		out = append(out, sd)
	}
	return out
}

// pruneVocab is the vocabulary of the random catalogs the pruning
// properties are checked on.
var pruneVocab = strings.Fields(`file read write list get create delete issue pull request
	repo branch commit message channel slack post send email user search query
	database table row weather city forecast flight book hotel price stock
	image resize upload download memory note calendar event time zone map route
	translate text language summary report chart metric alert log trace span`)

// FuzzPrunedEqualsExhaustive checks TestPrunedSearchMatchesExhaustive's
// property on fuzzed requests, above all requests split into clauses,
// whose pruned pass bounds the best whole-request score, each clause's
// best and lead and the fused top k at once: over a random catalog made
// from seed (and churned when seed is odd), the pruned first pass
// returns the exhaustive pass's hits, scores to the bit, at every limit.
func FuzzPrunedEqualsExhaustive(f *testing.F) {
	for _, sd := range pruneSeeds {
		f.Add(sd.seed, sd.query)
	}
	f.Fuzz(func(t *testing.T, seed uint64, query string) {
		ix := seededIndex(seed)
		for _, limit := range []int{1, 2, 5, 10, 20} {
			want := searchWith(ix, pruneNever, query, limit)
			for _, segMax := range segPasses {
				got := searchPruned(ix, segMax, query, limit)
				if d := diffResults(want, got); d != "" {
					t.Fatalf("Search(%q, %d), segment pass up to %d tools, differs:\n%s", query, limit, segMax, d)
				}
			}
		}
	})
}

// pruneSeeds are FuzzPrunedEqualsExhaustive's seeds: split requests
// whose pass over their seed's catalog prunes (TestPruneSeedsPrune), and
// two that are not split.
var pruneSeeds = []struct {
	seed  uint64
	query string
}{
	{4, "read the file and post a message to the channel"},
	{18, "list issues; then create a pull request, and also send an email"},
	{4, "get the weather forecast for a city. Book a flight and a hotel. Then translate the summary"},
	{4, "search the database table rows and chart the metric; alert on log trace span"},
	{18, "price stock report: summary of price. note the calendar event time zone"},
	{4, "create delete read write list get: message channel user"},
	{42, "map route and translate text language and summary report and chart metric and alert log and trace span"},
	{4, "write a note about the calendar event, then email the user"},
	{4, "get the repo branch and commit; then post the message to slack"},
	{7, "file file file and and then then"},
	{9, "weather"},
}

// seededIndex indexes the random catalog that seed makes, churned
// (a server replaced, one removed) when seed is odd.
func seededIndex(seed uint64) *Index {
	rng := rand.New(rand.NewPCG(seed, 25))
	cat := randomCatalog(rng, pruneVocab, 5+rng.IntN(30), 10+rng.IntN(50))
	ix := New(Options{})
	ix.UpsertAll(cat)
	if seed%2 == 1 {
		ix.Upsert(cat[0].Server, randomCatalog(rng, pruneVocab, 1, 20)[0].Docs)
		ix.Remove(cat[len(cat)-1].Server)
	}
	return ix
}

// TestPruneSeedsPrune keeps FuzzPrunedEqualsExhaustive's seeds useful:
// the split requests among them are split and pruned (fewer tools scored
// than by the exhaustive pass) at limits 5 and 10.
func TestPruneSeedsPrune(t *testing.T) {
	split := 0
	for _, sd := range pruneSeeds {
		ix := seededIndex(sd.seed)
		if _, c := ix.parseRequest(sd.query); c == 0 {
			continue
		}
		split++
		if !wasPruned(ix, sd.query, 5) || !wasPruned(ix, sd.query, 10) {
			t.Errorf("seed %d, %q: not pruned", sd.seed, sd.query)
		}
	}
	if split < 8 {
		t.Fatalf("only %d seeds are split requests", split)
	}
}

// TestPrunedSearchMatchesExhaustive is the property that makes pruning
// safe: on random catalogs and requests, the pruned first pass returns
// the same hits, scores to the bit, as scoring every posting, for every
// limit. It also checks that pruning happened, so the property is not
// met by always falling back.
func TestPrunedSearchMatchesExhaustive(t *testing.T) {
	vocab := pruneVocab
	rng := rand.New(rand.NewPCG(25, 2026))
	prunedRuns := 0
	for trial := range 12 {
		cat := randomCatalog(rng, vocab, 5+rng.IntN(40), 10+rng.IntN(60))
		ix := New(Options{})
		ix.UpsertAll(cat)
		if trial%3 == 0 {
			// Replace and remove servers, so bounds outlive the postings
			// they were made from.
			ix.Upsert(cat[0].Server, randomCatalog(rng, vocab, 1, 20)[0].Docs)
			ix.Remove(cat[len(cat)-1].Server)
		}
		for q := range 80 {
			var query string
			switch q % 8 {
			case 0:
				// A tool's exact name in a sentence, and alone.
				s := cat[rng.IntN(len(cat))]
				if len(s.Docs) > 0 {
					query = "use " + s.Docs[rng.IntN(len(s.Docs))].Name + " " + vocab[rng.IntN(len(vocab))]
				}
			case 1:
				query = vocab[rng.IntN(len(vocab))] + ", then " + vocab[rng.IntN(len(vocab))] + " " + vocab[rng.IntN(len(vocab))]
			default:
				ws := make([]string, 2+rng.IntN(8))
				for i := range ws {
					ws[i] = vocab[rng.IntN(len(vocab))]
				}
				query = strings.Join(ws, " ")
			}
			for _, limit := range []int{1, 3, 10, 20} {
				want := searchWith(ix, pruneNever, query, limit)
				for _, segMax := range segPasses {
					got := searchPruned(ix, segMax, query, limit)
					if d := diffResults(want, got); d != "" {
						t.Fatalf("trial %d, Search(%q, %d), segment pass up to %d tools, differs:\n%s", trial, query, limit, segMax, d)
					}
				}
			}
			if wasPruned(ix, query, 10) {
				prunedRuns++
			}
		}
	}
	if prunedRuns < 100 {
		t.Fatalf("only %d requests were pruned: the property was barely tested", prunedRuns)
	}
}

// wasPruned reports whether Search(query, limit) prunes with pruneAlways
// and then scores fewer documents than the exhaustive pass.
func wasPruned(ix *Index, query string, limit int) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	groups, clauses := ix.parseRequest(query)
	if len(groups) < 2 || isOneWord(query) {
		return false
	}
	sc := ix.getScratch(ix.nDocs)
	sc.clauses = clauses
	ix.accumulate(groups, sc)
	all := len(sc.touched)
	ix.putScratch(sc)
	sc = ix.getScratch(ix.nDocs)
	defer ix.putScratch(sc)
	sc.clauses = clauses
	sc.cterms = clauseTerms(groups, clauses)
	var pr *pruned
	if clauses == 0 {
		pr = ix.accumulateTop(groups, sc, limit, nil)
	} else {
		pr, _ = ix.accumulateClausesTop(groups, sc, limit, nil)
	}
	return pr != nil && len(sc.touched) < all
}

// TestPrunedRankingOnBenchmarks checks the ranking on the four retrieval
// sets: every query's top 20 with pruning forced on is the exhaustive
// one, scores to the bit.
func TestPrunedRankingOnBenchmarks(t *testing.T) {
	for _, ds := range datasets {
		t.Run(ds.name, func(t *testing.T) {
			ix, qs := loadDataset(t, ds, Options{})
			pruned := 0
			// Every query of the smaller sets; every fifth of MetaTool's
			// 21,000 keeps the test under ten seconds.
			for i := 0; i < len(qs); i += max(1, len(qs)/4000) {
				q := qs[i]
				want := searchWith(ix, pruneNever, q.Query, 20)
				for _, segMax := range segPasses {
					got := searchPruned(ix, segMax, q.Query, 20)
					if d := diffResults(want, got); d != "" {
						t.Fatalf("Search(%q), segment pass up to %d tools, differs:\n%s", q.Query, segMax, d)
					}
				}
				if wasPruned(ix, q.Query, 20) {
					pruned++
				}
			}
			t.Logf("%d queries pruned", pruned)
		})
	}
}

// TestPrunedRankingAtScale compares pruned and exhaustive search over
// 20,000 synthetic tools, where the common words' postings are long and
// pruning skips most of them, on the benchmark's query mix.
func TestPrunedRankingAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 20,000-tool index")
	}
	ix := New(Options{})
	ix.UpsertAll(synthCatalog(t, 20000))
	pruned, split := 0, 0
	qs := benchQueries(t)
	for _, q := range qs {
		want := searchWith(ix, pruneNever, q, 10)
		got := searchWith(ix, pruneAuto, q, 10)
		if d := diffResults(want, got); d != "" {
			t.Fatalf("Search(%q) differs:\n%s", q, d)
		}
		if wasPruned(ix, q, 10) {
			pruned++
			if _, clauses := ix.parseRequest(q); clauses > 0 {
				split++
			}
		}
	}
	t.Logf("%d of %d queries pruned, %d of them split into clauses", pruned, len(qs), split)
	if pruned == 0 || split == 0 {
		t.Fatal("no query, or no query split into clauses, was pruned")
	}
}

// TestChurnEqualsFresh checks the chunks' segment slots and bases: after
// servers are removed, replaced and added back in another order (so
// slots are freed and reused, and bases shift), pruned and exhaustive
// search give what an index built fresh from the same servers gives.
func TestChurnEqualsFresh(t *testing.T) {
	vocab := strings.Fields(`file read write list get create delete issue pull request
		repo branch commit message channel slack post send email user search query
		database table row weather city forecast flight book hotel price`)
	rng := rand.New(rand.NewPCG(7, 25))
	cat := randomCatalog(rng, vocab, 30, 40)
	inc := New(Options{})
	inc.UpsertAll(cat)
	for i := 0; i < len(cat); i += 3 {
		inc.Remove(cat[i].Server)
	}
	for i := len(cat) - 1; i >= 0; i -= 2 {
		cat[i].Docs = randomCatalog(rng, vocab, 1, 40)[0].Docs
		inc.Upsert(cat[i].Server, cat[i].Docs)
	}
	for i := 0; i < len(cat); i += 3 {
		inc.Upsert(cat[i].Server, cat[i].Docs)
	}
	fresh := New(Options{})
	fresh.UpsertAll(cat)
	checked := 0
	for range 200 {
		ws := make([]string, 2+rng.IntN(6))
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		q := strings.Join(ws, " ")
		want := searchWith(fresh, pruneNever, q, 10)
		for _, mode := range []pruneMode{pruneNever, pruneAlways} {
			got := searchWith(inc, mode, q, 10)
			if len(got.Hits) != len(want.Hits) {
				t.Fatalf("%q (mode %d): after churn %q, fresh %q", q, mode, hitIDs(got.Hits), hitIDs(want.Hits))
			}
			for i := range got.Hits {
				if got.Hits[i].ID != want.Hits[i].ID || abs(got.Hits[i].Score-want.Hits[i].Score) > 1e-9 {
					t.Fatalf("%q (mode %d) hit %d: after churn %+v, fresh %+v", q, mode, i, got.Hits[i], want.Hits[i])
				}
			}
			checked += len(got.Hits)
		}
	}
	if checked == 0 {
		t.Fatal("no query had a hit")
	}
}

// TestCheapFirstOrder checks the split requests' first-phase order: by
// bound per posting, so a common word whose bound is the highest comes
// after rarer words, and a group's postings are those of all its terms.
func TestCheapFirstOrder(t *testing.T) {
	group := func(postings ...int) groupRef {
		var r groupRef
		for _, n := range postings {
			r.alts = append(r.alts, altRef{e: &termEntry{post: make([]posting, n)}})
		}
		return r
	}
	refs := []groupRef{
		group(59999),    // common: bound 4.0, the highest
		group(99),       // rare: bound 3.0
		group(199, 200), // bound 2.0 over 399 postings
		group(399),      // bound 3.0 too, four times the postings of group 1
		group(),         // no term in the index
	}
	ub := []float64{4, 3, 2, 3, 0}
	order := []int{0, 1, 3, 2, 4} // falling bound, as groupBounds gives it
	cheapFirst(refs, ub, order)
	// Per posting, in this order: 0.03, 0.0075, 0.005, 0.00007, 0.
	want := []int{1, 3, 2, 0, 4}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// TestFilterRowsAll checks that filterRows over every touched row (cands
// nil), which marks the rows it keeps, keeps and marks exactly what
// listing every row, marking them all and filtering the list does, for
// rows of two clauses (its unrolled loop) and of three.
func TestFilterRowsAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 25))
	mixed := 0
	for _, nc := range []int{2, 3} {
		nr := nc + 1
		for round := range 50 {
			const docs = 400
			sc := &scratch{cand: make([]bool, docs)}
			for g := range docs {
				if rng.IntN(3) > 0 {
					sc.touched = append(sc.touched, g)
					for range nr {
						sc.prow = append(sc.prow, rng.Float64()*4)
					}
				}
			}
			at, r, ft := 2+rng.Float64()*3, rng.Float64(), 8+rng.Float64()*8
			var ct, hi [maxClauses]float64
			for c := range nc {
				ct[c], hi[c] = 2+rng.Float64()*3, rng.Float64()*2
			}
			if round%10 == 0 {
				ct[0] = math.Inf(1)
			}
			var list []int32
			for p := range sc.touched {
				list = append(list, int32(p))
				sc.cand[sc.touched[p]] = true
			}
			want := slices.Clone(filterRows(sc, nr, list, at, &ct, r, &hi, ft))
			wantCand := slices.Clone(sc.cand)
			clear(sc.cand)
			got := filterRows(sc, nr, nil, at, &ct, r, &hi, ft)
			if !slices.Equal(got, want) {
				t.Fatalf("%d clauses, round %d: kept rows %v, want %v", nc, round, got, want)
			}
			if !slices.Equal(sc.cand, wantCand) {
				t.Fatalf("%d clauses, round %d: marks differ from filtering the listed rows", nc, round)
			}
			if len(want) > 0 && len(want) < len(sc.touched) {
				mixed++
			}
		}
	}
	// The thresholds must both keep and drop rows for the test to test.
	if mixed < 50 {
		t.Fatalf("only %d of 100 rounds kept some rows and dropped others", mixed)
	}
}
