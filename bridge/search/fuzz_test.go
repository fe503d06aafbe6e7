package search

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// checkResult asserts the invariants every Search answer keeps, whatever
// the query: bounded hits, did-you-mean and browse lists, hits best first
// and unique.
func checkResult(t *testing.T, ix *Index, query string, limit int, res Result) {
	t.Helper()
	o := ix.Options()
	want := limit
	if want <= 0 {
		want = o.DefaultLimit
	}
	want = min(want, o.MaxLimit)
	if len(res.Hits) > want {
		t.Fatalf("%q limit %d: %d hits", query, limit, len(res.Hits))
	}
	if len(res.DidYouMean) > o.DidYouMeanMax {
		t.Fatalf("%q: %d did-you-mean", query, len(res.DidYouMean))
	}
	if len(res.Browse) > o.BrowseMax {
		t.Fatalf("%q: browse lists %d servers", query, len(res.Browse))
	}
	names := 0
	for _, st := range res.Browse {
		names += len(st.Names)
		if len(st.Names) > o.BrowsePerServer || len(st.Names) > st.Total {
			t.Fatalf("%q: browse %s has %d names of %d", query, st.Server, len(st.Names), st.Total)
		}
	}
	if names > o.BrowseMax {
		t.Fatalf("%q: browse lists %d names", query, names)
	}
	if len(res.Hits) == 0 && len(res.Browse) == 0 && ix.Len() > 0 {
		t.Fatalf("%q: neither hits nor a browse list", query)
	}
	if res.Partial && (len(res.Hits) == 0 || len(res.Browse) == 0) {
		t.Fatalf("%q: partial answer with %d hits and %d servers", query, len(res.Hits), len(res.Browse))
	}
	seen := map[string]bool{}
	for i, h := range res.Hits {
		if seen[h.ID] {
			t.Fatalf("%q: %s twice", query, h.ID)
		}
		seen[h.ID] = true
		if h.Score <= 0 || h.Score != h.Score {
			t.Fatalf("%q: hit %s has score %v", query, h.ID, h.Score)
		}
		if i > 0 && h.Score > res.Hits[i-1].Score {
			t.Fatalf("%q: hits out of order at %d", query, i)
		}
		if h.ID != h.Server+"::"+h.Name {
			t.Fatalf("%q: hit %+v is inconsistent", query, h)
		}
	}
}

func FuzzSearch(f *testing.F) {
	for _, seed := range []string{
		"", "create github issue", "creat_isue", "`read_file`", "mcp__github__create_issue",
		"github::create_issue", "查询天气", "ファイルを読む", "\x00\xff", "a" + strings.Repeat("_", 300),
		"search files ' \" ` () [] {} :: __", "ChaDri.change_drink", "🙂 emoji query",
		"screnshot of the pge and then open it", "can you help", "read a.txt; then post it, and also ~/x",
	} {
		f.Add(seed, 5)
	}
	ix := refIndex(f, Options{})
	f.Fuzz(func(t *testing.T, query string, limit int) {
		res := ix.Search(query, limit)
		checkResult(t, ix, query, limit, res)
		id, cands := ix.Resolve(query)
		if id != "" && len(cands) != 0 {
			t.Fatalf("Resolve(%q) = %q and candidates %q", query, id, cands)
		}
		if id != "" {
			if got, _ := ix.Resolve(id); got != id {
				t.Fatalf("Resolve(%q) = %q, but that id resolves to %q", query, id, got)
			}
		}
		if len(cands) > max(ix.Options().DidYouMeanMax, ix.Len()) {
			t.Fatalf("Resolve(%q): %d candidates", query, len(cands))
		}
	})
}

// FuzzIndexDocument indexes a tool with arbitrary text next to the
// reference servers and checks that the index stays consistent, the tool
// can be found by its own id, and removing it restores the index.
func FuzzIndexDocument(f *testing.F) {
	f.Add("srv", "create_issue", "Create a new issue", "owner", "Repository owner")
	f.Add("my__srv", "do__thing", "", "", "")
	f.Add("中文", "查询天气", "查询城市的天气预报", "城市", "城市名")
	f.Add("s", "`quoted`", "\x00\xff\xfe", "a.b.c", "")
	ix := refIndex(f, Options{})
	before := ix.Len()
	baseline := ix.Search("create issue", 10)
	f.Fuzz(func(t *testing.T, server, name, desc, pname, pdesc string) {
		// A prefix keeps the fuzzed server from replacing a reference one,
		// so every run starts from the same index.
		server = "fz" + server
		ix.Upsert(server, []Document{{Name: name, Description: desc, Params: []Param{{Name: pname, Description: pdesc}}}})
		defer func() {
			ix.Remove(server)
			if ix.Len() != before {
				t.Fatalf("Remove left %d tools, had %d", ix.Len(), before)
			}
			if after := ix.Search("create issue", 10); !slices.EqualFunc(after.Hits, baseline.Hits, func(a, b Hit) bool {
				return a.ID == b.ID && abs(a.Score-b.Score) < 1e-9
			}) {
				t.Fatalf("after Remove: %+v, before: %+v", after.Hits, baseline.Hits)
			}
		}()
		if name == "" {
			if ix.Len() != before {
				t.Fatalf("nameless tool was indexed")
			}
			return
		}
		id := server + "::" + name
		res := ix.Search(id, 5)
		checkResult(t, ix, id, 5, res)
		if !utf8.ValidString(id) || strings.TrimSpace(id) != id || toolid.Clean(id) != id {
			return // the exact lookup normalises such ids; invariants suffice
		}
		if !slices.ContainsFunc(res.Hits, func(h Hit) bool { return h.ID == id && h.Exact }) {
			t.Fatalf("Search(%q) lacks the exact hit: %+v", id, res.Hits)
		}
	})
}
