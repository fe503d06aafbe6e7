package search

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// refIndex indexes the 13 MCP reference servers (99 real tools).
func refIndex(t testing.TB, opts Options) *Index {
	t.Helper()
	cat, err := LoadCatalog("testdata/reference-servers/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	ix := New(opts)
	for _, s := range cat {
		ix.Upsert(s.Server, s.Docs)
	}
	return ix
}

func hitIDs(hits []Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

func TestExactNameRanksFirst(t *testing.T) {
	ix := refIndex(t, Options{})
	tests := []struct {
		query string
		want  []string // the exact hits at the top, in any order
	}{
		{"github::create_issue", []string{"github::create_issue"}},
		{"GitHub::Create_Issue", []string{"github::create_issue"}},
		{"`read_file`", []string{"filesystem::read_file"}},
		{`"slack_post_message"`, []string{"slack::slack_post_message"}},
		{"'echo'", []string{"everything::echo"}},
		{"mcp__github__create_issue", []string{"github::create_issue"}},
		{"gitlab__create_issue", []string{"gitlab::create_issue"}},
		{"MAPS_GEOCODE", []string{"google-maps::maps_geocode"}},
		{"  query  ", []string{"postgres::query"}},
		{"get-sum", []string{"everything::get-sum"}},
		{"read_graph()", []string{"memory::read_graph"}},
		// A bare name on two servers: both are exact.
		{"create_issue", []string{"github::create_issue", "gitlab::create_issue"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res := ix.Search(tt.query, 5)
			if len(res.Hits) < len(tt.want) {
				t.Fatalf("hits %q, want %q first", hitIDs(res.Hits), tt.want)
			}
			for i, h := range res.Hits[:len(tt.want)] {
				if !slices.Contains(tt.want, h.ID) || !h.Exact {
					t.Fatalf("hit %d = %+v, want exact one of %q (hits %q)", i, h, tt.want, hitIDs(res.Hits))
				}
			}
			for _, h := range res.Hits[len(tt.want):] {
				if h.Exact {
					t.Errorf("extra exact hit %s", h.ID)
				}
			}
		})
	}
}

func TestFuzzyNames(t *testing.T) {
	ix := refIndex(t, Options{})
	tests := []struct {
		query   string
		want    string // must be the top hit
		alsoDYM bool   // and listed in DidYouMean
	}{
		{"creat_isue", "github::create_issue", true},
		{"slack_post_mesage", "slack::slack_post_message", true},
		{"puppeteer_screensot", "puppeteer::puppeteer_screenshot", true},
		{"raed_file", "filesystem::read_file", true},
		{"list_direcotry", "filesystem::list_directory", true},
		{"github::creat_issue", "github::create_issue", true},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res := ix.Search(tt.query, 5)
			if len(res.Hits) == 0 || res.Hits[0].ID != tt.want {
				t.Fatalf("hits %q, want %s first", hitIDs(res.Hits), tt.want)
			}
			if !res.Hits[0].Fuzzy {
				t.Errorf("top hit not marked fuzzy: %+v", res.Hits[0])
			}
			if tt.alsoDYM && !slices.Contains(res.DidYouMean, tt.want) {
				t.Errorf("DidYouMean %q lacks %s", res.DidYouMean, tt.want)
			}
		})
	}
}

func TestKeywordQueries(t *testing.T) {
	ix := refIndex(t, Options{})
	tests := []struct{ query, want string }{
		{"create github issue", "github::create_issue"},
		{"create gitlab issue", "gitlab::create_issue"},
		{"post slack message", "slack::slack_post_message"},
		{"take a screenshot", "puppeteer::puppeteer_screenshot"},
		{"fetch file contents from github", "github::get_file_contents"},
		{"remove knowledge graph entities", "memory::delete_entities"},
	}
	for _, tt := range tests {
		res := ix.Search(tt.query, 5)
		if len(res.Hits) == 0 || res.Hits[0].ID != tt.want {
			t.Errorf("Search(%q) = %q, want %s first", tt.query, hitIDs(res.Hits), tt.want)
		}
	}
}

