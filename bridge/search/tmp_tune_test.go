package search

import (
	"fmt"
	"os"
	"testing"
)

func loadIndex(t testing.TB, dir string, opts Options) *Index {
	cat, err := LoadCatalog(dir + "/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	ix := New(opts)
	for _, s := range cat {
		ix.Upsert(s.Server, s.Docs)
	}
	return ix
}

func TestTmpEval(t *testing.T) {
	WriteTableHeader(os.Stdout)
	for _, ds := range []string{"bfcl", "metatool", "reference-servers"} {
		qf := "testdata/" + ds + "/queries.jsonl"
		if ds == "reference-servers" {
			qf = "testdata/keyword-queries.jsonl"
		}
		qs, err := LoadQueries(qf)
		if err != nil {
			t.Fatal(err)
		}
		ix := loadIndex(t, "testdata/"+ds, Options{Cutoff: -1})
		WriteTableRow(os.Stdout, ds, Evaluate(ix, qs, 10))
		if ds == "reference-servers" {
			for _, q := range qs {
				r := ix.Search(q.Query, 3)
				if len(r.Hits) == 0 || r.Hits[0].ID != q.Relevant[0] {
					var ids []string
					for _, h := range r.Hits {
						ids = append(ids, fmt.Sprintf("%s(%.2f)", h.ID, h.Score))
					}
					fmt.Println("MISS", q.Query, "want", q.Relevant[0], "got", ids)
				}
			}
		}
	}
	fmt.Println()
}
