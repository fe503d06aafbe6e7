package search

import (
	"slices"
	"testing"
)

func TestClauseKept(t *testing.T) {
	// Two clauses; the best scores are 10 and 2.
	sc := &scratch{clauses: 2, cbest: [maxClauses]float64{10, 2}}
	sc.cacc = []float64{
		10, 0, // 0: leads clause 0
		0, 0.5, // 1: a quarter of clause 1's best
		0, 0.6, // 2: three tenths of clause 1's best
		2, 0, // 3: a fifth of clause 0's best
	}
	tests := []struct {
		name string
		i    int
		cut  float64
		want bool
	}{
		{"clause lead", 0, 0.3, true},
		{"under the cut", 1, 0.3, false},
		{"at the cut", 2, 0.3, true},
		{"small in a strong clause", 3, 0.3, false},
		{"low cut", 3, 0.2, true},
		{"cut off", 0, 0, false},
		{"negative cut", 0, -1, false},
		{"negative position", -1, 0.3, false},
		{"past the end", 4, 0.3, false},
	}
	for _, tc := range tests {
		if got := sc.clauseKept(tc.i, tc.cut); got != tc.want {
			t.Errorf("%s: clauseKept(%d, %v) = %v, want %v", tc.name, tc.i, tc.cut, got, tc.want)
		}
	}
	unsplit := &scratch{}
	if unsplit.clauseKept(0, 0.3) {
		t.Error("an unsplit request kept a tool by its clauses")
	}
}

// TestClauseCutoffKeepsSmallSteps checks that the second tool of a step
// the request says little about survives the cutoff, and that it does not
// without ClauseCutoff.
func TestClauseCutoffKeepsSmallSteps(t *testing.T) {
	docs := []Document{
		{Name: "read_report", Description: "Read the quarterly sales report file and its revenue figures"},
		{Name: "summarize_report", Description: "Summarize the quarterly sales report revenue figures"},
		{Name: "plot_chart", Description: "Plot a chart"},
		{Name: "draw_chart", Description: "Draw a bar chart of values"},
	}
	q := "read the quarterly sales report file with its revenue figures and plot a chart"
	ids := func(opts Options) []string {
		ix := New(opts)
		ix.Upsert("s", docs)
		var out []string
		for _, h := range ix.Search(q, 10).Hits {
			out = append(out, h.Name)
		}
		return out
	}
	if got := ids(Options{}); !slices.Contains(got, "draw_chart") || !slices.Contains(got, "plot_chart") {
		t.Errorf("with the clause cutoff: %v, want both chart tools", got)
	}
	if got := ids(Options{ClauseCutoff: -1}); slices.Contains(got, "draw_chart") {
		t.Errorf("without the clause cutoff: %v, want draw_chart cut off (the test no longer tests anything)", got)
	}
}
