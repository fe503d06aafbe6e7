package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// diffLimits are the limits the differential tests ask for: the small
// ones tool_search uses and one larger than any catalog here, which
// leaves nothing to prune on the limit alone.
var diffLimits = []int{1, 5, 10, 50, 1 << 16}

// diffQueries returns every distinct query of the retrieval sets and the
// keyword queries, plus the misspelt, exact-name and empty queries of the
// benchmark mix and a few odd shapes.
func diffQueries(tb testing.TB) []string {
	tb.Helper()
	seen := map[string]bool{}
	var qs []string
	add := func(q string) {
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	for _, p := range []string{"testdata/bfcl/queries.jsonl", "testdata/metatool/queries.jsonl", "testdata/keyword-queries.jsonl"} {
		all, err := LoadQueries(p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, q := range all {
			add(q.Query)
		}
	}
	for _, q := range benchQueries(tb) {
		add(q)
	}
	for _, q := range []string{
		"creat_isue", "slack_post_mesage", "github::create_issue", "read_file", "`read_file`",
		"get", "file", "get get get", "list files in a directory", "zzqx wvvy", "the of and",
		"查询天气", "search", "create new entities", "server-00001::read_file",
	} {
		add(q)
	}
	return qs
}

// sameResult reports the first difference between got and want, or "".
// Scores are compared with ==: the pruned scorer must add the same
// numbers in the same order as the reference.
func sameResult(got, want Result) string {
	if len(got.Hits) != len(want.Hits) {
		return fmt.Sprintf("%d hits, want %d:\ngot  %+v\nwant %+v", len(got.Hits), len(want.Hits), got.Hits, want.Hits)
	}
	for i := range got.Hits {
		if got.Hits[i] != want.Hits[i] {
			return fmt.Sprintf("hit %d = %+v, want %+v", i, got.Hits[i], want.Hits[i])
		}
	}
	if !slices.Equal(got.DidYouMean, want.DidYouMean) {
		return fmt.Sprintf("did-you-mean %q, want %q", got.DidYouMean, want.DidYouMean)
	}
	if !slices.EqualFunc(got.Browse, want.Browse, func(a, b ServerTools) bool {
		return a.Server == b.Server && a.Total == b.Total && slices.Equal(a.Names, b.Names)
	}) {
		return fmt.Sprintf("browse differs: %d servers, want %d", len(got.Browse), len(want.Browse))
	}
	return ""
}

// checkAgainstRef runs every query at every limit through Search and the
// reference scorer and fails on the first difference.
func checkAgainstRef(t *testing.T, ix *Index, qs []string, limits []int) {
	t.Helper()
	fails := 0
	for _, q := range qs {
		want := ix.searchRefLimits(q, limits)
		for i, limit := range limits {
			if d := sameResult(ix.Search(q, limit), want[i]); d != "" {
				t.Errorf("Search(%q, %d): %s", q, limit, d)
				if fails++; fails == 10 {
					t.FailNow()
				}
			}
		}
	}
}

// TestPrunedMatchesReference compares Search with the exhaustive scorer on
// every test query (about 23,000), at several catalog sizes and limits.
// Under the race detector or -short, the 10,000-tool catalog gets every
// eighth query: all of them take minutes there.
func TestPrunedMatchesReference(t *testing.T) {
	qs := diffQueries(t)
	for _, n := range []int{100, 1000, 10000} {
		t.Run(fmt.Sprintf("tools=%d", n), func(t *testing.T) {
			ix := New(Options{MaxLimit: 1 << 16})
			ix.UpsertAll(synthCatalog(t, n))
			checkIndex(t, ix)
			qs := qs
			if n >= 10000 && (raceEnabled || testing.Short()) {
				qs = every(qs, 8)
			}
			checkAgainstRef(t, ix, qs, diffLimits)
		})
	}
}

// TestPrunedMatchesReferenceAfterChurn compares Search with the reference
// on an index that servers were removed from, replaced in and added to out
// of order: chunks land in the middle of the postings, term bounds come
// from postings since removed, and the average lengths (so the norms)
// moved after the bounds were taken.
func TestPrunedMatchesReferenceAfterChurn(t *testing.T) {
	ix := churnedIndex(t, 3000)
	checkIndex(t, ix)
	checkAgainstRef(t, ix, every(diffQueries(t), sampleEvery(3)), diffLimits)
}

// churnedIndex indexes n synthetic tools, then removes, replaces and adds
// servers.
func churnedIndex(tb testing.TB, n int) *Index {
	tb.Helper()
	cat := synthCatalog(tb, n)
	ix := New(Options{MaxLimit: 1 << 16})
	ix.UpsertAll(cat)
	for i, s := range cat {
		switch {
		case i%5 == 0:
			ix.Remove(s.Server)
		case i%7 == 0:
			ix.Upsert(s.Server, cat[(i*13)%len(cat)].Docs)
		}
	}
	// Before every server, and in the middle with long descriptions that
	// raise the average lengths.
	ix.Upsert("aaa-first", syntheticDocs(1, 30))
	long := syntheticDocs(2, 40)
	for i := range long {
		long[i].Description = strings.Repeat(long[i].Description+" and more words about files ", 20)
	}
	ix.Upsert("server-00017-long", long)
	ix.UpsertAll([]ServerDocs{{Server: "zzz-last", Docs: syntheticDocs(3, 25)}, {Server: "server-00003", Docs: cat[4].Docs}})
	return ix
}

// sampleEvery returns n, or 4n under the race detector or -short.
func sampleEvery(n int) int {
	if raceEnabled || testing.Short() {
		return 4 * n
	}
	return n
}

// every returns every n-th of qs.
func every(qs []string, n int) []string {
	var out []string
	for i := 0; i < len(qs); i += n {
		out = append(out, qs[i])
	}
	return out
}

// checkIndex checks the layout the pruned scorer relies on: each term's
// chunks follow the segments' order with consistent offsets, so its
// postings are sorted by index-wide document number, and its bound covers
// every posting.
func checkIndex(t *testing.T, ix *Index) {
	t.Helper()
	for term, e := range ix.terms {
		off, last := 0, -1
		for _, c := range e.chunks {
			if int(c.off) != off || c.n <= 0 {
				t.Fatalf("%q: chunk of %s at %d+%d, want offset %d", term, c.seg.server, c.off, c.n, off)
			}
			for _, p := range e.post[c.off : c.off+c.n] {
				g := c.seg.base + int(p.doc)
				if g <= last || int(p.doc) >= len(c.seg.docs) {
					t.Fatalf("%q: document %d after %d", term, g, last)
				}
				last = g
				m := &c.seg.meta[p.doc]
				for f := range numFields {
					if p.fields&(1<<f) == 0 {
						continue
					}
					if e.bound.fields&(1<<f) == 0 || p.tf[f] > e.bound.maxTF[f] || m.lenq[f] < e.bound.minLen[f] {
						t.Fatalf("%q: posting of %s field %d (tf %d, length %d) outside bound %+v", term, c.seg.docs[p.doc].id, f, p.tf[f], m.lenq[f], e.bound)
					}
				}
			}
			off += int(c.n)
		}
		if off != len(e.post) || e.df != len(e.post) {
			t.Fatalf("%q: chunks cover %d postings of %d, df %d", term, off, len(e.post), e.df)
		}
	}
}

// TestPrunedMatchesReferenceOptions compares Search with the reference
// under options that change what the bounds must cover: no cutoff, no
// name-coverage boost or a large one, no synonyms, other saturation and
// length normalisation, a field switched off, and an exact-name bonus too
// small to put exact names first.
func TestPrunedMatchesReferenceOptions(t *testing.T) {
	cat := synthCatalog(t, 1000)
	qs := every(diffQueries(t), sampleEvery(4))
	qs = append(qs, "creat_isue", "slack_post_mesage", "github::create_issue", "read_file", "get", "file")
	full := func(o Options) Options {
		o.MaxLimit = 1 << 16
		return o
	}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"cutoff=off", Options{Cutoff: -1}},
		{"cutoff=1", Options{Cutoff: 1}},
		{"namecoverage=off", Options{NameCoverage: -1}},
		{"namecoverage=3", Options{NameCoverage: 3}},
		{"synonyms=off", Options{SynonymWeight: -1}},
		{"synonyms=1", Options{SynonymWeight: 1}},
		{"k1=0.1", Options{K1: 0.1}},
		{"k1=8", Options{K1: 8}},
		{"b=1", func() (o Options) {
			for f := range o.Fields {
				o.Fields[f].B = 1
			}
			return o
		}()},
		{"b=off/weights", func() (o Options) {
			for f := range o.Fields {
				o.Fields[f] = FieldParams{Weight: float64(f + 1), B: -1}
			}
			o.Fields[FieldDescription].Weight = -1 // off
			return o
		}()},
		{"exactbonus=tiny", Options{ExactBonus: 1e-3, Cutoff: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(full(tc.opts))
			ix.UpsertAll(cat)
			checkAgainstRef(t, ix, qs, diffLimits)
		})
	}
}

