package search

import "math"

// Pseudo-relevance feedback: when the first pass has a clear leader, the
// words that best characterise that tool are added to the query at a
// small weight, so that tools described in its words but not in the
// request's ("book a flight" finding a travel tool that says "trip")
// move up. Measured on the tuning halves, the variants that drew the
// words from the top 2 to 5 tools, or that applied when the first pass
// was flat, all lost BFCL Recall@5: BFCL has dozens of near-identical
// tools (a dozen weather tools), and feedback from an arbitrary one of them
// reorders its siblings at random. Feedback from a clear leader only
// (feedbackLead) gained on every half.

// feedbackFields are the fields feedback words are drawn from: what a tool
// is. Parameter names and descriptions name its inputs, and drawing from
// them too gained nothing.
var feedbackFields = [...]Field{FieldName, FieldTitle, FieldDescription}

const (
	// feedbackTerms is how many words feedback adds (3 to 15 measured).
	feedbackTerms = 8
	// feedbackMaxDF skips words in more than this fraction of the tools:
	// they characterise nothing, and their long postings would cost
	// more than the rest of the query.
	feedbackMaxDF = 0.05
	// feedbackLead is how close the runner-up's score may come to the
	// leader's (as a fraction) for the leader still to count as clear.
	feedbackLead = 0.85
)

// fwdTerm is one term of a document in the forward index: its
// segment-local number and its frequency in each of feedbackFields.
type fwdTerm struct {
	term int32
	tf   [len(feedbackFields)]uint8
}

// buildForward fills the forward index from the build's postings, which
// count appends document by document. Only terms in feedbackFields are
// kept: the index is built for the few tools feedback reads per query.
func (seg *segment) buildForward(pairs []termPosting) {
	seg.fwdOff = make([]int32, len(seg.docs)+1)
	n := 0
	for _, tp := range pairs {
		for _, f := range feedbackFields {
			if tp.p.tf[f] != 0 {
				n++
				break
			}
		}
	}
	seg.fwd = make([]fwdTerm, 0, n)
	for _, tp := range pairs {
		ft := fwdTerm{term: tp.term}
		has := false
		for i, f := range feedbackFields {
			ft.tf[i] = tp.p.tf[f]
			has = has || ft.tf[i] != 0
		}
		if has {
			seg.fwd = append(seg.fwd, ft)
		}
		seg.fwdOff[tp.p.doc+1] = int32(len(seg.fwd))
	}
	// A document with no such term left its end at zero.
	for d := 1; d < len(seg.fwdOff); d++ {
		seg.fwdOff[d] = max(seg.fwdOff[d], seg.fwdOff[d-1])
	}
}

// fbTerm is a candidate feedback word with its weight in the leader.
type fbTerm struct {
	e *termEntry
	w float64
}

// feedback adds Options.FeedbackWeight x the feedback words' BM25F scores
// to sc.acc, when the first pass has a clear leader: lead, scoring first,
// with second the runner-up's score (sc.leaders). A word's weight is its
// saturated frequency in the leader times its idf, relative to the best
// word's, so the best word counts FeedbackWeight x a query word. Caller
// holds mu (read). After a pruned first pass (pr not nil) it admits the
// documents the words could lift into the top first, and adds to the
// first pass's documents only.
func (ix *Index) feedback(groups []queryGroup, sc *scratch, lead int, first, second float64, pr *pruned) {
	alpha := ix.opts.FeedbackWeight
	if alpha <= 0 || lead < 0 || second >= feedbackLead*first {
		return
	}
	seg, d := ix.locate(lead)
	if seg == nil {
		return
	}
	n := float64(ix.nDocs)
	maxDF := max(1, int(feedbackMaxDF*n))
	k1 := ix.opts.K1
	m := &seg.meta[d]
	var top [feedbackTerms]fbTerm
	nTop := 0
	for _, ft := range seg.fwd[seg.fwdOff[d]:seg.fwdOff[d+1]] {
		// A map lookup per word of one tool is cheaper than keeping every
		// segment term's entry pointer (1.2 MB at 10,000 tools).
		t := seg.terms[ft.term]
		e := ix.terms[t]
		if e == nil || e.df > maxDF || isQueryTerm(groups, t) {
			continue
		}
		tfn := 0.0
		for i, f := range feedbackFields {
			tfn += float64(ft.tf[i]) * ix.norm[f][m.lenq[f]]
		}
		if tfn == 0 {
			continue
		}
		c := fbTerm{e: e, w: tfn / (k1 + tfn) * termIDF(n, e.df)}
		if nTop == len(top) && c.w <= top[nTop-1].w {
			continue
		}
		i := min(nTop, len(top)-1)
		nTop = min(nTop+1, len(top))
		for i > 0 && top[i-1].w < c.w {
			top[i] = top[i-1]
			i--
		}
		top[i] = c
	}
	var terms [feedbackTerms]*termEntry
	var wqs [feedbackTerms]float64
	for i, c := range top[:nTop] {
		terms[i], wqs[i] = c.e, alpha*c.w/top[0].w*termIDF(n, c.e.df)
	}
	if pr != nil {
		ix.admitFeedback(groups, sc, pr, terms[:nTop], wqs[:nTop])
	}
	for i := range nTop {
		ix.addTerm(terms[i], wqs[i], sc, pr != nil)
	}
}

// isQueryTerm reports whether t is a term of the query or one of its
// synonyms or intent words: feedback is for the words the query lacks.
func isQueryTerm(groups []queryGroup, t string) bool {
	for _, g := range groups {
		for _, a := range g.alts {
			if a.term == t {
				return true
			}
		}
	}
	return false
}

// addTerm adds wq x the saturated BM25F frequency of e's term to the
// score of every document that has it, or with only, of every document
// sc.slot marks (a pruned first pass's). Caller holds mu (read).
func (ix *Index) addTerm(e *termEntry, wq float64, sc *scratch, only bool) {
	k1 := ix.opts.K1
	post := e.post
	for _, c := range e.chunks {
		base := int(ix.bases[c.slot])
		meta := ix.meta[base:]
		run := post[:c.n]
		post = post[c.n:]
		for _, p := range run {
			tfn := 0.0
			for f := range numFields {
				if p.tf[f] != 0 {
					tfn += float64(p.tf[f]) * ix.norm[f][meta[p.doc].lenq[f]]
				}
			}
			if tfn == 0 {
				continue // only in a switched-off field
			}
			g := base + int(p.doc)
			if only {
				if sc.slot[g] == 0 {
					continue
				}
			} else if sc.acc[g] == 0 {
				sc.touch(g)
			}
			sc.acc[g] += wq * tfn / (k1 + tfn)
		}
	}
}

// termIDF is BM25's inverse document frequency of a term in df of n tools.
func termIDF(n float64, df int) float64 {
	d := float64(df)
	return math.Log(1 + (n-d+0.5)/(d+0.5))
}
