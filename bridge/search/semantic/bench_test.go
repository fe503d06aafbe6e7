package semantic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// constEmbedder answers every text with the same vector, at once: the
// benchmarks measure the fusion, not an endpoint.
type constEmbedder struct{ v []float32 }

func (c constEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = c.v
	}
	return out, nil
}

// BenchmarkFusion10k measures what the rerank adds to one search beyond
// the endpoint call, at 10,000 tools of 512 dimensions (USE-lite's): the
// cosine scan over every vector and the fusion with 50 lexical hits. It
// reports p50 and p99 wall time per search and the vectors' memory.
//
//	go test ./bridge/search/semantic -run '^$' -bench Fusion10k -benchtime 2000x
func BenchmarkFusion10k(b *testing.B) {
	const tools, dim = 10000, 512
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	r, err := NewRanker(Options{Embedder: constEmbedder{vec()}, Cooldown: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	// Vectors go straight into the store; the worker finds nothing to do.
	var ts []Tool
	for i := range tools {
		ts = append(ts, Tool{ID: fmt.Sprintf("s%d::tool_%d", i/100, i), Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprint("tool number ", i)})
	}
	st := r.Store()
	st.SetServer("all", ts)
	for {
		keys, _, _ := st.Pending(1000)
		if len(keys) == 0 {
			break
		}
		vecs := make([][]float32, len(keys))
		for i := range vecs {
			vecs[i] = vec()
		}
		if err := st.Put(keys, vecs); err != nil {
			b.Fatal(err)
		}
	}
	lex := make([]Hit, 50)
	for i := range lex {
		lex[i] = Hit{ID: ts[rng.IntN(tools)].ID, Score: float64(50 - i)}
	}
	lexical := func(n int) []Hit { return lex[:min(n, len(lex))] }
	stats := st.Stats()
	// A request, and a request of three clauses, each embedded and
	// scanned with the request.
	for _, req := range []Request{
		{Query: "query", Terms: 8},
		{Query: "query and query and query", Terms: 8, Clauses: []string{"query", "query", "query"}},
	} {
		b.Run(fmt.Sprintf("clauses=%d", len(req.Clauses)), func(b *testing.B) {
			d := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				hits, oc := r.Search(context.Background(), req, 10, lexical)
				d = append(d, time.Since(start))
				if oc.Status != "reranked" || len(hits) != 10 {
					b.Fatalf("%+v %d hits", oc, len(hits))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(stats.Bytes)/(1<<20), "vector-MB")
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