// TestPruningSkipsPostings shows that pruning happens: on 10,000 tools,
// for the keyword queries of several words and for the BFCL requests,
// Search reads (scores, or steps over while seeking) about half the
// postings their terms have (0.45 and 0.52 when written; over the
// benchmark mix 0.56 here and 0.41 on 100,000 tools); a term-at-a-time
// scorer reads them all. With
// the cutoff off and a limit above the catalog's size nothing can be
// pruned, and it reads each posting exactly once.
func TestPruningSkipsPostings(t *testing.T) {
	cat := synthCatalog(t, 10000)
	ix := New(Options{MaxLimit: 1 << 16})
	ix.UpsertAll(cat)
	all := New(Options{MaxLimit: 1 << 16, Cutoff: -1})
	all.UpsertAll(cat)
	postings := func(q string) int {
		n := 0
		for _, g := range ix.parseQuery(q) {
			for _, a := range g.alts {
				if e := ix.terms[a.term]; e != nil {
					n += len(e.post)
				}
			}
		}
		return n
	}
	for _, p := range []string{"testdata/keyword-queries.jsonl", "testdata/bfcl/queries.jsonl"} {
		qs, err := LoadQueries(p)
		if err != nil {
			t.Fatal(err)
		}
		var read, total, queries int
		for _, q := range every(queryTexts(qs), max(1, len(qs)/300)) {
			if len(strings.Fields(q)) < 2 {
				continue
			}
			queries++
			n := postings(q)
			_, v := ix.search(q, 10)
			read += v
			total += n
			if _, v := all.search(q, 1<<16); v != n {
				t.Errorf("%q, nothing to prune: read %d postings of %d", q, v, n)
			}
		}
		if queries < 30 || total < 10*queries {
			t.Fatalf("%s: %d queries with %d postings: not enough to measure", p, queries, total)
		}
		t.Logf("%s: %d queries read %d of %d postings (%.2f)", p, queries, read, total, float64(read)/float64(total))
		if read*5 > total*3 {
			t.Errorf("%s: read %d of %d postings, want at most 60%%", p, read, total)
		}
	}
}