func TestCutoff(t *testing.T) {
	for _, cut := range []float64{0.1, 0.3, 0.6, 0.9} {
		// The floor is a fraction of the best score before feedback, which
		// the hits show only with feedback off (TestFeedbackKeepsCutoff).
		ix := refIndex(t, Options{Cutoff: cut, FeedbackWeight: -1})
		for _, q := range []string{"file", "pull request", "search", "create new entities"} {
			res := ix.Search(q, 20)
			if len(res.Hits) == 0 {
				t.Fatalf("cutoff %v: %q found nothing", cut, q)
			}
			best := res.Hits[0].Score
			for _, h := range res.Hits {
				if h.Score < cut*best-1e-9 {
					t.Errorf("cutoff %v: %q kept %s at %.3f < %.3f x %.3f", cut, q, h.ID, h.Score, cut, best)
				}
			}
		}
	}
	// The cutoff really drops something: without it the same query fills
	// the limit.
	off := refIndex(t, Options{Cutoff: -1}).Search("file", 20)
	on := refIndex(t, Options{Cutoff: 0.9}).Search("file", 20)
	if len(off.Hits) != 20 || len(on.Hits) >= len(off.Hits) {
		t.Errorf("cutoff off: %d hits, 0.9: %d hits; want 20 and fewer", len(off.Hits), len(on.Hits))
	}
}

func TestLimit(t *testing.T) {
	ix := refIndex(t, Options{Cutoff: -1})
	tests := []struct{ limit, want int }{
		{-3, 5}, {0, 5}, {1, 1}, {7, 7}, {20, 20}, {21, 20}, {1000, 20},
	}
	for _, tt := range tests {
		if got := len(ix.Search("file", tt.limit).Hits); got != tt.want {
			t.Errorf("limit %d: %d hits, want %d", tt.limit, got, tt.want)
		}
	}
}

func TestEmptyQueryBrowses(t *testing.T) {
	ix := refIndex(t, Options{})
	for _, q := range []string{"", "   ", "\t\n"} {
		res := ix.Search(q, 5)
		if len(res.Hits) != 0 || len(res.DidYouMean) != 0 {
			t.Fatalf("%q: hits %q dym %q, want none", q, hitIDs(res.Hits), res.DidYouMean)
		}
		if len(res.Browse) != 13 {
			t.Fatalf("%q: browse lists %d servers, want 13", q, len(res.Browse))
		}
		total := 0
		for _, st := range res.Browse {
			total += st.Total
			if len(st.Names) == 0 || len(st.Names) > st.Total {
				t.Errorf("%s: %d names of %d", st.Server, len(st.Names), st.Total)
			}
		}
		if total != ix.Len() {
			t.Errorf("browse totals %d, index has %d", total, ix.Len())
		}
		if !slices.IsSortedFunc(res.Browse, func(a, b ServerTools) int { return strings.Compare(a.Server, b.Server) }) {
			t.Errorf("browse not sorted by server")
		}
	}
}

func TestNoMatch(t *testing.T) {
	ix := refIndex(t, Options{})
	for _, q := range []string{"zzqx wvvy", "!!!", "the of and", "ξψω"} {
		res := ix.Search(q, 5)
		if len(res.Hits) != 0 {
			t.Errorf("%q: unexpected hits %q", q, hitIDs(res.Hits))
		}
		if len(res.Browse) == 0 {
			t.Errorf("%q: no browse list to refine from", q)
		}
	}
}

func TestBrowseIsBounded(t *testing.T) {
	ix := New(Options{BrowseMax: 50, BrowsePerServer: 10})
	for s := range 80 {
		ix.Upsert(fmt.Sprintf("srv%02d", s), syntheticDocs(s, 40))
	}
	res := ix.Search("", 5)
	names := 0
	for _, st := range res.Browse {
		names += len(st.Names)
		if st.Total != 40 {
			t.Errorf("%s total %d, want 40", st.Server, st.Total)
		}
	}
	if names > 50 || len(res.Browse) > 50 || len(res.Browse) == 0 {
		t.Errorf("browse: %d servers, %d names; want <= 50 each and some", len(res.Browse), names)
	}
}

// syntheticDocs makes n distinct tools for server number s.
func syntheticDocs(s, n int) []Document {
	verbs := []string{"get", "list", "create", "update", "delete", "search"}
	nouns := []string{"issue", "file", "user", "message", "order", "invoice", "ticket"}
	docs := make([]Document, n)
	for i := range docs {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		docs[i] = Document{
			Name:        fmt.Sprintf("%s_%s_%d", v, o, i),
			Description: fmt.Sprintf("%s a %s in system %d", v, o, s),
			Params:      []Param{{Name: o + "_id", Description: "The " + o + " identifier"}},
		}
	}
	return docs
}

