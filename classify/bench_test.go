package classify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolbridge/toolbridge/config"
)

// manyTools makes n distinct tools from the reference catalog: each of
// the 99 real tools is repeated with a numbered name, description and
// property descriptions, so no two tools share a JSON or a description.
func manyTools(tb testing.TB, n int) ([]string, []mcp.Tool) {
	tb.Helper()
	var servers []string
	var tools []mcp.Tool
	cat := loadCatalog(tb, refCatalog)
	for i := 0; len(tools) < n; i++ {
		for _, s := range cat {
			for _, t := range s.Tools {
				if len(tools) == n {
					return servers, tools
				}
				t.Name = fmt.Sprintf("%s_%d", t.Name, i)
				t.Description = fmt.Sprintf("%s (variant %d)", t.Description, i)
				// Every property description differs too: real catalogs
				// share JSON structure, not prose.
				var compact bytes.Buffer
				if err := json.Compact(&compact, t.RawInputSchema); err != nil {
					tb.Fatal(err)
				}
				t.RawInputSchema = json.RawMessage(strings.ReplaceAll(compact.String(),
					`"description":"`, fmt.Sprintf(`"description":"(v%d) `, i)))
				servers = append(servers, s.Name)
				tools = append(tools, t)
			}
		}
	}
	return servers, tools
}

// BenchmarkCount10k counts 10,000 distinct tools per op, so ns/op is the
// time per 10k tools (also reported as ms/10k). cold uses a fresh counter each op (every tool is
// tokenized); warm reuses one (the gateway's case on a catalog refresh);
// estimate is the chars/4 fallback.
func BenchmarkCount10k(b *testing.B) {
	_, tools := manyTools(b, 10_000)
	b.Run("o200k_base/cold", func(b *testing.B) {
		defer per10k(b)
		for b.Loop() {
			c, err := NewCounter(config.TokenizerO200k)
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range tools {
				c.Count(t)
			}
		}
	})
	b.Run("o200k_base/cold-CountAll", func(b *testing.B) {
		defer per10k(b)
		for b.Loop() {
			c, err := NewCounter(config.TokenizerO200k)
			if err != nil {
				b.Fatal(err)
			}
			CountAll(c, tools)
		}
	})
	b.Run("o200k_base/warm", func(b *testing.B) {
		defer per10k(b)
		c, err := NewCounter(config.TokenizerO200k)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tools {
			c.Count(t)
		}
		for b.Loop() {
			for _, t := range tools {
				c.Count(t)
			}
		}
	})
	b.Run("estimate", func(b *testing.B) {
		defer per10k(b)
		c, err := NewCounter(config.TokenizerEstimate)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for _, t := range tools {
				c.Count(t)
			}
		}
	})
}

func per10k(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/10k")
	}
}

// BenchmarkDecide re-decides a 10,000-tool catalog, as the gateway does on
// every catalog change.
func BenchmarkDecide(b *testing.B) {
	cfg := config.Default()
	entries := make([]Entry, 10_000)
	for i := range entries {
		entries[i] = Entry{Verdict: Verdict{Class: config.ClassDeferrable}, Tokens: 150}
	}
	for b.Loop() {
		Decide(&cfg, entries)
	}
}
