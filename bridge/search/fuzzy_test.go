package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// oddNames are tool names that exercise fuzzy matching's corner cases:
// runes beyond ASCII (some that fold to ASCII letters), a NUL, names
// shorter than any edit band and one longer than any query.
var oddNames = []string{
	"Ünïcode_Tool", "查询天气", "查询天气预报", "ſlack_post_message", "straße_finden", "\u212Aelvin_tool",
	"nul\x00name_here", "a", "ab", "abc", "create_issue_ö", "öreate_issue", "read file",
	strings.Repeat("long_name_", 20), "ÇREATE_ISSUE", "create-issue.v2", "İstanbul_weather",
}

// fuzzyIndex is the reference servers plus a server of oddNames.
func fuzzyIndex(tb testing.TB) *Index {
	tb.Helper()
	ix := refIndex(tb, Options{})
	var docs []Document
	for _, n := range oddNames {
		docs = append(docs, Document{Name: n, Description: "odd name " + n})
	}
	ix.Upsert("odd", docs)
	return ix
}

// typos returns misspellings of name: each kind of edit at a few places,
// prefixes and suffixes (subsequence matches), and qualified forms.
func typos(name string, rng *rand.Rand) []string {
	r := []rune(name)
	if len(r) == 0 {
		return nil
	}
	at := func() int { return rng.IntN(len(r)) }
	var out []string
	for range 2 {
		i := at()
		out = append(out,
			string(slices.Delete(slices.Clone(r), i, i+1)),       // deletion
			string(slices.Insert(slices.Clone(r), i, 'x')),       // insertion
			string(slices.Replace(slices.Clone(r), i, i+1, 'q')), // substitution
		)
		if i+1 < len(r) {
			t := slices.Clone(r)
			t[i], t[i+1] = t[i+1], t[i]
			out = append(out, string(t)) // transposition
		}
	}
	i, j := at(), at()
	d := slices.Delete(slices.Clone(r), i, i+1)
	d = slices.Delete(d, min(j, len(d)), min(j+1, len(d)))
	out = append(out,
		string(d), // two edits
		string(r[:len(r)*2/3]), string(r[len(r)/3:]),
		strings.ToUpper(name), "github::"+string(d), "mcp__slack__"+name,
	)
	return out
}

// fuzzyQueries is what the equivalence tests try on ix: every name, its
// typos, the benchmark's queries and some odd strings.
func fuzzyQueries(tb testing.TB, ix *Index, perName int) []string {
	rng := rand.New(rand.NewPCG(7, 8))
	qs := []string{
		"", "x", "ab", "abc", "creat_isue", "slack_post_mesage", "`read_fiel`", "reed_file()",
		"查询天氣", "查询", "ünicode", "slack", "kelvin", "k", "\x00", "nul", "nul\x00nam",
		"straße", "strasse", "istanbul", strings.Repeat("x", 200), strings.Repeat("ab", 64),
		"gh::", "::", "mcp__", "__", "create issue", "\xff\xfe", "ﬁle_read",
	}
	qs = append(qs, benchQueries(tb)...)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, seg := range ix.order {
		for d := range seg.docs {
			if d%max(1, len(seg.docs)/perName) != 0 {
				continue
			}
			qs = append(qs, seg.docs[d].name)
			qs = append(qs, typos(seg.docs[d].name, rng)...)
		}
	}
	return qs
}

// sameFuzzy asserts that fuzzyNames and the reference matcher agree on q:
// the same tools, similarities and order.
func sameFuzzy(t *testing.T, ix *Index, q string) {
	t.Helper()
	ix.mu.RLock()
	got, want := ix.fuzzyNames(q), ix.fuzzyNamesRef(q)
	ix.mu.RUnlock()
	if !slices.Equal(got, want) {
		t.Fatalf("fuzzyNames(%q):\n got  %s\n want %s", q, fuzzyIDs(got), fuzzyIDs(want))
	}
}

func fuzzyIDs(cs []fuzzyCand) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s=%.4f ", c.ref.id(), c.sim)
	}
	return b.String()
}

func TestFuzzyNamesMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ix      func(testing.TB) *Index
		perName int
	}{
		{"reference", fuzzyIndex, 1000},
		{"synth3000", func(tb testing.TB) *Index { return buildSynth(tb, 3000) }, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := tc.ix(t)
			qs := fuzzyQueries(t, ix, tc.perName)
			matched := 0
			for _, q := range qs {
				sameFuzzy(t, ix, q)
				ix.mu.RLock()
				if len(ix.fuzzyNames(q)) > 0 {
					matched++
				}
				ix.mu.RUnlock()
			}
			// The comparison means something only if most queries match.
			if matched < len(qs)/2 {
				t.Fatalf("only %d of %d queries matched any name", matched, len(qs))
			}
		})
	}
}

func TestEditBound(t *testing.T) {
	pairs := [][2]string{
		{"creat_isue", "create_issue"}, {"craete", "create"}, {"abc", "xyz"}, {"", "abc"},
		{"héllo", "hello"}, {"kitten", "sitting"}, {"ab", "ba"}, {"查询天气", "查询天氣"},
		{"list_files", "creat_isue"}, {"aaaa", "a"}, {"abcdefghij", "klmnopqrst"},
		{"_-.!@#", "$%^&*("}, {"ſlack", "slack"}, {"a\x00b", "ab"},
	}
	for _, p := range pairs {
		a, b := newNameKey(p[0], 0), newNameKey(p[1], 0)
		var rows [3][]int
		dist := osaDistance([]rune(p[0]), []rune(p[1]), 1000, &rows)
		if lb := editBound(a.chars, b.chars); lb > dist {
			t.Errorf("editBound(%q, %q) = %d over the distance %d", p[0], p[1], lb, dist)
		}
		if int(a.runes) != utf8.RuneCountInString(p[0]) {
			t.Errorf("newNameKey(%q).runes = %d", p[0], a.runes)
		}
	}
	// The bound must also prune, or the key is useless.
	if lb := editBound(newNameKey("list_files", 0).chars, newNameKey("creat_isue", 0).chars); lb <= maxFuzzyEdits {
		t.Errorf("editBound of unrelated names = %d, prunes nothing", lb)
	}
}

// FuzzFuzzyNames checks fuzzyNames against the reference matcher for an
// arbitrary query over the reference servers, oddNames and an arbitrary
// extra name, and that the edit bound never exceeds the edit distance.
func FuzzFuzzyNames(f *testing.F) {
	f.Add("creat_isue", "create_issue")
	f.Add("查询天氣", "查询天气")
	f.Add("slack", "ſlack")
	f.Add("nul\x00x", "nul\x00xyz")
	f.Add("\xff\xfe", "\xfe\xff")
	ix := fuzzyIndex(f)
	f.Fuzz(func(t *testing.T, q, name string) {
		a, b := newNameKey(q, 0), newNameKey(name, 0)
		var rows [3][]int
		if lb, d := editBound(a.chars, b.chars), osaDistance([]rune(q), []rune(name), 1<<20, &rows); lb > d {
			t.Fatalf("editBound(%q, %q) = %d over the distance %d", q, name, lb, d)
		}
		ix.Upsert("fz", []Document{{Name: name}})
		defer ix.Remove("fz")
		sameFuzzy(t, ix, q)
	})
}
