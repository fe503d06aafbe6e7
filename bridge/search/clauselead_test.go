package search

import (
	"math"
	"slices"
	"testing"
)

func TestClauseTerms(t *testing.T) {
	groups := []queryGroup{
		{clauses: 0b001}, {clauses: 0b011}, {clauses: 0b010}, {clauses: 0}, {clauses: 0b100},
	}
	tests := []struct {
		name    string
		groups  []queryGroup
		clauses int
		want    [maxClauses]int
	}{
		{"three clauses", groups, 3, [maxClauses]int{2, 2, 1}},
		{"fewer clauses than bits", groups, 2, [maxClauses]int{2, 2}},
		{"not split", groups, 0, [maxClauses]int{}},
		{"negative", groups, -1, [maxClauses]int{}},
		{"past maxClauses", []queryGroup{{clauses: 0xff}}, 99, [maxClauses]int{1, 1, 1, 1, 1, 1}},
		{"no groups", nil, 3, [maxClauses]int{}},
	}
	for _, tc := range tests {
		if got := clauseTerms(tc.groups, tc.clauses); got != tc.want {
			t.Errorf("%s: clauseTerms = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBoostLeads(t *testing.T) {
	tests := []struct {
		name   string
		cterms [maxClauses]int
		cbest  [maxClauses]float64
		lead   [maxClauses]int
		bonus  float64
		top    float64
		want   []float64
	}{
		{"both clauses", [maxClauses]int{3, 4}, [maxClauses]float64{10, 4}, [maxClauses]int{0, 2}, 0.5, 0, []float64{6, 1, 3}},
		{"short clause", [maxClauses]int{3, 2}, [maxClauses]float64{10, 4}, [maxClauses]int{0, 2}, 0.5, 0, []float64{6, 1, 1}},
		{"one tool leads both", [maxClauses]int{3, 3}, [maxClauses]float64{10, 4}, [maxClauses]int{1, 1}, 0.5, 0, []float64{1, 8, 1}},
		{"clause matched nothing", [maxClauses]int{3, 3}, [maxClauses]float64{10, 0}, [maxClauses]int{0, 2}, 0.5, 0, []float64{6, 1, 1}},
		{"lead out of range", [maxClauses]int{3, 3}, [maxClauses]float64{10, 4}, [maxClauses]int{-1, 7}, 0.5, 0, []float64{1, 1, 1}},
		{"off", [maxClauses]int{3, 3}, [maxClauses]float64{10, 4}, [maxClauses]int{0, 2}, 0, 0, []float64{1, 1, 1}},
		{"negative", [maxClauses]int{3, 3}, [maxClauses]float64{10, 4}, [maxClauses]int{0, 2}, -1, 0, []float64{1, 1, 1}},
		// A lead under the best fused score stays under it; the best
		// tool itself (here at 1, with top 1) gains in full.
		{"capped under the best", [maxClauses]int{3, 3}, [maxClauses]float64{10, 4}, [maxClauses]int{0, 2}, 0.5, 2, []float64{math.Nextafter(2, 0), 1, math.Nextafter(2, 0)}},
		{"the best gains", [maxClauses]int{3, 3}, [maxClauses]float64{10, 4}, [maxClauses]int{0, 2}, 0.5, 1, []float64{6, 1, 3}},
	}
	for _, tc := range tests {
		sc := &scratch{acc: []float64{1, 1, 1}, clauses: 2, cbest: tc.cbest, cterms: tc.cterms}
		top := tc.top
		if top == 0 {
			top = 100
		}
		sc.boostLeads(tc.lead, tc.bonus, top)
		if !slices.Equal(sc.acc, tc.want) {
			t.Errorf("%s: acc = %v, want %v", tc.name, sc.acc, tc.want)
		}
	}
	unsplit := &scratch{acc: []float64{1}}
	unsplit.boostLeads([maxClauses]int{}, 0.5, 1)
	if unsplit.acc[0] != 1 {
		t.Error("an unsplit request boosted a lead")
	}
}

// TestClauseLeadBonusLiftsEachStep checks, on the BFCL catalog, that the
// tool for the step a request says less about ranks in the top 5, not
// only within the limit of 10, and that it does not without
// ClauseLeadBonus.
func TestClauseLeadBonusLiftsEachStep(t *testing.T) {
	cat, err := LoadCatalog("testdata/bfcl/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	const (
		q    = "Transfer $5000 from my checking to saving account. And calculate my potential interests after 5 years if the annual interest rate is 3%."
		want = "bfcl-parallel-multiple::bank_account.transfer"
	)
	rank := func(opts Options) int {
		ix := New(opts)
		ix.UpsertAll(cat)
		return slices.IndexFunc(ix.Search(q, 10).Hits, func(h Hit) bool { return h.ID == want })
	}
	if got := rank(Options{}); got < 0 || got >= 5 {
		t.Errorf("with the bonus, %s ranks %d, want in the top 5", want, got+1)
	}
	if got := rank(Options{ClauseLeadBonus: -1}); got >= 0 && got < 5 {
		t.Errorf("without the bonus, %s ranks %d, want below 5 (the test no longer tests anything)", want, got+1)
	}
}
