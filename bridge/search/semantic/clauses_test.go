package semantic

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
)

// wordEmbedder embeds a text as the counts of four words in it, so a
// test sets the cosines exactly; it records every call's texts. dim, if
// set, is the dimension it answers texts containing "odd" with.
type wordEmbedder struct {
	mu    sync.Mutex
	calls [][]string
	dim   int
}

var fourWords = []string{"alpha", "beta", "gamma", "delta"}

func (e *wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, slices.Clone(texts))
	e.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, s := range texts {
		v := make([]float32, len(fourWords))
		if e.dim > 0 && strings.Contains(s, "odd") {
			v = make([]float32, e.dim)
		}
		for j, w := range fourWords {
			v[j] = float32(strings.Count(s, w)) + 0.001
		}
		out[i] = v
	}
	return out, nil
}

func (e *wordEmbedder) callsSince(n int) [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls[n:])
}

// TestRankerClauses checks the fusion of a split request: the request
// and its clauses are embedded in one call; a clause's best tool gets a
// place the whole request's vector does not give it; a short request
// gets a smaller weight than a long one.
func TestRankerClauses(t *testing.T) {
	emb := &wordEmbedder{}
	r, err := NewRanker(Options{Embedder: emb, Weight: 0.5, Cooldown: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var tools []Tool
	for _, w := range fourWords {
		tools = append(tools, Tool{ID: "t::" + w, Server: "t", Name: w})
	}
	r.SetServer("t", tools)
	waitEmbedded(t, r, len(tools))
	// Lexically alpha, beta and delta; gamma only semantically. The whole
	// request is mostly alpha and beta (gamma's cosine is a third of
	// theirs), its second clause all gamma.
	lex, _ := lexicalOf(Hit{ID: "t::alpha", Score: 3}, Hit{ID: "t::beta", Score: 2.9}, Hit{ID: "t::delta", Score: 2.8})
	query := "alpha alpha alpha beta beta beta, then gamma"
	clauses := []string{"alpha alpha alpha beta beta beta", "gamma"}
	tests := []struct {
		name  string
		req   Request
		tune  tuning
		texts []string // embedded in one call
		want  []string
	}{
		{"clauses", Request{Query: query, Terms: 8, Clauses: clauses}, defaultTuning, append([]string{query}, clauses...), []string{"t::alpha", "t::beta", "t::gamma"}},
		// The whole request alone puts gamma under delta's lexical score.
		{"clauses ignored", Request{Query: query, Terms: 8, Clauses: clauses}, tuning{termsFull: 7}, []string{query}, []string{"t::alpha", "t::beta", "t::delta"}},
		{"no clauses", Request{Query: query, Terms: 8}, defaultTuning, []string{query}, []string{"t::alpha", "t::beta", "t::delta"}},
		// Two terms get 2/7 of the weight: the clause's tool stays out.
		{"short request", Request{Query: query, Terms: 2, Clauses: clauses}, defaultTuning, append([]string{query}, clauses...), []string{"t::alpha", "t::beta", "t::delta"}},
		// Unknown terms (Search) get the whole weight.
		{"unknown terms", Request{Query: query, Clauses: clauses}, defaultTuning, append([]string{query}, clauses...), []string{"t::alpha", "t::beta", "t::gamma"}},
		// One clause is no split.
		{"one clause", Request{Query: query, Terms: 8, Clauses: clauses[1:]}, defaultTuning, []string{query}, []string{"t::alpha", "t::beta", "t::delta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.o.tune = &tt.tune
			n := len(emb.callsSince(0))
			hits, oc := r.Search(context.Background(), tt.req, 3, lex)
			if oc.Status != "reranked" {
				t.Fatalf("outcome %+v", oc)
			}
			calls := emb.callsSince(n)
			if len(calls) != 1 || !slices.Equal(calls[0], tt.texts) {
				t.Errorf("embedded %q, want one call of %q", calls, tt.texts)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ranked %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRankerClauseDimension checks that a clause's vector of another
// dimension falls back to the lexical ranking, as the request's would.
func TestRankerClauseDimension(t *testing.T) {
	emb := &wordEmbedder{dim: 7}
	r, err := NewRanker(Options{Embedder: emb, Cooldown: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetServer("t", []Tool{{ID: "t::alpha", Server: "t", Name: "alpha"}})
	waitEmbedded(t, r, 1)
	lex, _ := lexicalOf(Hit{ID: "t::alpha", Score: 3})
	hits, oc := r.Search(context.Background(), Request{Query: "alpha, then odd", Terms: 8, Clauses: []string{"alpha", "odd"}}, 3, lex)
	if oc.Status != "fallback" || oc.Reason != ReasonDimension || len(hits) != 1 {
		t.Errorf("outcome %+v, hits %+v; want a fallback for the dimension", oc, hits)
	}
}
