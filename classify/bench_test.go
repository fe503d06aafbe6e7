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

// tools10k makes 10,000 distinct tools from the reference catalog: each of
// the 99 real tools is repeated with a numbered name, description and
// property descriptions, so no two tools share a JSON or a description.
func tools10k(tb testing.TB) ([]string, []mcp.Tool) {
	tb.Helper()
	var servers []string
	var tools []mcp.Tool
	cat := loadCatalog(tb, refCatalog)
	for i := 0; len(tools) < 10000; i++ {
		for _, s := range cat {
			for _, t := range s.Tools {
				if len(tools) == 10000 {
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
// time per 10k tools. cold uses a fresh counter each op (every tool is
// tokenized); warm reuses one (the gateway's case on a catalog refresh);
// estimate is the chars/4 fallback.
func BenchmarkCount10k(b *testing.B) {
	_, tools := tools10k(b)
	b.Run("o200k_base/cold", func(b *testing.B) {
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
		for b.Loop() {
			c, err := NewCounter(config.TokenizerO200k)
			if err != nil {
				b.Fatal(err)
			}
			CountAll(c, tools)
		}
	})
	b.Run("o200k_base/warm", func(b *testing.B) {
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
