package semantic

// searchHit is the shape of search.Hit. The package cannot import
// bridge/search (that layer imports nothing of ours), so the conversions
// take any type of that shape; a field added to search.Hit makes them
// fail to compile rather than drop it silently.
type searchHit interface {
	~struct {
		ID     string
		Server string
		Name   string
		Score  float64
		Exact  bool
		Fuzzy  bool
	}
}

// FromSearch converts search.Hits to Hits.
func FromSearch[H searchHit](hits []H) []Hit {
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit(h)
	}
	return out
}

// ToSearch converts Hits to search.Hits.
func ToSearch[H searchHit](hits []Hit) []H {
	out := make([]H, len(hits))
	for i, h := range hits {
		out[i] = H(h)
	}
	return out
}
