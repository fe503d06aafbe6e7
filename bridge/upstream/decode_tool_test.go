package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeTool(t *testing.T) {
	for _, tc := range []struct {
		name, raw       string
		wantIn, wantOut string // raw schemas kept, byte for byte
		wantErr         string
	}{
		{name: "schemas kept as sent", raw: `{"name":"t","inputSchema":{"$schema":"x","type":"object","properties":{"a":{"type":"string","title":"A"}}},"outputSchema":{"type":"object"}}`,
			wantIn: `{"$schema":"x","type":"object","properties":{"a":{"type":"string","title":"A"}}}`, wantOut: `{"type":"object"}`},
		{name: "missing input schema", raw: `{"name":"t"}`, wantIn: `{"type":"object"}`},
		{name: "null input schema", raw: `{"name":"t","inputSchema":null,"outputSchema":null}`, wantIn: `{"type":"object"}`},
		{name: "annotations and title", raw: `{"name":"t","title":"T","annotations":{"readOnlyHint":true},"inputSchema":{}}`, wantIn: `{}`},
		{name: "no name", raw: `{"inputSchema":{}}`, wantErr: "no name"},
		{name: "empty name", raw: `{"name":"","inputSchema":{}}`, wantErr: "no name"},
		{name: "control character in the name", raw: `{"name":"a\u0007b","inputSchema":{}}`, wantErr: "control characters"},
		{name: "name too long", raw: `{"name":"` + strings.Repeat("n", 129) + `","inputSchema":{}}`, wantErr: "more than 128"},
		{name: "longest name", raw: `{"name":"` + strings.Repeat("n", 128) + `","inputSchema":{}}`, wantIn: `{}`},
		{name: "input schema a string", raw: `{"name":"t","inputSchema":"object"}`, wantErr: "inputSchema is not a JSON object"},
		{name: "input schema an array", raw: `{"name":"t","inputSchema":[]}`, wantErr: "inputSchema is not a JSON object"},
		{name: "output schema a number", raw: `{"name":"t","inputSchema":{},"outputSchema":1}`, wantErr: "outputSchema is not a JSON object"},
		{name: "name a number", raw: `{"name":1,"inputSchema":{}}`, wantErr: "cannot unmarshal"},
		{name: "truncated", raw: `{"name":"t","inputSchema":{`, wantErr: "unexpected end"},
		{name: "not an object", raw: `[]`, wantErr: "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := DecodeTool(json.RawMessage(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeTool(%s) error = %v, want one containing %q", tc.raw, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeTool(%s): %v", tc.raw, err)
			}
			if string(tool.RawInputSchema) != tc.wantIn || string(tool.RawOutputSchema) != tc.wantOut {
				t.Errorf("schemas %s / %s, want %s / %s", tool.RawInputSchema, tool.RawOutputSchema, tc.wantIn, tc.wantOut)
			}
			if tool.InputSchema.Properties != nil || tool.InputSchema.Type != "" {
				t.Errorf("the typed input schema was decoded too: %+v", tool.InputSchema)
			}
		})
	}
}

// FuzzDecodeTool: any bytes a server lists as a tool either decode into a
// named tool whose schemas are JSON objects kept as sent, or are an error.
func FuzzDecodeTool(f *testing.F) {
	for _, seed := range []string{
		`{"name":"t","inputSchema":{"type":"object"}}`, `{"name":"t"}`, `{"name":"t","inputSchema":null}`,
		`{"name":"t","inputSchema":"x"}`, `{"name":"t","inputSchema":{},"outputSchema":[]}`, `{}`, `[]`, `null`, `{"name":`,
		`{"name":"t","inputSchema":{"properties":{"a":{"type":"string"}}},"annotations":{"title":"A"},"_meta":{"k":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tool, err := DecodeTool(raw)
		if err != nil {
			return
		}
		if tool.Name == "" {
			t.Fatalf("DecodeTool(%q) gave a tool without a name", raw)
		}
		if !isObject(tool.RawInputSchema) || !json.Valid(tool.RawInputSchema) {
			t.Fatalf("DecodeTool(%q) input schema %q is not a JSON object", raw, tool.RawInputSchema)
		}
		if tool.RawOutputSchema != nil && (!isObject(tool.RawOutputSchema) || !json.Valid(tool.RawOutputSchema)) {
			t.Fatalf("DecodeTool(%q) output schema %q is not a JSON object", raw, tool.RawOutputSchema)
		}
	})
}

// RefreshTools reads a tools/list page through rawRef, which does not copy
// the page (#25): what DecodeTool returns must not point into the page,
// whose buffer is gone (or reused) once the page is decoded.
func TestDecodedToolOutlivesItsPage(t *testing.T) {
	page := []byte(`{"tools":[{"name":"echo","title":"Echo","description":"Echo the text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"outputSchema":{"type":"object"},"annotations":{"title":"Echo it","readOnlyHint":true},"_meta":{"k":"v"}},null]}`)
	var res struct {
		Tools []rawRef `json:"tools"`
	}
	if err := json.Unmarshal(page, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || string(res.Tools[1].b) != "null" {
		t.Fatalf("elements = %q", res.Tools)
	}
	tool, err := DecodeTool(res.Tools[0].b)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	for i := range page {
		page[i] = 'x'
	}
	got, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || string(tool.RawInputSchema) != `{"type":"object","properties":{"text":{"type":"string"}}}` || string(tool.RawOutputSchema) != `{"type":"object"}` {
		t.Errorf("tool changed with its page:\n%s\nwant\n%s", got, want)
	}
}
