package search

// Field identifies one indexed field of a Document.
type Field int

// The indexed fields, in the order of Options.Fields.
const (
	FieldName Field = iota
	FieldServer
	FieldTitle
	FieldDescription
	FieldParamName
	FieldParamDescription
	numFields
)

// FieldParams tunes one field of BM25F.
type FieldParams struct {
	// Weight multiplies the field's term frequency. Zero means the tuned
	// default; a negative weight switches the field off.
	Weight float64
	// B is the field's length normalisation (0 none, 1 full). Zero means the
	// tuned default; a negative value means no normalisation.
	B float64
}

// Options tunes the index. The zero value is the tuned default; each zero
// field takes its default independently.
type Options struct {
	// Fields are the per-field BM25F parameters, indexed by Field.
	Fields [numFields]FieldParams
	// K1 is BM25's term-frequency saturation.
	K1 float64
	// SynonymWeight scales a synonym's contribution relative to the query
	// term itself (0..1); negative switches synonyms off.
	SynonymWeight float64
	// IntentWeight scales the tool words of the intent vocabulary (a
	// request word's meaning in tool terms, intents.go) relative to the
	// request word itself (0..1); negative switches the vocabulary off.
	IntentWeight float64
	// ClauseWeight is what a request split into clauses ("read the file
	// and post it to Slack") gives the best tool of each clause, as a
	// fraction of the best whole-request score; negative ranks the request
	// as one.
	ClauseWeight float64
	// ClauseLeadBonus adds, in a request split into clauses, this
	// fraction of its clause score to the best tool of each clause of at
	// least three terms, so that each step's tool gets a slot near the
	// top rather than only within the limit; it never takes first place
	// from the request's best tool. Negative is off.
	ClauseLeadBonus float64
	// FeedbackWeight is the weight, relative to a query word, of the best
	// of the words pseudo-relevance feedback adds when the first pass has
	// a clear leader (feedback.go); negative is off.
	FeedbackWeight float64
	// NameCoverage multiplies a tool's score by 1 + NameCoverage x (the
	// fraction of its name's parts the query matched); negative is off.
	NameCoverage float64
	// Cutoff drops hits scoring under this fraction of the best hit's
	// score before feedback (the request's own words); negative keeps
	// every hit up to the limit.
	Cutoff float64
	// ExactBonus is added to a tool the whole query names exactly, so it
	// ranks first whatever the text scores are.
	ExactBonus float64
	// DefaultLimit is the number of hits when Search gets a limit <= 0.
	DefaultLimit int
	// MaxLimit caps Search's limit.
	MaxLimit int
	// BrowseMax bounds the names listed in Result.Browse over all servers.
	BrowseMax int
	// BrowsePerServer bounds the names listed for one server in Browse.
	BrowsePerServer int
	// DidYouMeanMax bounds Result.DidYouMean and Resolve's candidates.
	DidYouMeanMax int
	// MaxQueryBytes truncates longer queries so one request cannot make a
	// search slow.
	MaxQueryBytes int
}

// DefaultOptions returns the tuned defaults (see eval_test.go for the
// benchmarks they were tuned on).
func DefaultOptions() Options {
	var o Options
	// Names are short and precise: no length normalisation. Descriptions
	// vary from a line to pages; only mild normalisation, or a long,
	// thorough description would be punished for being thorough.
	o.Fields[FieldName] = FieldParams{Weight: 2, B: 0}
	o.Fields[FieldServer] = FieldParams{Weight: 1, B: 0.5}
	o.Fields[FieldTitle] = FieldParams{Weight: 2, B: 0.5}
	o.Fields[FieldDescription] = FieldParams{Weight: 1, B: 0.25}
	o.Fields[FieldParamName] = FieldParams{Weight: 1.5, B: 0.5}
	o.Fields[FieldParamDescription] = FieldParams{Weight: 0.5, B: 0.75}
	o.K1 = 1.2
	o.SynonymWeight = 0.3
	o.IntentWeight = 0.5
	o.ClauseWeight = 0.5
	o.ClauseLeadBonus = 0.3
	o.NameCoverage = 0.25
	o.FeedbackWeight = 0.5
	o.Cutoff = 0.2
	o.ExactBonus = 1000
	o.DefaultLimit = 5
	o.MaxLimit = 20
	o.BrowseMax = 200
	o.BrowsePerServer = 30
	o.DidYouMeanMax = 5
	o.MaxQueryBytes = 8192
	return o
}

// withDefaults fills every zero field of o from DefaultOptions and turns the
// "negative means off" conventions into plain values.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	for f := range o.Fields {
		switch {
		case o.Fields[f].Weight == 0:
			o.Fields[f].Weight = d.Fields[f].Weight
		case o.Fields[f].Weight < 0:
			o.Fields[f].Weight = 0
		}
		switch {
		case o.Fields[f].B == 0:
			o.Fields[f].B = d.Fields[f].B
		case o.Fields[f].B < 0:
			o.Fields[f].B = 0
		}
		o.Fields[f].B = min(o.Fields[f].B, 1)
	}
	o.K1 = orFloat(o.K1, d.K1)
	o.SynonymWeight = min(orFloat(o.SynonymWeight, d.SynonymWeight), 1)
	o.IntentWeight = min(orFloat(o.IntentWeight, d.IntentWeight), 1)
	o.ClauseWeight = orFloat(o.ClauseWeight, d.ClauseWeight)
	o.ClauseLeadBonus = orFloat(o.ClauseLeadBonus, d.ClauseLeadBonus)
	o.NameCoverage = orFloat(o.NameCoverage, d.NameCoverage)
	o.FeedbackWeight = orFloat(o.FeedbackWeight, d.FeedbackWeight)
	o.Cutoff = min(orFloat(o.Cutoff, d.Cutoff), 1)
	if o.ExactBonus <= 0 {
		o.ExactBonus = d.ExactBonus
	}
	o.MaxLimit = orInt(o.MaxLimit, d.MaxLimit)
	o.DefaultLimit = min(orInt(o.DefaultLimit, d.DefaultLimit), o.MaxLimit)
	o.BrowseMax = orInt(o.BrowseMax, d.BrowseMax)
	o.BrowsePerServer = orInt(o.BrowsePerServer, d.BrowsePerServer)
	o.DidYouMeanMax = orInt(o.DidYouMeanMax, d.DidYouMeanMax)
	o.MaxQueryBytes = orInt(o.MaxQueryBytes, d.MaxQueryBytes)
	return o
}

// orFloat returns def for zero, 0 for negative ("off") and v otherwise.
func orFloat(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// orInt returns def for v <= 0 and v otherwise.
func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
