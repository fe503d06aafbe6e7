package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// edgeServer has the tool shapes that break naive result building: no
// parameters at all, no description, properties that are not an object,
// $ref, a huge schema, an output schema, results that are errors or carry
// non-object structured content.
func edgeServer() *server.MCPServer {
	s := server.NewMCPServer("edge", "1.0.0", server.WithToolCapabilities(true))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	var huge strings.Builder
	huge.WriteString(`{"type":"object","properties":{`)
	for i := range 400 {
		if i > 0 {
			huge.WriteByte(',')
		}
		fmt.Fprintf(&huge, `"field_%d":{"type":"array","items":{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]},"b":{"enum":[1,2,3,4,5,6,7,8,9,10]}}},"description":"field %d <b>&amp;</b>"}`, i, i)
	}
	huge.WriteString(`},"required":["field_0"]}`)
	for _, tool := range []mcp.Tool{
		{Name: "no_params", Description: "Takes nothing", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "empty_properties", Description: "Takes nothing, said twice", RawInputSchema: json.RawMessage(`{"type":"object","properties":{},"required":[]}`)},
		{Name: "no_description", RawInputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)},
		{Name: "properties_not_object", Description: "A broken schema", RawInputSchema: json.RawMessage(`{"type":"object","properties":["x"]}`)},
		{Name: "with_ref", Description: "Uses $ref and $defs", RawInputSchema: json.RawMessage(`{"type":"object","$defs":{"P":{"type":"object","properties":{"q":{"type":"string"}}}},"properties":{"p":{"$ref":"#/$defs/P"},"r":{"$ref":"#/$defs/missing"}},"required":["p"]}`)},
		{Name: "huge_schema", Description: strings.Repeat("A very long description with <html> & \"quotes\"\nand lines. ", 200), RawInputSchema: json.RawMessage(huge.String())},
		{Name: "typed_output", Description: "Declares an output schema", RawInputSchema: json.RawMessage(`{"type":"object"}`),
			RawOutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
			Title:           "Typed output", Annotations: mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)}},
		{Name: "unicode_ツール", Description: "Ünïcødé — ツール", RawInputSchema: json.RawMessage(`{"type":"object","properties":{"名前":{"type":"string"}}}`)},
	} {
		handler := ok
		switch tool.Name {
		case "typed_output":
			handler = func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(`{"n":3}`)}, StructuredContent: map[string]any{"n": 3}}, nil
			}
		case "no_params":
			// A result that is not an object: tool_call must not hold it
			// to any schema of its own.
			handler = func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("[1,2]")}, StructuredContent: []int{1, 2}}, nil
			}
		case "no_description":
			handler = func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultError("it failed"), nil
			}
		}
		s.AddTool(tool, handler)
	}
	return s
}

// metaSchemaCheck holds a session's meta-tools as its client listed them
// and checks answers against their output schemas as a strict client does.
type metaSchemaCheck struct {
	t       *testing.T
	c       *client.Client
	meta    map[string]mcp.Tool
	checker *ResultChecker
}

func newMetaSchemaCheck(t *testing.T, c *client.Client) *metaSchemaCheck {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m := &metaSchemaCheck{t: t, c: c, meta: map[string]mcp.Tool{}, checker: NewResultChecker()}
	for _, tool := range res.Tools {
		if metaNames[tool.Name] {
			m.meta[tool.Name] = tool
		}
	}
	if len(m.meta) != 3 {
		t.Fatalf("tools/list has %d meta-tools, want 3", len(m.meta))
	}
	return m
}

// call calls a meta-tool and fails the test if a strict client would
// reject the answer; it returns the structured content as JSON.
func (m *metaSchemaCheck) call(name string, args map[string]any) (*mcp.CallToolResult, []byte) {
	m.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := m.c.CallTool(context.Background(), req)
	if err != nil {
		m.t.Fatalf("%s %v: %v", name, args, err)
	}
	if problems := m.checker.Check(m.meta[name], res); len(problems) > 0 {
		doc, _ := json.Marshal(res.StructuredContent)
		m.t.Fatalf("%s %v: a strict client rejects the answer:\n- %s\nstructuredContent: %s", name, args, strings.Join(problems, "\n- "), clip(string(doc), 2000))
	}
	doc, _ := json.Marshal(res.StructuredContent)
	return res, doc
}

