package classify

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// sameToolJSON fails t unless ToolJSON gives what mcp-go's marshalling
// does: the same bytes, or an error both ways.
func sameToolJSON(t *testing.T, tool mcp.Tool) {
	t.Helper()
	want, wantErr := marshalTool(tool)
	got, err := ToolJSON(tool)
	if (err != nil) != (wantErr != nil) || string(got) != string(want) {
		t.Fatalf("ToolJSON =\n%s (error %v)\nmcp-go gives\n%s (error %v)", got, err, want, wantErr)
	}
}

func TestToolJSONMatchesMCPGo(t *testing.T) {
	yes, no := true, false
	var tools []mcp.Tool
	for _, s := range loadCatalog(t, refCatalog) {
		tools = append(tools, s.Tools...)
	}
	tools = append(tools,
		mcp.Tool{Name: "plain", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
		mcp.Tool{
			Name: "all", Title: "All <of> it & more", Description: "line\u2028sep\u2029 \"q\" ü 中 \x7f",
			RawInputSchema:  json.RawMessage(" {\n \"type\": \"object\", \"description\": \"<b>&amp;</b>\\u003c\" }\n"),
			RawOutputSchema: json.RawMessage(`{"type":"array","items":{"enum":["a<b",1.50,-0,1e3]}}`),
			Annotations:     mcp.ToolAnnotation{Title: "T&", ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no},
		},
		// Shapes the shortcut leaves to mcp-go.
		mcp.Tool{Name: "structured", InputSchema: mcp.ToolInputSchema{Type: "object", Properties: map[string]any{"q": map[string]any{"type": "string"}}}},
		mcp.Tool{Name: "structured-out", RawInputSchema: json.RawMessage(`{}`), OutputSchema: mcp.ToolOutputSchema{Type: "object"}},
		mcp.Tool{Name: "both-out", RawInputSchema: json.RawMessage(`{}`), RawOutputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: mcp.ToolOutputSchema{Type: "object"}},
		mcp.Tool{Name: "both-in", RawInputSchema: json.RawMessage(`{}`), InputSchema: mcp.ToolInputSchema{Type: "object"}},
		// Broken ones: both ways an error.
		mcp.Tool{Name: "empty-out", RawInputSchema: json.RawMessage(`{}`), RawOutputSchema: json.RawMessage{}},
		mcp.Tool{Name: "empty-in", RawInputSchema: json.RawMessage{}},
		mcp.Tool{Name: "broken", RawInputSchema: json.RawMessage(`{"type":`)},
		mcp.Tool{Name: "two", RawInputSchema: json.RawMessage(`{} {}`)},
		mcp.Tool{Name: "bad-utf8 \xff", Description: "\xfe", RawInputSchema: json.RawMessage("{\"d\":\"\xff\"}")},
	)
	for _, tool := range tools {
		t.Run(tool.Name, func(t *testing.T) { sameToolJSON(t, tool) })
	}
}

// FuzzToolJSON compares ToolJSON with mcp-go's marshalling of any tool
// with raw schemas.
func FuzzToolJSON(f *testing.F) {
	f.Add("search", "Search", "Find <things> & more\u2028", []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`), []byte(nil), "", uint8(0))
	f.Add("x", "", "", []byte(` { "a" : [1, 2.50, "\u003c"] } `), []byte(`{"type":"array"}`), "Ann", uint8(5))
	f.Add("y\xff", "t", "d", []byte(`{"type":`), []byte{}, "", uint8(255))
	f.Fuzz(func(t *testing.T, name, title, description string, in, out []byte, annotation string, hints uint8) {
		hint := func(bit uint8) *bool {
			if hints&(1<<bit) == 0 {
				return nil
			}
			v := hints&(1<<(bit+4)) != 0
			return &v
		}
		sameToolJSON(t, mcp.Tool{
			Name: name, Title: title, Description: description,
			RawInputSchema: json.RawMessage(in), RawOutputSchema: json.RawMessage(out),
			Annotations: mcp.ToolAnnotation{Title: annotation, ReadOnlyHint: hint(0), DestructiveHint: hint(1), IdempotentHint: hint(2), OpenWorldHint: hint(3)},
		})
	})
}
