package search

import (
	"strings"
	"testing"
)

func TestPartialFallback(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("browser", []Document{
		{Name: "take_screenshot", Description: "Take a screenshot of the current page"},
		{Name: "navigate", Description: "Navigate to a URL"},
	})
	ix.Upsert("cli", []Document{{Name: "help", Description: "Show usage"}})
	tests := []struct {
		q    string
		want string // first hit; "" for no hit
	}{
		{"screen of the tab", "browser::take_screenshot"}, // prefix
		{"screnshot please", "browser::take_screenshot"},  // one edit
		{"navigat somewhere", "browser::navigate"},        // the term begins the word
		{"can you help", "cli::help"},                     // a stop word names a tool
		{"zzqx wvut", ""},                                 // nothing in common
		{"sc", ""},                                        // too short for a prefix
		{"take a screenshot", "browser::take_screenshot"}, // matched as written: not partial
	}
	for _, tc := range tests {
		res := ix.Search(tc.q, 5)
		got := ""
		if len(res.Hits) > 0 {
			got = res.Hits[0].ID
		}
		if got != tc.want {
			t.Errorf("Search(%q) first = %q, want %q", tc.q, got, tc.want)
		}
		wantPartial := tc.want != "" && !strings.HasPrefix(tc.q, "take")
		if res.Partial != wantPartial {
			t.Errorf("Search(%q).Partial = %v, want %v", tc.q, res.Partial, wantPartial)
		}
		if (len(res.Hits) == 0 || res.Partial) && len(res.Browse) == 0 {
			t.Errorf("Search(%q): no server list with a partial or empty answer", tc.q)
		}
	}
}

// TestPartialFallbackIsNotLoose: a long misspelt word does not match a
// short term its first letters are two edits from ("scre" and "size").
func TestPartialFallbackIsNotLoose(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("disk", []Document{{Name: "list_sizes", Description: "Sizes of the disks"}})
	if res := ix.Search("screnshot zzqx", 5); len(res.Hits) != 0 {
		t.Errorf("screnshot matched %v", res.Hits)
	}
	if res := ix.Search("sizse zzqx", 5); len(res.Hits) != 1 || !res.Partial {
		t.Errorf("sizse: %+v, want list_sizes as a partial match", res)
	}
}

// TestNeverEmpty checks the promise of issue #17 on the reference and demo
// servers: a request that shares a meaningful word with some tool, or a
// one-letter misspelling of one, gets at least one hit, even wrapped in
// words no tool has.
func TestNeverEmpty(t *testing.T) {
	ix, _ := loadDataset(t, datasets[3], Options{})
	an := newAnalyzer()
	words := map[string]bool{}
	for _, path := range datasets[3].catalogs {
		cat, err := LoadCatalog(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cat {
			for _, d := range s.Docs {
				forEachWord(d.Name+" "+d.Title+" "+d.Description, func(w string, cjk bool) {
					if !cjk && len(an.text(nil, w, nil, false)) > 0 {
						words[strings.ToLower(w)] = true
					}
				})
			}
		}
	}
	if len(words) < 500 {
		t.Fatalf("only %d words from the catalogs", len(words))
	}
	var typos, typoMisses []string
	for w := range words {
		for _, q := range []string{w, "zzqx " + w + " wvut"} {
			if res := ix.Search(q, 5); len(res.Hits) == 0 {
				t.Errorf("Search(%q): no hits", q)
			}
		}
		if len(w) >= 6 && isASCIILetters(w) {
			typo := w[:2] + w[3:] // one letter dropped
			typos = append(typos, typo)
			if res := ix.Search("zzqx "+typo, 5); len(res.Hits) == 0 {
				typoMisses = append(typoMisses, typo)
			}
		}
	}
	// Misspellings are best effort: a dropped letter can make another
	// word ("turning" -> "tuning") that is far from every term.
	if len(typoMisses)*20 > len(typos) {
		t.Errorf("%d of %d misspelt words found nothing: %v", len(typoMisses), len(typos), typoMisses)
	}
	t.Logf("%d of %d misspelt words found nothing: %v", len(typoMisses), len(typos), typoMisses)
}
