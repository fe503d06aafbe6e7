package bridge

import (
	"cmp"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
)

// classifyWith gives every tool its class (by live's rules) and token
// cost (by counter), makes the activation decision and splits the tools
// into visible and deferred. It runs once per catalog change, never per
// request: tools/list serves the result as is.
func (g *Gateway) classifyWith(cat *Catalog, live *settings, counter classify.Counter) {
	// Counted as listed (under the exposed name): that is what the client
	// pays for. The counter caches by text, so unchanged tools cost nothing.
	// Each is rendered as it is counted: a slice of them all would copy
	// every definition (see classify.CountEach), as would a []classify.Tool
	// (see ClassifyRefs).
	tokens := classify.CountEach(counter, len(cat.Tools), func(i int) mcp.Tool { return cat.Tools[i].Listed() })
	named := make([]classify.ToolRef, len(cat.Tools))
	for i, t := range cat.Tools {
		named[i] = classify.ToolRef{Server: t.Server, Tool: t.Tool}
	}
	verdicts := live.classifier.ClassifyRefs(named)
	entries := make([]classify.Entry, len(cat.Tools))
	for i, t := range cat.Tools {
		t.Verdict = verdicts[i]
		t.Tokens = tokens[i]
		// Without the definition (Entry.Tool), which Decide does not read:
		// copying it was another 4 MB live for 10,000 tools.
		entries[i] = classify.Entry{Server: t.Server, Verdict: t.Verdict, Tokens: t.Tokens}
	}
	cat.Decision = classify.Decide(live.cfg, entries)
	cat.Visible, cat.Deferred = nil, nil
	var deferrable []*Tool
	for _, t := range cat.Tools {
		t.Deferred = cat.Decision.Deferred(t.Verdict)
		if t.Deferred {
			cat.Deferred = append(cat.Deferred, t)
		} else {
			cat.Visible = append(cat.Visible, t)
		}
		if t.Verdict.Class == config.ClassDeferrable {
			deferrable = append(deferrable, t)
		}
	}
	// What bridging costs: the meta-tools over the tools it would defer
	// (mode on defers every deferrable tool).
	hinted := cat.Deferred
	if !cat.Decision.Bridge {
		hinted = deferrable
	}
	cat.meta = g.metaTools(cat, live, hinted)
	cat.MetaTokens = 0
	for _, m := range cat.meta {
		cat.MetaTokens += counter.Count(m.Tool)
	}
}

// Report is the token accounting of the current catalog: per tool its
// class, reason and tokens; totals; pass-through versus bridge mode; and
// the activation decision with its numbers.
func (g *Gateway) Report() classify.Report {
	cat := g.Catalog()
	entries := make([]classify.Entry, len(cat.Tools))
	var notes []classify.ToolNote
	for i, t := range cat.Tools {
		entries[i] = classify.Entry{Server: t.Server, Tool: t.Listed(), Verdict: t.Verdict, Tokens: t.Tokens, Hints: hintsOf(*t.Tool).Hints()}
		notes = append(notes, trustNotes(t)...)
	}
	r := classify.NewReport(entries, cat.Decision, cat.MetaTokens)
	for _, rm := range cat.Removed {
		kind := classify.NoteDisabled
		if rm.Kind == RemovedQuarantined {
			kind = classify.NoteQuarantined
		}
		notes = append(notes, classify.ToolNote{Server: rm.Server, Name: rm.Name, Kind: kind, Detail: rm.Reason})
		if rm.Kind == RemovedQuarantined {
			notes = append(notes, trustNotes(rm.Tool)...)
		}
	}
	slices.SortStableFunc(notes, func(a, b classify.ToolNote) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Name, b.Name))
	})
	r.Notes = notes
	return r
}

// trustNotes are a served tool's trust warning and suspicious flags.
func trustNotes(t *Tool) []classify.ToolNote {
	var out []classify.ToolNote
	if t.Trust.Warning != "" {
		out = append(out, classify.ToolNote{Server: t.Server, Name: t.Name, Kind: classify.NoteWarning, Detail: t.Trust.Warning})
	}
	for _, f := range t.Trust.Flags {
		out = append(out, classify.ToolNote{Server: t.Server, Name: t.Name, Kind: classify.NoteSuspicious, Detail: f.String()})
	}
	return out
}
