package search

import "strings"

// Request is how the index reads a query, for a ranker that fuses its
// own scores with the index's (the semantic rerank, bridge/search/semantic)
// and wants to treat the request as Search does.
type Request struct {
	// Terms counts the request's distinct query terms: its content words
	// (stop words and repeats not counted), shapes such as paths, and the
	// words the intent vocabulary knows.
	Terms int
	// Clauses are the texts of the clauses Search scores apart (at most
	// six), when it splits the request into several; nil when it does not.
	Clauses []string
}

// Read returns how Search reads query: its number of terms and the
// clauses it scores apart. It costs about what parsing the request in
// Search costs, without scoring a tool.
func (ix *Index) Read(query string) Request {
	query = strings.TrimSpace(truncate(query, ix.opts.MaxQueryBytes))
	if query == "" {
		return Request{}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	local := termCache{}
	groups := ix.parseTerms(query, local)
	r := Request{Terms: len(groups)}
	if ix.opts.ClauseWeight > 0 && len(groups) <= maxSplitTerms {
		_, r.Clauses = ix.clausePieces(query, groups, local)
	}
	return r
}