// TestMetaAnswersMatchOutputSchemas holds every meta-tool answer to the
// output schema its tool declares, the way the TypeScript SDK and MCP
// Inspector check them, for every tool of the reference servers, BFCL and
// MetaTool catalogs and the edge cases: each tool's search hit and its
// describe answer in both formats (tool_describe declares no schema
// today; if it comes to declare one, this holds its answers to it).
func TestMetaAnswersMatchOutputSchemas(t *testing.T) {
	catalogs := []struct {
		name string
		path string // "" for the edge-case server
	}{
		{"edge cases", ""},
		{"reference servers", "testdata/reference-servers/catalog.json"},
		{"MetaTool", "search/testdata/metatool/catalog.json"},
		{"BFCL", "search/testdata/bfcl/catalog.json"},
	}
	for _, cc := range catalogs {
		t.Run(cc.name, func(t *testing.T) {
			upstreams := map[string]*server.MCPServer{"edge": edgeServer()}
			if cc.path != "" {
				upstreams = map[string]*server.MCPServer{}
				for _, s := range catalogServers(t, cc.path) {
					upstreams[s.name] = s.serve(0)
				}
			}
			cfg := bridgeConfig()
			g, c := startGateway(t, cfg, upstreams)
			m := newMetaSchemaCheck(t, c)
			if call := m.meta[toolid.MetaCall]; outputSchemaOf(call) != nil {
				t.Fatalf("tool_call declares an output schema; no one schema fits every tool's result: %s", outputSchemaOf(call))
			}
			deferred := g.Catalog().Deferred
			if len(deferred) == 0 {
				t.Fatal("no deferred tools")
			}
			var ids []string
			for _, tool := range deferred {
				ids = append(ids, tool.ID)
				_, doc := m.call(toolid.MetaSearch, map[string]any{"query": tool.ID, "limit": cfg.Search.MaxLimit})
				var sr SearchResult
				if err := json.Unmarshal(doc, &sr); err != nil {
					t.Fatal(err)
				}
				if !hitsContain(sr, tool.ID) {
					t.Errorf("searching %q does not find it, so its hit went unchecked", tool.ID)
				}
			}
			for i := 0; i < len(ids); i += maxDescribe {
				batch := ids[i:min(i+maxDescribe, len(ids))]
				for _, format := range []string{"mcp", "openai"} {
					res, doc := m.call(toolid.MetaDescribe, map[string]any{"tool_names": batch, "format": format})
					var dr struct {
						Tools []json.RawMessage `json:"tools"`
					}
					if err := json.Unmarshal(doc, &dr); err != nil || len(dr.Tools) != len(batch) {
						t.Fatalf("describe %v (%s): %d tools in %s (%v)", batch, format, len(dr.Tools), clip(string(doc), 300), err)
					}
					checkCompactText(t, res)
				}
			}
			// The answers that carry no hits: browse, no match, a partial
			// match, did-you-mean, a describe with unknown names, and errors.
			m.call(toolid.MetaSearch, map[string]any{"query": ""})
			m.call(toolid.MetaSearch, map[string]any{"query": "zzqqxxj"})
			if _, doc := m.call(toolid.MetaSearch, map[string]any{"query": "zzqqxxj " + misspelt(deferred)}); !bytes.Contains(doc, []byte(`"partial":true`)) {
				t.Errorf("a misspelt word gave no partial answer: %s", clip(string(doc), 300))
			}
			m.call(toolid.MetaSearch, map[string]any{"query": strings.ToUpper(deferred[0].Name[:len(deferred[0].Name)-1])})
			m.call(toolid.MetaSearch, map[string]any{"query": 7})
			_, doc := m.call(toolid.MetaDescribe, map[string]any{"tool_names": []string{ids[0], "no_such_tool_anywhere"}})
			if !bytes.Contains(doc, []byte(`"not_found":["Unknown tool`)) {
				t.Errorf("describe with an unknown name: not_found missing from %s", clip(string(doc), 300))
			}
			m.call(toolid.MetaDescribe, map[string]any{"tool_name": "no_such_tool_anywhere"})
			m.call(toolid.MetaDescribe, map[string]any{})
			m.call(toolid.MetaCall, map[string]any{"tool_name": "no_such_tool_anywhere"})
		})
	}
}

