package search

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestSplitClauses(t *testing.T) {
	tests := []struct {
		q    string
		want []string
	}{
		{"create github issue", nil},
		{"", nil},
		{"and then also", nil},
		{"read secrets.txt and give me its sha256", []string{"read secrets.txt", "give me its sha256"}},
		{"list my open PRs on github and check which ones have failing CI", []string{"list my open PRs on github", "check which ones have failing CI"}},
		// Commas do not split: "Seoul, South Korea" is one place.
		{"weather in Seoul, South Korea", nil},
		{"find the repo; then fork it", []string{"find the repo", "fork it"}},
		{"Review PR 42: look at the files, then approve it. Merge it!", []string{"Review PR 42", "look at the files,", "approve it", "Merge it"}},
		// Dots and colons inside words do not split.
		{"open example.com and call github::create_issue", []string{"open example.com", "call github::create_issue"}},
		{"round 3.14159 then print it", []string{"round 3.14159", "print it"}},
		// A piece without a letter joins the clause before it.
		{"mean of these numbers:\n4\n8\n15 and plot them", []string{"mean of these numbers 4 8 15", "plot them"}},
		// Conjunctions are whole words, in any case.
		{"Android band AND brandy", []string{"Android band", "brandy"}},
		{"sand thenar", nil},
		// Up to maxPieces pieces; parseRequest merges them to maxClauses.
		{"a1 and b2 and c3 and d4 and e5 and f6 and g7 and h8", []string{"a1", "b2", "c3", "d4", "e5", "f6", "g7", "h8"}},
		// Past maxPieces, the rest joins the last piece.
		{strings.Repeat("x and ", maxPieces) + "y", append(slices.Repeat([]string{"x"}, maxPieces-1), "x y")},
	}
	for _, tc := range tests {
		if got := splitClauses(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("splitClauses(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// checkClauses asserts what splitClauses promises for any input.
func checkClauses(t *testing.T, q string, got []string) {
	t.Helper()
	if got == nil {
		return
	}
	if len(got) < 2 || len(got) > maxPieces {
		t.Fatalf("splitClauses(%q): %d clauses", q, len(got))
	}
	for _, c := range got {
		if c == "" || c != strings.TrimSpace(c) {
			t.Fatalf("splitClauses(%q): clause %q", q, c)
		}
		if !strings.ContainsFunc(c, unicode.IsLetter) && c != got[0] {
			t.Fatalf("splitClauses(%q): clause %q has no letter", q, c)
		}
	}
}

func FuzzSplitClauses(f *testing.F) {
	for _, s := range []string{
		"read secrets.txt and give me its sha256",
		"Review PR 42: look at the files, then approve it. Merge it!",
		"a and b and c and d and e and f and g and h",
		"1. clone the repo\n2. analyse it\n3. push",
		"ünïcödé and 漢字 then ÄND",
		"and", ":", ". . .", "x:\n", "\xff and \xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		checkClauses(t, q, splitClauses(q))
	})
}

// TestSplitRequestRanksEachClause checks that a request for two tools of
// different servers gets both near the top, and that a request split into
// clauses ranks a one-clause request the same as before.
func TestSplitRequestRanksEachClause(t *testing.T) {
	ix := New(Options{})
	ix.Upsert("files", []Document{
		{Name: "read_file", Description: "Read the contents of a file"},
		{Name: "write_file", Description: "Write a file"},
		{Name: "list_directory", Description: "List a directory"},
	})
	ix.Upsert("chat", []Document{
		{Name: "post_message", Description: "Post a message to a channel"},
		{Name: "read_channel", Description: "Read the messages of a channel"},
		{Name: "list_channels", Description: "List the channels"},
	})
	res := ix.Search("read the file report.txt and post a message to the team channel", 2)
	var ids []string
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	if want := []string{"chat::post_message", "files::read_file"}; !slices.Equal(ids, want) {
		t.Errorf("top 2 = %v, want %v", ids, want)
	}
	off := New(Options{ClauseWeight: -1})
	off.Upsert("files", []Document{{Name: "read_file", Description: "Read a file"}})
	if a, b := ix.Search("read a file", 1), off.Search("read a file", 1); len(a.Hits) != 1 || len(b.Hits) != 1 || a.Hits[0].ID != b.Hits[0].ID {
		t.Errorf("one-clause request: %v vs %v", a.Hits, b.Hits)
	}
}

func TestMergePieces(t *testing.T) {
	tests := []struct {
		name   string
		pieces [][]int
		n      int
		want   [][]int
	}{
		{"nil", nil, 6, nil},
		{"one piece", [][]int{{0, 1}}, 6, [][]int{{0, 1}}},
		{"under the bound", [][]int{{0}, {1}, {2}}, 3, [][]int{{0}, {1}, {2}}},
		// An aside of one term joins its smaller neighbour; the steps stay.
		{"aside", [][]int{{0, 1, 2}, {3}, {4, 5, 6}, {7, 8}}, 3, [][]int{{0, 1, 2}, {3, 4, 5, 6}, {7, 8}}},
		{"first piece small", [][]int{{0}, {1, 2}, {3, 4, 5}}, 2, [][]int{{0, 1, 2}, {3, 4, 5}}},
		// Ties go to the later pair, as joining the tail did.
		{"tie", [][]int{{0}, {1}, {2}, {3}}, 3, [][]int{{0}, {1}, {2, 3}}},
		{"down to one", [][]int{{0}, {1}, {2}}, 1, [][]int{{0, 1, 2}}},
		{"bound zero means one", [][]int{{0}, {1}}, 0, [][]int{{0, 1}}},
	}
	for _, tc := range tests {
		got, _ := mergePieces(tc.pieces, nil, tc.n)
		if !slices.EqualFunc(got, tc.want, slices.Equal[[]int]) {
			t.Errorf("%s: mergePieces(%v, %d) = %v, want %v", tc.name, tc.pieces, tc.n, got, tc.want)
		}
	}
}

// TestLongRequestKeepsStepsApart checks that a request of more pieces
// than maxClauses puts its steps in different clauses, rather than
// every piece past the sixth into the last clause.
func TestLongRequestKeepsStepsApart(t *testing.T) {
	ix := New(Options{})
	q := "Hi. I am a teacher. I have a class. It is big. Today is Monday. " +
		"First calculate the triangle area from base and height. " +
		"Then convert the temperature from Celsius to Fahrenheit. " +
		"Finally translate the greeting from English to Spanish."
	groups, n := ix.parseRequest(q)
	if n < 3 {
		t.Fatalf("parseRequest: %d clauses, want at least 3", n)
	}
	clauseOf := func(term string) uint8 {
		for _, g := range groups {
			if g.alts[0].term == ix.an.term(term, nil, false) {
				return g.clauses
			}
		}
		t.Fatalf("no group for %q", term)
		return 0
	}
	tri, temp, tr := clauseOf("triangle"), clauseOf("temperature"), clauseOf("translate")
	if tri&temp != 0 || temp&tr != 0 || tri&tr != 0 {
		t.Errorf("steps share a clause: triangle %b, temperature %b, translate %b", tri, temp, tr)
	}
}