// queryTexts returns the queries' texts.
func queryTexts(qs []Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Query
	}
	return out
}

// TestCursorSeek walks a term's postings with next and with seek to every
// document, from the start and in increasing steps, against a plain scan.
func TestCursorSeek(t *testing.T) {
	ix := churnedIndex(t, 2000)
	terms := []string{"file", "get", "list", "server", "weather"}
	for _, term := range terms {
		e := ix.terms[ix.an.text(nil, term, nil, false)[0]]
		if e == nil {
			t.Fatalf("%q is not indexed", term)
		}
		var docs []int
		for _, c := range e.chunks {
			for _, p := range e.post[c.off : c.off+c.n] {
				docs = append(docs, c.seg.base+int(p.doc))
			}
		}
		var c cursor
		c.reset(e, 1, 0)
		for i, d := range docs {
			if c.doc != d {
				t.Fatalf("%q: next gives %d at %d, want %d", term, c.doc, i, d)
			}
			c.next()
		}
		if c.doc != noDoc {
			t.Fatalf("%q: %d after the last posting", term, c.doc)
		}
		after := func(d int) int {
			if i, _ := slices.BinarySearch(docs, d); i < len(docs) {
				return docs[i]
			}
			return noDoc
		}
		for d := range ix.nDocs + 2 {
			c.reset(e, 1, 0)
			if c.seek(d); c.doc != after(d) {
				t.Fatalf("%q: seek(%d) from the start = %d, want %d", term, d, c.doc, after(d))
			}
		}
		for _, step := range []int{1, 3, 17, 150} {
			c.reset(e, 1, 0)
			for d := 0; d < ix.nDocs+step; d += step {
				if c.seek(d); c.doc != after(d) {
					t.Fatalf("%q: seek(%d) in steps of %d = %d, want %d", term, d, step, c.doc, after(d))
				}
			}
		}
	}
}