// TestToolCallPassesEveryResultShape calls the edge tools through
// tool_call: results that are not objects, errors and typed results all
// reach a strict client, since tool_call declares no schema to break them.
func TestToolCallPassesEveryResultShape(t *testing.T) {
	_, c := startGateway(t, bridgeConfig(), map[string]*server.MCPServer{"edge": edgeServer()})
	m := newMetaSchemaCheck(t, c)
	for _, tt := range []struct {
		tool      string
		wantError bool
		want      string // the structured content, as JSON
	}{
		{"edge::no_params", false, `[1,2]`},
		{"edge::no_description", true, `null`},
		{"edge::typed_output", false, `{"n":3}`},
	} {
		res, doc := m.call(toolid.MetaCall, map[string]any{"tool_name": tt.tool})
		if res.IsError != tt.wantError || string(doc) != tt.want {
			t.Errorf("tool_call %s: isError=%v structuredContent=%s, want isError=%v %s", tt.tool, res.IsError, doc, tt.wantError, tt.want)
		}
	}
}

// TestResultChecker pins what strict clients reject, so the checker the
// tests and demo --script use is itself right.
func TestResultChecker(t *testing.T) {
	typed := mcp.Tool{Name: "t", RawOutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}
	plain := mcp.Tool{Name: "p"}
	broken := mcp.Tool{Name: "b", RawOutputSchema: json.RawMessage(`{"type":"nonsense"}`)}
	tests := []struct {
		name string
		tool mcp.Tool
		res  mcp.CallToolResult
		want string // substring of the problems; "" for none
	}{
		{"valid", typed, mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, ""},
		{"missing structured content", typed, mcp.CallToolResult{}, "returned no structuredContent"},
		{"error without structured content", typed, mcp.CallToolResult{IsError: true}, ""},
		{"error with invalid structured content", typed, mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{}}, "missing property 'n'"},
		{"wrong type", typed, mcp.CallToolResult{StructuredContent: map[string]any{"n": "1"}}, "at /n"},
		{"null where an array is due", mcp.Tool{Name: "a", RawOutputSchema: json.RawMessage(searchOutputSchema)},
			mcp.CallToolResult{StructuredContent: map[string]any{"tools": []any{map[string]any{"id": "a", "server": "s", "name": "n", "description": "", "parameters": nil, "score": 1}}, "total_deferred": 1}},
			"at /tools/0/parameters"},
		{"no schema, anything goes", plain, mcp.CallToolResult{StructuredContent: "x"}, ""},
		{"schema that does not compile", broken, mcp.CallToolResult{StructuredContent: map[string]any{}}, "compiling b's output schema"},
		{"typed schema as a client decodes it", mcp.Tool{Name: "c", OutputSchema: mcp.ToolOutputSchema{Type: "object", Required: []string{"n"}}},
			mcp.CallToolResult{StructuredContent: map[string]any{}}, "missing property 'n'"},
	}
	checker := NewResultChecker()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(checker.Check(tt.tool, &tt.res), "\n")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

// checkCompactText fails unless a describe answer's text is one line of
// JSON, as compact as encoding/json makes it.
func checkCompactText(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	text := res.Content[0].(mcp.TextContent).Text
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(text)); err != nil {
		t.Fatalf("describe text is not JSON: %v\n%s", err, clip(text, 300))
	}
	if compact.String() != text {
		t.Fatalf("describe text is not compact JSON:\n%s", clip(text, 300))
	}
}

func hitsContain(sr SearchResult, id string) bool {
	for _, h := range sr.Tools {
		if h.ID == id {
			return true
		}
	}
	return false
}

// misspelt returns the longest all-letter word of the tools' names, of at
// least six letters, with its third letter dropped: a word no tool has
// but a partial match finds.
func misspelt(tools []*Tool) string {
	best := ""
	for _, t := range tools {
		for _, w := range strings.FieldsFunc(t.Name, func(r rune) bool { return r < 'a' || r > 'z' }) {
			if len(w) > len(best) {
				best = w
			}
		}
	}
	if len(best) < 6 {
		return "zzqqxxj"
	}
	return best[:2] + best[3:]
}
