package search

import (
	"slices"
	"testing"
)

func TestShapeOf(t *testing.T) {
	tests := []struct{ tok, want string }{
		{"https://example.com/a?b=c", shapeURL},
		{"www.example.org", shapeURL},
		{"example.com,", shapeURL},
		{"staging.example.com", shapeURL},
		{"~/notes", shapeFile},
		{"./build", shapeFile},
		{"src/main.go", shapeFile},
		{"README.md", shapeFile},
		{"signups.csv.", shapeFile},
		{"'package.json'", shapeFile},
		{"my_file-v2.txt", shapeFile},
		{"3.14159", ""},
		{"v1.2", ""},
		{"e.g.", ""},
		{"user.address.city", ""},
		{"github::create_issue", ""},
		{"1/2", ""},
		{"ChaDri.change_drink", ""},
		{"", ""},
		{"...", ""},
		{"hello", ""},
	}
	for _, tc := range tests {
		if got := shapeOf(tc.tok); got != tc.want {
			t.Errorf("shapeOf(%q) = %q, want %q", tc.tok, got, tc.want)
		}
	}
}

func TestIntentsReachToolWords(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("memory", []Document{
		{Name: "delete_entities", Description: "Delete entities from the knowledge graph"},
		{Name: "create_relations", Description: "Create relations between entities"},
	})
	ix.Upsert("files", []Document{{Name: "fork_file", Description: "Copy a file"}})
	ix.Upsert("browser", []Document{{Name: "navigate", Description: "Navigate to a URL"}})
	for q, want := range map[string]string{
		"forget a person":          "memory::delete_entities",
		"link two people":          "memory::create_relations",
		"what do you know":         "memory::delete_entities",
		"go to example.com please": "browser::navigate",
	} {
		res := ix.Search(q, 1)
		if len(res.Hits) == 0 || res.Hits[0].ID != want {
			t.Errorf("Search(%q) = %v, want %s first", q, res.Hits, want)
		}
	}
	off := New(Options{IntentWeight: -1})
	off.Upsert("memory", []Document{{Name: "delete_entities", Description: "Delete entities from the knowledge graph"}})
	if res := off.Search("forget a person", 1); len(res.Hits) != 0 {
		t.Errorf("vocabulary off: %q found %v", "forget a person", res.Hits)
	}
}

// TestParseQueryIntentGroups checks how request words reach tool words: a
// stop word with an intent gets a group of its own, a query term gets its
// meanings in its own group, and words are matched whole ("works" is not
// "working").
func TestParseQueryIntentGroups(t *testing.T) {
	ix := New(Options{})
	alts := func(q string) map[string][]string {
		out := map[string][]string{}
		for _, g := range ix.parseQuery(q) {
			for _, a := range g.alts[1:] {
				out[g.alts[0].term] = append(out[g.alts[0].term], a.term)
			}
		}
		return out
	}
	got := alts("what do you know about Alice")
	if !slices.Contains(got["know"], "entiti") || !slices.Contains(got["know"], "memori") {
		t.Errorf("know: %v", got)
	}
	got = alts("remember that Alice works at Acme")
	if len(got["work"]) != 0 || !slices.Contains(got["rememb"], "observ") {
		t.Errorf("remember ... works: %v", got)
	}
	got = alts("how many working days")
	if !slices.Contains(got["work"], "busi") {
		t.Errorf("working days: %v", got)
	}
	got = alts("open example.com")
	if !slices.Contains(got[shapeURL], "url") {
		t.Errorf("example.com: %v", got)
	}
	if got := New(Options{IntentWeight: -1}).parseQuery("forget a person"); len(got) != 2 || len(got[0].alts) != 1 {
		t.Errorf("vocabulary off: %+v", got)
	}
}
