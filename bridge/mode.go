package bridge

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
)

// classifyCatalog gives every tool its class and token cost, makes the
// activation decision and splits the tools into visible and deferred. It
// runs once per catalog change, never per request: tools/list serves the
// result as is.
func (g *Gateway) classifyCatalog(cat *Catalog) {
	listed := make([]mcp.Tool, len(cat.Tools))
	for i, t := range cat.Tools {
		listed[i] = t.Listed()
	}
	// Counted as listed (under the exposed name): that is what the client
	// pays for. The counter caches by text, so unchanged tools cost nothing.
	tokens := classify.CountAll(g.counter, listed)
	entries := make([]classify.Entry, len(cat.Tools))
	for i, t := range cat.Tools {
		t.Verdict = g.classifier.Classify(t.Server, t.Tool)
		t.Tokens = tokens[i]
		entries[i] = classify.Entry{Server: t.Server, Tool: t.Tool, Verdict: t.Verdict, Tokens: t.Tokens}
	}
	cat.Decision = classify.Decide(g.cfg, entries)
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
	cat.meta = g.metaTools(cat, hinted)
	cat.MetaTokens = 0
	for _, m := range cat.meta {
		cat.MetaTokens += g.counter.Count(m.Tool)
	}
}

// Report is the token accounting of the current catalog: per tool its
// class, reason and tokens; totals; pass-through versus bridge mode; and
// the activation decision with its numbers.
func (g *Gateway) Report() classify.Report {
	cat := g.Catalog()
	entries := make([]classify.Entry, len(cat.Tools))
	for i, t := range cat.Tools {
		entries[i] = classify.Entry{Server: t.Server, Tool: t.Listed(), Verdict: t.Verdict, Tokens: t.Tokens}
	}
	return classify.NewReport(entries, cat.Decision, cat.MetaTokens)
}

// updateIndex brings the search index in line with cat, re-indexing only
// the servers whose tools changed: a server that reconnects or sends
// list_changed does not rebuild the whole index.
func (g *Gateway) updateIndex(cat *Catalog) {
	byServer := map[string][]*Tool{}
	for _, t := range cat.Tools {
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	for name := range g.serverDocs {
		if _, ok := byServer[name]; !ok {
			g.index.Remove(name)
			delete(g.serverDocs, name)
		}
	}
	for name, tools := range byServer {
		raws := make([][]byte, len(tools))
		var print []byte
		for i, t := range tools {
			raw, err := json.Marshal(t.Tool)
			if err != nil {
				raw = []byte(`{"name":` + strconv.Quote(t.Name) + `}`)
			}
			raws[i] = raw
			print = append(append(print, raw...), '\n')
		}
		if bytes.Equal(print, g.serverDocs[name]) {
			continue
		}
		docs := make([]search.Document, 0, len(tools))
		for i, t := range tools {
			doc, err := search.DocumentFromToolJSON(name, raws[i])
			if err != nil {
				doc = search.Document{Name: t.Name, Description: t.Tool.Description}
			}
			doc.ID, doc.Server = t.ID, name
			docs = append(docs, doc)
		}
		g.index.Upsert(name, docs)
		g.serverDocs[name] = print
	}
}
