package classify

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tiktoken-go/tokenizer"
	"github.com/toolbridge/toolbridge/config"
)

// FuzzClassifyCount feeds arbitrary tool JSON (or, when it does not decode,
// arbitrary bytes as a raw input schema) through Classify, both counters,
// Decide and the report. Nothing may panic, counts are never negative, the
// chunked o200k_base count equals the codec's count of the whole text, and
// counting again (from the cache) gives the same number.
func FuzzClassifyCount(f *testing.F) {
	f.Add([]byte(`{"name":"read_file","inputSchema":{"type":"object"}}`), "fs")
	f.Add([]byte(`{"name":"mcp_x","description":"d","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`), "")
	f.Add([]byte(`{"name":"x","_meta":{"io.toolbridge/deferrable":false},"defer_loading":true,"inputSchema":{}}`), "auto")
	f.Add([]byte(`{"name":"create_issue","annotations":{"readOnlyHint":true},"outputSchema":{"type":"object"}}`), "github")
	f.Add([]byte(`{"name":"a/b","title":"it's \"quoted\"\n","_meta":{"io.toolbridge/deferrable":"yes"}}`), "never")
	f.Add([]byte(`{"type":`), "always")
	f.Add([]byte("\xff\xfe not json"), "unmarked")

	cfg := config.Default()
	cfg.Servers = map[string]config.Server{
		"always": {Defer: config.DeferAlways}, "never": {Defer: config.DeferNever},
		"unmarked": {Defer: config.DeferUnmarked}, "auto": {Defer: config.DeferAuto},
	}
	cfg.NeverDefer = []string{"create_issue"}
	cfg.Tools = []config.ToolRule{{Match: "github::*_issue*", Class: config.ClassCore}, {Match: "*::[a-c]*", Class: config.ClassUnknown}}
	cl, err := New(&cfg)
	if err != nil {
		f.Fatal(err)
	}
	bpe := newBPE(f)
	est, err := NewCounter(config.TokenizerEstimate)
	if err != nil {
		f.Fatal(err)
	}
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, data []byte, server string) {
		tool, err := decodeTool(data)
		if err != nil {
			tool = mcp.Tool{Name: "raw", RawInputSchema: json.RawMessage(data)}
		}
		v := cl.Classify(server, tool)
		switch v.Class {
		case config.ClassCore, config.ClassDeferrable, config.ClassUnknown:
		default:
			t.Fatalf("Classify gave class %q", v.Class)
		}
		if v.Reason == "" {
			t.Fatal("Classify gave no reason")
		}
		if v.Always && v.Class != config.ClassDeferrable {
			t.Fatalf("Always on a %s tool", v.Class)
		}

		n := bpe.Count(tool)
		if n < 0 || est.Count(tool) < 0 {
			t.Fatalf("negative count %d", n)
		}
		if again := bpe.Count(tool); again != n {
			t.Fatalf("count %d, then %d from the cache", n, again)
		}
		text := string(toolText(tool))
		if want, err := codec.Count(text); err == nil && want != n {
			t.Fatalf("chunked count %d, whole text %d: %q", n, want, text)
		}

		entries := []Entry{{Server: server, Tool: tool, Verdict: v, Tokens: n}}
		d := Decide(&cfg, entries)
		var buf bytes.Buffer
		r := NewReport(entries, d, 10)
		if err := r.WriteTable(&buf); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
	})
}
