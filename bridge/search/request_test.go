package search

import (
	"slices"
	"strings"
	"testing"
)

// TestRead checks what Read tells a ranker of a request: its terms and
// the clauses Search scores apart, the same as parseRequest's.
func TestRead(t *testing.T) {
	ix := New(Options{})
	long := strings.Repeat("calculate the triangle area, then ", 40)
	tests := []struct {
		name    string
		query   string
		terms   int // -1: not checked
		clauses []string
	}{
		{"empty", "", 0, nil},
		{"blank", " \n\t ", 0, nil},
		{"stop words only", "the and of", 0, nil},
		{"one clause", "read the file", 2, nil},
		{"two clauses", "read the file and send an email", 4, []string{"read the file", "send an email"}},
		// A piece without a term is no clause.
		{"termless piece", "read the file, and then", 2, nil},
		// Seven pieces merge down to six clauses, the smallest pair first.
		{"merged", "a1 b1; c1; d1; e1; f1; g1 h1 i1", -1, []string{"a1 b1", "c1", "d1", "e1", "f1", "g1 h1 i1"}},
		// Too long a request is not split.
		{"too long to split", long + uniqueWords(70), -1, nil},
		{"invalid utf-8", "read \xff file and send mail", 4, []string{"read \xff file", "send mail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ix.Read(tt.query)
			if tt.terms >= 0 && got.Terms != tt.terms {
				t.Errorf("Read(%q).Terms = %d, want %d", tt.query, got.Terms, tt.terms)
			}
			if !slices.Equal(got.Clauses, tt.clauses) {
				t.Errorf("Read(%q).Clauses = %q, want %q", tt.query, got.Clauses, tt.clauses)
			}
			// The clauses are the ones Search scores.
			_, n := ix.parseRequest(strings.TrimSpace(tt.query))
			if n != len(got.Clauses) {
				t.Errorf("Read(%q): %d clauses, parseRequest %d", tt.query, len(got.Clauses), n)
			}
		})
	}
	if got := New(Options{ClauseWeight: -1}).Read("read the file and send an email"); got.Clauses != nil || got.Terms != 4 {
		t.Errorf("without clause scoring: %+v", got)
	}
}

// uniqueWords returns n distinct made-up words.
func uniqueWords(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("zq")
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26))
		b.WriteByte(' ')
	}
	return b.String()
}
