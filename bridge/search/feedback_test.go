package search

import (
	"slices"
	"testing"
)

// fillerDocs are n tools with a word of their own each, so that the words
// of a test's tools are rare enough (feedbackMaxDF) to be fed back.
func fillerDocs(n int) []Document {
	docs := make([]Document, n)
	for i := range docs {
		w := string([]byte{'q', byte('a' + i/26%26), byte('a' + i%26), 'x'})
		docs[i] = Document{Name: "aux_" + w, Description: "Handles " + w + " records"}
	}
	return docs
}

func TestFeedback(t *testing.T) {
	docs := []Document{
		{Name: "book_flight", Description: "Book a flight with an airline for a journey abroad"},
		{Name: "plan_journey", Description: "Plan a journey abroad: itinerary and airline connections"},
		{Name: "city_weather", Description: "Current weather in a city, with humidity"},
		{Name: "town_weather", Description: "Current weather in a town, with rainfall"},
		{Name: "rainfall_history", Description: "Past rainfall records"},
		{Name: "humidity_sensor", Description: "Reads a humidity sensor"},
	}
	tests := []struct {
		name   string
		weight float64
		query  string
		want   string // a tool feedback adds; "" when it must add none
		absent string // a tool that must not be a hit
	}{
		// The leader's own words ("journey", "abroad", "airline") find the
		// tool the request did not describe.
		{"clear leader", 0, "book a flight", "s::plan_journey", ""},
		{"off", -1, "book a flight", "", "s::plan_journey"},
		// Two tools match alike: feeding back one of them would pick a
		// side at random, so nothing is added.
		{"flat first pass", 0, "current weather", "", ""},
		{"no match", 0, "zzzz", "", ""},
		{"one word", 0, "flight", "s::plan_journey", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(Options{FeedbackWeight: tc.weight, Cutoff: -1})
			ix.Upsert("s", docs)
			ix.Upsert("filler", fillerDocs(200))
			base := New(Options{FeedbackWeight: -1, Cutoff: -1})
			base.Upsert("s", docs)
			base.Upsert("filler", fillerDocs(200))

			got, without := ix.Search(tc.query, 10), base.Search(tc.query, 10)
			ids := func(r Result) []string {
				var out []string
				for _, h := range r.Hits {
					if !r.Partial {
						out = append(out, h.ID)
					}
				}
				return out
			}
			g, w := ids(got), ids(without)
			if tc.want != "" && (!slices.Contains(g, tc.want) || slices.Contains(w, tc.want)) {
				t.Errorf("%q: hits %v (without feedback %v), want feedback to add %s", tc.query, g, w, tc.want)
			}
			if tc.want == "" && !slices.Equal(g, w) {
				t.Errorf("%q: hits %v, want those without feedback %v", tc.query, g, w)
			}
			if tc.absent != "" && slices.Contains(g, tc.absent) {
				t.Errorf("%q: hits %v include %s", tc.query, g, tc.absent)
			}
			if len(w) > 0 && (len(g) == 0 || g[0] != w[0]) {
				t.Errorf("%q: feedback changed the leader: %v, was %v", tc.query, g, w)
			}
		})
	}
}

// TestFeedbackTinyCatalog: in a catalog of a few tools every shared word
// is common (feedbackMaxDF), so feedback adds nothing.
func TestFeedbackTinyCatalog(t *testing.T) {
	docs := append([]Document{
		{Name: "book_flight", Description: "Book a flight for a journey"},
		{Name: "plan_journey", Description: "Plan a journey"},
	}, fillerDocs(10)...)
	ix := New(Options{Cutoff: -1})
	ix.Upsert("s", docs)
	res := ix.Search("book a flight", 5)
	if len(res.Hits) != 1 || res.Hits[0].ID != "s::book_flight" {
		t.Errorf("hits %+v, want book_flight alone", res.Hits)
	}
}

func TestBuildForward(t *testing.T) {
	tf := func(f Field, n uint8) (p posting) {
		p.tf[f] = n
		return p
	}
	at := func(doc uint32, term int32, p posting) termPosting {
		p.doc = doc
		return termPosting{term: term, p: p}
	}
	tests := []struct {
		name    string
		docs    int
		pairs   []termPosting
		wantOff []int32
		wantTF  []uint8 // description tf of each kept term
	}{
		{"no documents", 0, nil, []int32{0}, nil},
		{"no terms", 2, nil, []int32{0, 0, 0}, nil},
		{
			"parameter-only document in the middle", 3,
			[]termPosting{
				at(0, 0, tf(FieldDescription, 2)),
				at(0, 1, tf(FieldParamName, 1)), // not a feedback field
				at(1, 1, tf(FieldParamDescription, 3)),
				at(2, 2, tf(FieldDescription, 255)),
				at(2, 3, tf(FieldName, 1)),
			},
			[]int32{0, 1, 1, 3},
			[]uint8{2, 255, 0},
		},
		{"last document without terms", 2, []termPosting{at(0, 0, tf(FieldTitle, 1))}, []int32{0, 1, 1}, []uint8{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seg := &segment{docs: make([]docInfo, tc.docs)}
			seg.buildForward(tc.pairs)
			if !slices.Equal(seg.fwdOff, tc.wantOff) {
				t.Errorf("fwdOff = %v, want %v", seg.fwdOff, tc.wantOff)
			}
			var got []uint8
			for _, ft := range seg.fwd {
				got = append(got, ft.tf[slices.Index(feedbackFields[:], FieldDescription)])
			}
			if !slices.Equal(got, tc.wantTF) {
				t.Errorf("description tfs = %v, want %v", got, tc.wantTF)
			}
		})
	}
}

// TestFeedbackKeepsCutoff: feedback lifts the leader most, and the
// cutoff stays relative to the request's own match, so every tool kept
// without feedback is kept with it (when the limit leaves room).
func TestFeedbackKeepsCutoff(t *testing.T) {
	on, off := refIndex(t, Options{}), refIndex(t, Options{FeedbackWeight: -1})
	lifted := 0
	for _, q := range []string{"create new entities", "take a screenshot of the page", "fetch file contents from github", "search repositories", "what time is it in Tokyo"} {
		with, without := on.Search(q, 20), off.Search(q, 20)
		if len(with.Hits) == 20 {
			continue
		}
		for _, h := range without.Hits {
			if !slices.ContainsFunc(with.Hits, func(o Hit) bool { return o.ID == h.ID }) {
				t.Errorf("%q: %s dropped with feedback on", q, h.ID)
			}
		}
		if len(with.Hits) > 0 && len(without.Hits) > 0 && with.Hits[0].Score > without.Hits[0].Score {
			lifted++
		}
	}
	if lifted == 0 {
		t.Error("feedback lifted no query's leader: the test checks nothing")
	}
}
