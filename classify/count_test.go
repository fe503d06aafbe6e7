package classify

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tiktoken-go/tokenizer"
	"github.com/toolbridge/toolbridge/config"
)

func TestToolJSON(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		tool mcp.Tool
		want string
	}{
		{
			name: "structured schema",
			tool: mcp.NewTool("get", mcp.WithDescription("Get <it> & more"), mcp.WithString("id", mcp.Required())),
			// mcp-go's own marshalling: sorted keys, HTML-escaped strings.
			want: `{"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true},` +
				`"description":"Get \u003cit\u003e \u0026 more","inputSchema":{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"},"name":"get"}`,
		},
		{
			name: "raw schemas win and are compacted; protocol fields are left out",
			tool: mcp.Tool{
				Meta:            &mcp.Meta{AdditionalFields: map[string]any{MetaDeferrable: true}},
				Name:            "q",
				Title:           "Query",
				InputSchema:     mcp.ToolInputSchema{Type: "object"},
				RawInputSchema:  json.RawMessage(`{ "type": "object", "$schema": "x" }`),
				OutputSchema:    mcp.ToolOutputSchema{Type: "object"},
				RawOutputSchema: json.RawMessage(`{"type":"array"}`),
				Annotations:     mcp.ToolAnnotation{ReadOnlyHint: &yes},
				DeferLoading:    true,
				Icons:           []mcp.Icon{{Src: "https://example.com/i.png"}},
				Execution:       &mcp.ToolExecution{},
			},
			want: `{"annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","$schema":"x"},"name":"q","outputSchema":{"type":"array"},"title":"Query"}`,
		},
		{
			name: "empty tool",
			tool: mcp.Tool{},
			want: `{"annotations":{},"inputSchema":{"properties":{},"required":[],"type":""},"name":""}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToolJSON(tt.tool)
			if err != nil {
				t.Fatalf("ToolJSON: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("ToolJSON =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestToolJSONBrokenRawSchema(t *testing.T) {
	tool := mcp.Tool{Name: "broken", RawInputSchema: json.RawMessage(`{"type":`)}
	if _, err := ToolJSON(tool); err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("ToolJSON error = %v, want one naming the tool", err)
	}
	for _, name := range []string{config.TokenizerO200k, config.TokenizerEstimate} {
		c, err := NewCounter(name)
		if err != nil {
			t.Fatal(err)
		}
		// Counted from the raw parts: "broken" + `{"type":`.
		if n := c.Count(tool); n <= 0 {
			t.Errorf("%s: Count = %d, want > 0", name, n)
		}
	}
}

func TestNewCounter(t *testing.T) {
	tests := []struct {
		name    string
		want    string
		exact   bool
		wantErr string
	}{
		{name: "o200k_base", want: "o200k_base", exact: true},
		{name: "", want: "o200k_base", exact: true},
		{name: "estimate", want: "estimate"},
		{name: "cl100k_base", wantErr: `unknown tokenizer "cl100k_base"`},
		{name: "O200K_BASE", wantErr: `unknown tokenizer "O200K_BASE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCounter(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewCounter(%q) error = %v, want %q", tt.name, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewCounter(%q): %v", tt.name, err)
			}
			if c.Name() != tt.want || c.Exact() != tt.exact {
				t.Errorf("Name, Exact = %s, %v; want %s, %v", c.Name(), c.Exact(), tt.want, tt.exact)
			}
		})
	}
}

