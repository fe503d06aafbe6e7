package search

import (
	"fmt"
	"hash/fnv"
	"io"
)

// Metrics are retrieval-quality averages over a query set. Recall@k is the
// fraction of a query's relevant tools found in the top k; Hit@5 counts a
// query as found when any relevant tool is in the top 5; MRR@10 is the
// mean reciprocal rank of the first relevant tool within the top 10.
// Multi counts the queries that need more than one tool, and All10 is the
// fraction of them with every needed tool in the top 10.
type Metrics struct {
	Queries  int
	Recall1  float64
	Recall5  float64
	Recall10 float64
	Hit5     float64
	MRR10    float64
	Multi    int
	All10    float64
}

// Evaluate runs every query through ix.Search with limit k (full query text
// as the query) and averages the metrics. Ranks past k count as misses.
func Evaluate(ix *Index, queries []Query, k int) Metrics {
	return EvaluateFunc(func(query string, k int) []string {
		res := ix.Search(query, k)
		ids := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			ids[i] = h.ID
		}
		return ids
	}, queries, k)
}

// EvaluateFunc is Evaluate for any ranker: rank returns the ids of at most
// k tools for a query, best first.
func EvaluateFunc(rank func(query string, k int) []string, queries []Query, k int) Metrics {
	var m Metrics
	for _, q := range queries {
		ids := rank(q.Query, k)
		rel := make(map[string]bool, len(q.Relevant))
		for _, id := range q.Relevant {
			rel[id] = true
		}
		var found1, found5, found10 int
		first := 0
		for i, id := range ids {
			if !rel[id] {
				continue
			}
			rank := i + 1
			if first == 0 {
				first = rank
			}
			if rank <= 1 {
				found1++
			}
			if rank <= 5 {
				found5++
			}
			if rank <= 10 {
				found10++
			}
		}
		n := float64(len(rel))
		m.Recall1 += float64(found1) / n
		m.Recall5 += float64(found5) / n
		m.Recall10 += float64(found10) / n
		if found5 > 0 {
			m.Hit5++
		}
		if first > 0 && first <= 10 {
			m.MRR10 += 1 / float64(first)
		}
		if len(rel) > 1 {
			m.Multi++
			if found10 == len(rel) {
				m.All10++
			}
		}
		m.Queries++
	}
	if m.Multi > 0 {
		m.All10 /= float64(m.Multi)
	}
	if m.Queries > 0 {
		n := float64(m.Queries)
		m.Recall1 /= n
		m.Recall5 /= n
		m.Recall10 /= n
		m.Hit5 /= n
		m.MRR10 /= n
	}
	return m
}

// WriteTableHeader writes the header of the table WriteTableRow fills.
func WriteTableHeader(w io.Writer) {
	fmt.Fprintf(w, "%-28s %7s %8s %8s %9s %6s %7s %12s\n", "dataset", "queries", "Recall@1", "Recall@5", "Recall@10", "Hit@5", "MRR@10", "multi:all@10")
}

// WriteTableRow writes one dataset's metrics as a table row; the last
// column is empty for sets without multi-tool queries.
func WriteTableRow(w io.Writer, name string, m Metrics) {
	multi := ""
	if m.Multi > 0 {
		multi = fmt.Sprintf("%.3f (%d)", m.All10, m.Multi)
	}
	fmt.Fprintf(w, "%-28s %7d %8.3f %8.3f %9.3f %6.3f %7.3f %12s\n", name, m.Queries, m.Recall1, m.Recall5, m.Recall10, m.Hit5, m.MRR10, multi)
}

// SplitHalves splits queries in two by a hash of their id: options are
// tuned on the first half only, so the second shows whether they overfit.
func SplitHalves(qs []Query) (tune, holdout []Query) {
	for _, q := range qs {
		h := fnv.New32a()
		h.Write([]byte(q.ID))
		if h.Sum32()%2 == 0 {
			tune = append(tune, q)
		} else {
			holdout = append(holdout, q)
		}
	}
	return tune, holdout
}
