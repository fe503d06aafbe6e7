package search

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func explain(ix *Index, query, id string) {
	n := float64(ix.nDocs)
	for _, grp := range ix.parseQuery(query) {
		for _, a := range grp.alts {
			e := ix.terms[a.term]
			if e == nil {
				continue
			}
			df := float64(e.df)
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			for _, sp := range e.lists {
				for _, p := range sp.p {
					d := sp.seg.docs[p.doc]
					if d.id != id {
						continue
					}
					tfn := 0.0
					parts := []string{}
					for f, tf := range p.tf {
						if tf == 0 {
							continue
						}
						fp := ix.opts.Fields[f]
						avg := ix.lenSum[f] / n
						v := fp.Weight * float64(tf) / (1 - fp.B + fp.B*float64(d.lens[f])/avg)
						tfn += v
						parts = append(parts, fmt.Sprintf("f%d:tf%d len%.0f avg%.1f ->%.2f", f, tf, d.lens[f], avg, v))
					}
					fmt.Printf("  %-14s w%.1f idf%.2f tfn%.2f s=%.2f  %s\n", a.term, a.w, idf, tfn, a.w*idf*tfn/(ix.opts.K1+tfn), strings.Join(parts, " "))
				}
			}
		}
	}
}

func TestTmpExplain(t *testing.T) {
	ix := loadIndex(t, "testdata/"+os.Getenv("DS"), Options{Cutoff: -1})
	q := os.Getenv("Q")
	for _, id := range strings.Split(os.Getenv("IDS"), ",") {
		fmt.Println(id)
		explain(ix, q, id)
	}
}
