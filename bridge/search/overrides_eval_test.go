package search

import (
	"strings"
	"testing"
)

// keywordOverrides are tools: rules' keywords a user might write for the
// reference servers after seeing these misses in the tasks set: extra
// search terms, which the gateway appends to the description text of the
// document it indexes (bridge: Tool.searchText). Nothing else changes.
var keywordOverrides = map[string][]string{
	"memory::search_nodes":          {"what do I remember about someone", "recall"},
	"memory::read_graph":            {"everything you know", "whole memory"},
	"memory::add_observations":      {"note in memory", "record a new fact"},
	"memory::open_nodes":            {"pull up entries"},
	"filesystem::list_directory":    {"show what is in a folder", "ls"},
	"filesystem::read_media_file":   {"picture", "photo", "png", "jpg"},
	"google-maps::maps_directions":  {"how do I get from", "on foot", "route"},
	"google-maps::maps_elevation":   {"how high", "above sea level", "altitude"},
	"postgres::query":               {"SQL", "SELECT", "database"},
	"slack::slack_get_user_profile": {"job title"},
}

// withKeywords indexes the dataset as loadDataset does, with the keyword
// overrides appended to their tools' descriptions.
func withKeywords(t testing.TB, ds dataset, overrides map[string][]string) *Index {
	t.Helper()
	ix := New(Options{})
	for _, path := range ds.catalogs {
		cat, err := LoadCatalog(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cat {
			for i, d := range s.Docs {
				if kw := overrides[d.ID]; len(kw) > 0 {
					s.Docs[i].Description = strings.TrimSpace(d.Description + "\n" + strings.Join(kw, ". "))
				}
			}
			ix.Upsert(s.Server, s.Docs)
		}
	}
	return ix
}

// TestKeywordOverridesLever: keywords from tools: rules flow into the index
// as document text, and on the tasks set (reference + demo servers) they
// rescue the misses they were written for, without costing other queries.
// The row is printed beside the plain one; TestRetrievalQuality (overrides
// off) is unchanged, as the ranking code is.
func TestKeywordOverridesLever(t *testing.T) {
	ds := datasets[3]
	if !strings.HasPrefix(ds.name, "tasks") {
		t.Fatalf("datasets[3] is %q, want the tasks set", ds.name)
	}
	plain, qs := loadDataset(t, ds, Options{})
	tuned := withKeywords(t, ds, keywordOverrides)
	before, after := Evaluate(plain, qs, 10), Evaluate(tuned, qs, 10)
	var table strings.Builder
	table.WriteString("\n")
	WriteTableHeader(&table)
	WriteTableRow(&table, ds.name, before)
	WriteTableRow(&table, "  with keyword overrides", after)
	t.Log(table.String())
	if after.Recall5 <= before.Recall5 || after.Hit5 < before.Hit5 {
		t.Errorf("keyword overrides: Recall@5 %.3f -> %.3f, Hit@5 %.3f -> %.3f; want better", before.Recall5, after.Recall5, before.Hit5, after.Hit5)
	}
	// Each query those keywords were written for now finds its tool.
	for _, c := range []struct{ query, want string }{
		{"how high above sea level is Denver", "google-maps::maps_elevation"},
		{"show me the picture logo.png", "filesystem::read_media_file"},
		{"run SELECT * FROM orders LIMIT 10 on the database", "postgres::query"},
		{"what's Maria's job title on slack", "slack::slack_get_user_profile"},
	} {
		in := func(ix *Index) bool {
			for _, h := range ix.Search(c.query, 5).Hits {
				if h.ID == c.want {
					return true
				}
			}
			return false
		}
		if in(plain) {
			t.Errorf("%q already finds %s without keywords: not a test of the lever", c.query, c.want)
		}
		if !in(tuned) {
			t.Errorf("%q: %s not in the top 5 with its keywords", c.query, c.want)
		}
	}
}
