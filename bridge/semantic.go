package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/bridge/search/semantic"
	"github.com/toolbridge/toolbridge/config"
)

// newSemantic builds the semantic rerank search.embeddings configures, or
// nil when it is off. The API key is read from the environment variable
// api_key_env names; it goes into the client's Authorization header and
// nowhere else. full is show_full_urls: how the endpoint's URL is shown.
func newSemantic(e config.Embeddings, environ []string, full bool, logger *slog.Logger) (*semantic.Ranker, error) {
	if !e.Enabled() {
		return nil, nil
	}
	key := ""
	if e.APIKeyEnv != "" {
		key, _ = config.LookupEnv(environ, e.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("search.embeddings.api_key_env: environment variable %s is not set", e.APIKeyEnv)
		}
	}
	c, err := semantic.NewClient(semantic.ClientOptions{URL: e.URL, Model: e.Model, APIKey: key,
		ShowURL: func(u string) string { return config.ShowURL(u, full) }})
	if err != nil {
		return nil, fmt.Errorf("search.embeddings: %w", err)
	}
	return semantic.NewRanker(semantic.Options{
		Embedder: c, Weight: e.Weight, Timeout: e.Timeout,
		Logger: logger.With("embeddings", config.ShowURL(e.URL, full), "model", e.Model),
	})
}

// semanticTools converts a server's documents for the semantic store.
func semanticTools(docs []search.Document) []semantic.Tool {
	out := make([]semantic.Tool, len(docs))
	for i, d := range docs {
		out[i] = semantic.Tool{ID: d.ID, Server: d.Server, Name: d.Name, Title: d.Title, Description: d.Description}
	}
	return out
}

// rank is the index's ranking of query, reranked semantically when
// search.embeddings is configured. On any failure of the embeddings
// endpoint it is the lexical ranking; outcome says which it was ("" when
// the rerank is off).
func (g *Gateway) rank(ctx context.Context, query string, limit int) (search.Result, semantic.Outcome) {
	if g.semantic == nil {
		return g.index.Search(query, limit), semantic.Outcome{}
	}
	var res search.Result
	// The rerank embeds the clauses the index scores apart with the
	// request, and weighs itself by the request's terms.
	rq := g.index.Read(query)
	req := semantic.Request{Query: query, Terms: rq.Terms, Clauses: rq.Clauses}
	hits, oc := g.semantic.Search(ctx, req, limit, func(n int) []semantic.Hit {
		res = g.index.Search(query, n)
		return semantic.FromSearch(res.Hits)
	})
	res.Hits = semantic.ToSearch[search.Hit](hits)
	return res, oc
}

// WaitSemantic waits, at most max, until the semantic rerank has embedded
// the catalog (or failed, or holds all it can). The one-shot search
// command calls it so that its ranking is the one a long-running gateway
// gives; without the rerank it returns at once.
func (g *Gateway) WaitSemantic(ctx context.Context, max time.Duration) {
	if g.semantic == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	g.semantic.Wait(ctx)
}

// SemanticState says, for people, how far the semantic rerank got: ""
// when it is off, else how many tools have a vector and the latest
// failure's kind, if any.
func (g *Gateway) SemanticState() string {
	if g.semantic == nil {
		return ""
	}
	st := g.semantic.Store().Stats()
	out := fmt.Sprintf("semantic rerank: %d of %d tools embedded", st.Embedded, st.Tools)
	if reason := g.semantic.LastFailure(); reason != "" {
		out += fmt.Sprintf("; the endpoint failed (%s), tools without a vector rank lexically", reason)
	}
	return out
}