func TestCountKnownValues(t *testing.T) {
	c := newBPE(t)
	// Reference o200k_base counts, as OpenAI's tiktoken gives them.
	for text, want := range map[string]int{
		"hello world":                       2,
		"":                                  0,
		`{"type":"object","properties":{}}`: 9,
	} {
		if got := c.countString(text); got != want {
			t.Errorf("countString(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestEstimateCount(t *testing.T) {
	c, err := NewCounter(config.TokenizerEstimate)
	if err != nil {
		t.Fatal(err)
	}
	tool := mcp.NewTool("abc", mcp.WithDescription("one two three"))
	text, err := ToolJSON(tool)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Count(tool), (len(text)+3)/4; got != want {
		t.Errorf("estimate = %d, want ceil(%d/4) = %d", got, len(text), want)
	}
}

func newBPE(tb testing.TB) *bpeCounter {
	tb.Helper()
	c, err := NewCounter(config.TokenizerO200k)
	if err != nil {
		tb.Fatal(err)
	}
	return c.(*bpeCounter)
}

// TestChunkedCountIsExact checks that counting chunk by chunk, through the
// cache, gives the codec's count of the whole text.
func TestChunkedCountIsExact(t *testing.T) {
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		`aB"`, `it's"s`, `DON'T"x`, `Ab"Cd"eF"`, `x "y`, `x  "y`, "x\n\"y", `"`, `a"`, `"a`,
		`héllo"wörld"`, `naïve"ÉCOLE"`, `ĳ"x`, `a"'s"`, `a"'ll go`, `a" "b"  "c`, `1a"2"`, `a"/"b`,
		`{"type":"object","properties":{"q":{"type":"string","description":"Search query"}}}`,
		strings.Repeat(`{"a":"b"}`, 100),
	}
	for _, s := range loadCatalog(t, refCatalog) {
		for _, tool := range s.Tools {
			b, err := ToolJSON(tool)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
		}
	}
	c := newBPE(t)
	for _, pass := range []string{"cold", "warm"} {
		for _, text := range texts {
			want, err := codec.Count(text)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.countString(text); got != want {
				t.Errorf("%s: countString(%.60q) = %d, codec says %d", pass, text, got, want)
			}
		}
	}
	if n := len(slices.Collect(chunks(texts[len(texts)-1]))); n < 10 {
		t.Errorf("a tool's JSON split into %d chunks; the cache would not help", n)
	}
}

func TestCacheStaysBounded(t *testing.T) {
	c := newBPE(t)
	c.cacheLimit = 200
	want := newBPE(t)
	for _, s := range loadCatalog(t, refCatalog) {
		for _, tool := range s.Tools {
			if got, w := c.Count(tool), want.Count(tool); got != w {
				t.Errorf("%s: bounded cache counts %d, unbounded %d", tool.Name, got, w)
			}
			if c.cacheBytes > c.cacheLimit {
				t.Fatalf("cache holds %d bytes, limit %d", c.cacheBytes, c.cacheLimit)
			}
		}
	}
}

func TestCountAll(t *testing.T) {
	_, tools := manyTools(t, 300)
	c, fresh := newBPE(t), newBPE(t)
	serial := make([]int, len(tools))
	for i, tool := range tools {
		serial[i] = fresh.Count(tool)
	}
	for pass := range 2 { // cold, then from the cache
		if got := CountAll(c, tools); !slices.Equal(got, serial) {
			t.Errorf("pass %d: CountAll differs from serial counts", pass)
		}
	}
	if got := CountAll(c, nil); len(got) != 0 {
		t.Errorf("CountAll(nil) = %v", got)
	}
}

// TestChunkedCountRandom compares chunked and whole counts on random text
// built from the characters the o200k_base pattern treats specially.
func TestChunkedCountRandom(t *testing.T) {
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	alphabet := []string{"a", "B", "z", "Q", `"`, `"`, `"`, "'", "'s", "'LL", " ", "  ", "\n", "\r\n", "\t", "1", "123",
		"/", ":", ",", "{", "}", "é", "É", "ǅ", "ʰ", "\u0301", "中", "٣", "\u00a0", "!", "-"}
	rng := rand.New(rand.NewPCG(1, 2))
	c := newBPE(t)
	for range 1000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := b.String()
		want, err := codec.Count(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.countString(text); got != want {
			t.Errorf("countString(%q) = %d, codec says %d", text, got, want)
		}
	}
}