func TestUpsertReplacesAndRemoveDrops(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("a", []Document{{Name: "alpha_tool", Description: "frobnicate widgets"}})
	ix.Upsert("b", []Document{{Name: "beta_tool", Description: "polish gadgets"}})
	if ix.Len() != 2 {
		t.Fatalf("Len %d, want 2", ix.Len())
	}
	if got := hitIDs(ix.Search("frobnicate", 5).Hits); !slices.Equal(got, []string{"a::alpha_tool"}) {
		t.Fatalf("before replace: %q", got)
	}
	segB := ix.segs["b"]
	ix.Upsert("a", []Document{{Name: "gamma_tool", Description: "frobnicate sprockets"}})
	if ix.segs["b"] != segB {
		t.Error("replacing server a rebuilt server b's segment")
	}
	if got := hitIDs(ix.Search("frobnicate", 5).Hits); !slices.Equal(got, []string{"a::gamma_tool"}) {
		t.Fatalf("after replace: %q", got)
	}
	if id, _ := ix.Resolve("alpha_tool"); id != "" {
		t.Errorf("replaced tool still resolves to %q", id)
	}
	ix.Remove("a")
	ix.Remove("a") // twice is harmless
	ix.Remove("nope")
	if ix.Len() != 1 || len(ix.Search("frobnicate", 5).Hits) != 0 {
		t.Fatalf("after remove: Len %d, hits %q", ix.Len(), hitIDs(ix.Search("frobnicate", 5).Hits))
	}
	ix.Upsert("b", nil)
	if ix.Len() != 0 || len(ix.terms) != 0 || len(ix.names) != 0 || len(ix.ids) != 0 {
		t.Fatalf("empty index keeps state: len %d terms %d names %d ids %d", ix.Len(), len(ix.terms), len(ix.names), len(ix.ids))
	}
	if res := ix.Search("anything", 5); len(res.Hits) != 0 || len(res.Browse) != 0 {
		t.Errorf("empty index answered %+v", res)
	}
}

func TestUpsertSkipsBadDocuments(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("s", []Document{
		{Name: ""},
		{Name: "dup", Description: "first"},
		{Name: "dup", Description: "second"},
		{Name: "ok", Server: "someone-else"},
	})
	if ix.Len() != 2 {
		t.Fatalf("Len %d, want 2", ix.Len())
	}
	if id, _ := ix.Resolve("ok"); id != "s::ok" {
		t.Errorf("Resolve(ok) = %q, want s::ok (the upsert's server wins)", id)
	}
	if hits := ix.Search("second", 5).Hits; len(hits) != 0 {
		t.Errorf("the repeated name replaced the first: %q", hitIDs(hits))
	}
}

