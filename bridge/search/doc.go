// Package search is the tool search engine behind tool_search and the name
// resolver behind tool_call.
//
// Documents are tools. Each is analysed into six fields (name, server, title,
// description, parameter names, parameter descriptions) and ranked with
// BM25F: per-field weights and length normalisation, a small table of verb
// and abbreviation synonyms, a Snowball English stemmer, character bigrams
// for CJK text, an exact-name bonus and typo-tolerant name matching.
//
// Requests are read the way people write them: an intent vocabulary maps
// request words to the words tools use ("remember" to entities and
// observations, intents.go), a request of several steps is scored clause
// by clause with the best tool of each clause lifted and kept
// (clauses.go, clauselead.go), and a request that matches nothing as
// written gets partial matches instead of nothing (partial.go). When the
// first pass has a clear leader, the rare words that characterise it are
// added to the query at a small weight (pseudo-relevance feedback,
// feedback.go), for tools that say what the request means in other words.
//
// The index is split into one segment per server, so adding or removing a
// server re-analyses only that server's tools. It is safe for concurrent use:
// Search and Resolve take a read lock; Upsert and Remove analyse outside the
// lock and hold the write lock only to link or unlink one segment.
//
// The optional semantic rerank, which fuses this ranking with the cosine
// similarity of embeddings from an OpenAI-compatible endpoint, is the
// subpackage semantic; Index.Read tells it how Search reads a request (its
// terms and the clauses it scores apart, request.go).
//
// The package is pure Go and knows nothing about MCP types; the gateway
// converts tools to Document (DocumentFromToolJSON does it from a tool's
// JSON form).
//
// Quality and speed are measured by one command (the bench:search task):
//
//	go test ./bridge/search -run '^TestRetrievalQuality$' -v -count=1 \
//		-bench 'Build|Query|IndexMemory|UpsertServer|Scaling' -benchtime 1s
//
// TestRetrievalQuality prints Recall@1/5/10, Hit@5 and MRR@10 on the BFCL
// and MetaTool tool-retrieval sets, on hand-written keyword queries over
// the MCP reference servers and on plain-language tasks over the reference
// and demo servers, with the share of multi-tool tasks that get every
// needed tool in the top 10 (testdata/); the benchmarks report build time,
// query latency percentiles (wall clock and per-thread CPU time) and heap
// size for synthetic catalogs of 100 to 100,000 tools.
package search

// Param is one input parameter of a tool.
type Param struct {
	// Name is the parameter's name; nested properties use dotted paths.
	Name string
	// Description is the parameter's description, plus its enum values.
	Description string
}

// Document is one tool as the index sees it.
type Document struct {
	// ID is the canonical "server::tool" id; Upsert fills it when empty.
	ID string
	// Server is the upstream server's name; Upsert overrides it with its
	// server argument.
	Server string
	// Name is the tool's name as the server reports it.
	Name string
	// Title is the tool's human-readable title, if any.
	Title string
	// Description is the tool's description.
	Description string
	// Params are the tool's input parameters.
	Params []Param
}

// Hit is one search result.
type Hit struct {
	// ID is the tool's canonical "server::tool" id.
	ID string
	// Server is the tool's server.
	Server string
	// Name is the tool's name.
	Name string
	// Score is the ranking score; higher is better. Only the order and the
	// ratio to the best score mean something.
	Score float64
	// Exact says the whole query named this tool (id, name or alias).
	Exact bool
	// Fuzzy says the tool's name is a close spelling of the query.
	Fuzzy bool
}

// ServerTools lists some of one server's tool names, for browsing.
type ServerTools struct {
	// Server is the server's name.
	Server string
	// Names are the first tool names of the server, in its own order.
	Names []string
	// Total is how many tools the server has; it may exceed len(Names).
	Total int
}

// Result is the answer to one Search.
type Result struct {
	// Hits are the matching tools, best first, at most the limit.
	Hits []Hit
	// DidYouMean are ids whose names are close spellings of the query, set
	// when there are no hits or the query looks like a misspelt tool name.
	DidYouMean []string
	// Browse lists tool names grouped by server, set for an empty query and
	// when nothing matched as written; it is bounded by Options.BrowseMax.
	Browse []ServerTools
	// Partial says no tool matched the query's words as written, and Hits
	// are tools matching part of them instead: close spellings, prefixes
	// ("screen" for "screenshot") and stop words that tools use as terms.
	Partial bool
}
