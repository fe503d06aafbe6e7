package search

import "testing"

func TestZZMisses(t *testing.T) {
	ds := datasets[3]
	ix, qs := loadDataset(t, ds, Options{})
	for _, q := range qs {
		hits := ix.Search(q.Text, 5)
		got := map[string]bool{}
		for _, h := range hits {
			got[h.ID] = true
		}
		for _, r := range q.Relevant {
			if !got[r] {
				t.Logf("MISS %q want %s", q.Text, r)
			}
		}
	}
}