// TestIncrementalEqualsFresh checks that adding, replacing and removing
// servers one at a time leaves the same index as building it fresh.
func TestIncrementalEqualsFresh(t *testing.T) {
	cat, err := LoadCatalog("testdata/reference-servers/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	inc := New(Options{})
	for _, s := range cat {
		inc.Upsert(s.Server, syntheticDocs(len(s.Server), 7)) // placeholder
	}
	for i := len(cat) - 1; i >= 0; i-- {
		inc.Upsert(cat[i].Server, cat[i].Docs) // replace
	}
	inc.Upsert("extra", syntheticDocs(1, 30))
	inc.Remove("extra")
	fresh := refIndex(t, Options{})
	for _, q := range []string{"create issue", "read file", "search", "knowledge graph", "slack", "", "creat_isue", "zzz"} {
		a, b := inc.Search(q, 10), fresh.Search(q, 10)
		if len(a.Hits) != len(b.Hits) {
			t.Fatalf("%q: incremental %q, fresh %q", q, hitIDs(a.Hits), hitIDs(b.Hits))
		}
		for i := range a.Hits {
			if a.Hits[i].ID != b.Hits[i].ID || abs(a.Hits[i].Score-b.Hits[i].Score) > 1e-9 {
				t.Fatalf("%q hit %d: incremental %+v, fresh %+v", q, i, a.Hits[i], b.Hits[i])
			}
		}
		if !slices.Equal(a.DidYouMean, b.DidYouMean) {
			t.Errorf("%q: did-you-mean %q vs %q", q, a.DidYouMean, b.DidYouMean)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestConcurrentUse runs searches and resolutions while servers come and
// go; run with -race.
func TestConcurrentUse(t *testing.T) {
	ix := refIndex(t, Options{})
	var wg sync.WaitGroup
	queries := []string{"create issue", "read file", "", "creat_isue", "github::create_issue", "zzz", "查询天气"}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				q := queries[(i+w)%len(queries)]
				res := ix.Search(q, 10)
				if len(res.Hits) > 10 {
					t.Errorf("%d hits over limit", len(res.Hits))
					return
				}
				ix.Resolve(q)
				ix.Len()
			}
		}()
	}
	for w := range 2 { // two writers: segment builds run concurrently too
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				name := fmt.Sprintf("churn%d-%d", w, i%3)
				ix.Upsert(name, syntheticDocs(i, 20))
				if i%2 == 0 {
					ix.Remove(name)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ix.UpsertAll([]ServerDocs{{Server: "bulk1", Docs: syntheticDocs(1, 30)}, {Server: "bulk2", Docs: syntheticDocs(2, 30)}})
	}()
	wg.Wait()
	if res := ix.Search("github::create_issue", 1); len(res.Hits) != 1 || !res.Hits[0].Exact {
		t.Errorf("after churn: %+v", res)
	}
}

func TestLongQueryIsTruncated(t *testing.T) {
	ix := refIndex(t, Options{MaxQueryBytes: 64})
	long := "create github issue " + strings.Repeat("lorem ipsum dolor ", 10000)
	res := ix.Search(long, 5)
	if len(res.Hits) == 0 || res.Hits[0].ID != "github::create_issue" {
		t.Errorf("long query: %q", hitIDs(res.Hits))
	}
	// Truncation never splits a rune.
	if got := truncate("aé", 2); got != "a" {
		t.Errorf("truncate split a rune: %q", got)
	}
}

func TestCJKIsSearchable(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("cn", []Document{
		{Name: "get_weather", Description: "查询城市的天气预报"},
		{Name: "create_ticket", Description: "创建一个新的工单"},
		{Name: "list_orders", Description: "列出所有订单"},
	})
	tests := []struct{ q, want string }{
		{"天气", "cn::get_weather"},
		{"帮我查询上海的天气", "cn::get_weather"},
		{"创建工单", "cn::create_ticket"},
		{"订单", "cn::list_orders"},
	}
	for _, tt := range tests {
		if hits := ix.Search(tt.q, 3).Hits; len(hits) == 0 || hits[0].ID != tt.want {
			t.Errorf("Search(%q) = %q, want %s first", tt.q, hitIDs(hits), tt.want)
		}
	}
}

func TestUpsertAllEqualsUpserts(t *testing.T) {
	cat, err := LoadCatalog("testdata/reference-servers/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	bulk := New(Options{})
	bulk.Upsert("stale", syntheticDocs(0, 5))
	bulk.Upsert("github", syntheticDocs(1, 5)) // replaced by the bulk load
	bulk.UpsertAll(append(cat, ServerDocs{Server: "stale"}))
	one := refIndex(t, Options{})
	if bulk.Len() != one.Len() || slices.Contains(bulk.Servers(), "stale") {
		t.Fatalf("bulk: %d tools, servers %q; one by one: %d", bulk.Len(), bulk.Servers(), one.Len())
	}
	for _, q := range []string{"create issue", "read file", "creat_isue", "slack message", ""} {
		a, b := bulk.Search(q, 10), one.Search(q, 10)
		if !slices.EqualFunc(a.Hits, b.Hits, func(x, y Hit) bool { return x.ID == y.ID && abs(x.Score-y.Score) < 1e-9 }) {
			t.Errorf("%q: bulk %q, one by one %q", q, hitIDs(a.Hits), hitIDs(b.Hits))
		}
	}
	New(Options{}).UpsertAll(nil) // nothing to do is fine
}

func TestLengthBuckets(t *testing.T) {
	prev := -1
	for n := range 100000 {
		b := int(lengthBucket(n))
		if b < prev {
			t.Fatalf("bucket(%d) = %d < bucket(%d) = %d", n, b, n-1, prev)
		}
		prev = b
		if n < exactLenBuckets && bucketLengths[b] != float64(n) {
			t.Fatalf("short length %d maps to %v", n, bucketLengths[b])
		}
		if n >= exactLenBuckets && n < 20000 {
			if rel := bucketLengths[b] / float64(n); rel < 0.97 || rel > 1.03 {
				t.Fatalf("length %d maps to %v (%.3f)", n, bucketLengths[b], rel)
			}
		}
	}
}
