package classify

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolbridge/toolbridge/config"
)

// stubMetaTokens stands in for the meta-tools' schema cost in the report
// goldens: the gateway owns the meta-tools and counts them itself.
const stubMetaTokens = 1000

// referenceEntries classifies and counts the reference catalog.
func referenceEntries(t *testing.T, cfg *config.Config) []Entry {
	t.Helper()
	cl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counter, err := NewCounter(cfg.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	for _, s := range loadCatalog(t, refCatalog) {
		for _, tool := range s.Tools {
			entries = append(entries, Entry{
				Server: s.Name, Tool: tool, Verdict: cl.Classify(s.Name, tool), Tokens: counter.Count(tool),
			})
		}
	}
	return entries
}

// TestReferenceTokens pins the o200k_base counts of the 13 reference
// servers at default settings: per tool, per server, the pass-through total
// and the decision. Any change in counting fails it.
func TestReferenceTokens(t *testing.T) {
	cfg := config.Default()
	entries := referenceEntries(t, &cfg)
	if len(entries) != 99 {
		t.Fatalf("catalog has %d tools, want 99", len(entries))
	}

	type server struct {
		Server string `json:"server"`
		Tools  int    `json:"tools"`
		Tokens int    `json:"tokens"`
	}
	var pinned struct {
		Tokenizer         string         `json:"tokenizer"`
		PassThroughTokens int            `json:"pass_through_tokens"`
		Servers           []server       `json:"servers"`
		Decision          Decision       `json:"decision"`
		Tools             map[string]int `json:"tools"`
	}
	pinned.Tokenizer = cfg.Tokenizer
	pinned.Tools = map[string]int{}
	for _, e := range entries {
		if n := len(pinned.Servers); n == 0 || pinned.Servers[n-1].Server != e.Server {
			pinned.Servers = append(pinned.Servers, server{Server: e.Server})
		}
		s := &pinned.Servers[len(pinned.Servers)-1]
		s.Tools++
		s.Tokens += e.Tokens
		pinned.PassThroughTokens += e.Tokens
		pinned.Tools[e.Server+"::"+e.Tool.Name] = e.Tokens
	}
	pinned.Decision = Decide(&cfg, entries)
	if pinned.Decision.TotalTokens != pinned.PassThroughTokens {
		t.Errorf("decision total %d != sum of tools %d", pinned.Decision.TotalTokens, pinned.PassThroughTokens)
	}
	got, err := json.MarshalIndent(pinned, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "reference-servers.tokens.json", append(got, '\n'))
}

func TestReferenceReport(t *testing.T) {
	cfg := config.Default()
	entries := referenceEntries(t, &cfg)
	r := NewReport(entries, Decide(&cfg, entries), stubMetaTokens)

	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	golden(t, "reference-servers.table.txt", table.Bytes())

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "reference-servers.report.json", js.Bytes())
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("report JSON does not decode: %v", err)
	}
	if back.PassThroughTokens != r.PassThroughTokens || len(back.Tools) != len(r.Tools) || back.Decision != r.Decision {
		t.Errorf("report JSON does not round-trip")
	}
}
