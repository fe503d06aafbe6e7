// Package semantic is the optional semantic rerank of tool search: tools
// and queries are embedded by an OpenAI-compatible embeddings endpoint
// (Ollama, TEI, vLLM, LM Studio, OpenAI: POST {url}/embeddings) and the
// cosine similarity of a query to every embedded tool is fused with the
// lexical ranking of bridge/search.
//
// Client speaks the endpoint's protocol: batched requests, a bounded
// response, every answer checked (count, index, dimension, finite
// numbers) and every error wrapped with a Reason and the URL without
// credentials. Store keeps one vector per distinct tool text, keyed by a
// hash of the text, so a catalog change embeds only new or changed
// tools; vectors are normalised and quantised to int8 (a quarter of
// float32's memory: 10,000 tools of 512 dimensions take 5 MB). Ranker
// embeds the catalog in the background, one batch at a time on one
// worker, and fuses a query's cosine ranking with the lexical one; on any
// failure of the endpoint it answers with the lexical ranking and says
// why. A request the lexical index splits into clauses (Request, from
// search.Index.Read) has each clause embedded in the same call, and a
// tool's semantic score is its best over the request and the clauses; the
// semantic weight grows with the request's terms, since short keyword-like
// requests are what the lexical ranking does best.
//
// The package imports nothing of the project: the gateway converts its
// lexical hits (search.Hit has the same fields as Hit) and tool
// documents.
package semantic