// TestBoundsHold checks that no posting of any query term scores above
// its cursor's bound, on a fresh index and after churn moved the norms.
func TestBoundsHold(t *testing.T) {
	for _, ix := range []*Index{refIndex(t, Options{}), churnedIndex(t, 2000)} {
		var r ranker
		for term := range ix.terms {
			r.prepare(ix, []queryGroup{{alts: []alt{{term: term, w: 1}}}})
			for ci := range r.cursors {
				c := &r.cursors[ci]
				for ; c.doc != noDoc; c.next() {
					if s, _ := c.score(r.norm, r.k1); s > c.ub {
						t.Fatalf("%q: document %d scores %v over the bound %v", term, c.doc, s, c.ub)
					}
				}
			}
		}
	}
}

// FuzzPrunedSearch builds a small index from the fuzz input, with tools
// drawn from a small vocabulary so that terms repeat, scores tie and
// servers come and go, and compares Search with the reference for the
// query, a query drawn from the vocabulary, and the limit.
func FuzzPrunedSearch(f *testing.F) {
	f.Add(uint64(1), "create github issue", 5)
	f.Add(uint64(2), "read file", 1)
	f.Add(uint64(3), "get_weather", 0)
	f.Add(uint64(4), "srv1::list_files", 1<<16)
	f.Add(uint64(5), "fetch the user's orders and update tickets", 50)
	f.Add(uint64(6), "", -3)
	f.Add(uint64(7), "creat_isue", 10)
	f.Fuzz(func(t *testing.T, seed uint64, query string, limit int) {
		rng := rand.New(rand.NewPCG(seed, seed>>32))
		ix := New(fuzzOptions(rng))
		fuzzCatalog(ix, rng)
		qs := []string{query, fuzzQuery(rng), fuzzQuery(rng) + " " + query}
		for _, q := range qs {
			if d := sameResult(ix.Search(q, limit), ix.searchRef(q, limit)); d != "" {
				t.Fatalf("Search(%q, %d) on seed %d: %s", q, limit, seed, d)
			}
		}
	})
}

// fuzzVocab is the vocabulary fuzzed tools and queries are made of: verbs
// with synonyms, nouns, and words that occur everywhere.
var fuzzVocab = strings.Fields("get fetch read list show create add new delete remove update edit search find send post " +
	"file files issue issues user order ticket message weather city repo directory image email " +
	"the a data value id name type status")

// fuzzOptions picks options from rng: mostly defaults, sometimes the
// settings that change what bounds must cover.
func fuzzOptions(rng *rand.Rand) Options {
	o := Options{MaxLimit: 1 << 16}
	pick := func(vs ...float64) float64 { return vs[rng.IntN(len(vs))] }
	o.Cutoff = pick(0, 0, -1, 0.9, 1)
	o.NameCoverage = pick(0, 0, -1, 2)
	o.SynonymWeight = pick(0, 0, -1, 1)
	o.K1 = pick(0, 0, 0.05, 5)
	o.ExactBonus = pick(0, 0, 1e-6)
	if rng.IntN(3) == 0 {
		for f := range o.Fields {
			o.Fields[f] = FieldParams{Weight: pick(0, -1, 0.5, 3), B: pick(0, -1, 1)}
		}
	}
	return o
}

// fuzzCatalog fills ix with up to eight servers of up to sixty tools, then
// replaces or removes some.
func fuzzCatalog(ix *Index, rng *rand.Rand) {
	words := func(n int, sep string) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fuzzVocab[rng.IntN(len(fuzzVocab))]
		}
		return strings.Join(w, sep)
	}
	server := func(i int) []Document {
		docs := make([]Document, 1+rng.IntN(60))
		for j := range docs {
			docs[j] = Document{
				Name:        words(1+rng.IntN(3), "_"),
				Description: words(rng.IntN(30), " "),
				Params:      []Param{{Name: words(1, "_"), Description: words(rng.IntN(8), " ")}},
			}
		}
		return docs
	}
	n := 1 + rng.IntN(8)
	for i := range n {
		ix.Upsert(fmt.Sprintf("srv%d", (i*5)%n), server(i))
	}
	for range rng.IntN(4) {
		s := fmt.Sprintf("srv%d", rng.IntN(n+2))
		if rng.IntN(2) == 0 {
			ix.Remove(s)
		} else {
			ix.Upsert(s, server(0))
		}
	}
}

// fuzzQuery draws a query of one to twelve vocabulary words.
func fuzzQuery(rng *rand.Rand) string {
	w := make([]string, 1+rng.IntN(12))
	for i := range w {
		w[i] = fuzzVocab[rng.IntN(len(fuzzVocab))]
	}
	return strings.Join(w, " ")
}
