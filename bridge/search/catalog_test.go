package search

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDocumentFromToolJSON(t *testing.T) {
	raw := `{
		"name": "change_drink",
		"description": "Modify a drink order",
		"annotations": {"title": "Change drink"},
		"inputSchema": {"type": "object", "properties": {
			"drink_id": {"type": "string", "description": "The drink's id"},
			"prefs": {"type": "object", "description": "New preferences", "properties": {
				"size": {"type": "string", "enum": ["small", "large", 3]},
				"milk": {"type": "string", "title": "Milk type"}
			}},
			"toppings": {"type": "array", "items": {"type": "object", "properties": {
				"name": {"type": "string", "description": "Topping name"}
			}}}
		}}
	}`
	d, err := DocumentFromToolJSON("cafe", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "cafe::change_drink" || d.Server != "cafe" || d.Title != "Change drink" || d.Description != "Modify a drink order" {
		t.Errorf("document header = %+v", d)
	}
	want := []Param{
		{"drink_id", "The drink's id"},
		{"prefs", "New preferences"},
		{"prefs.milk", "Milk type"},
		{"prefs.size", "small large"},
		{"toppings", ""},
		{"toppings.name", "Topping name"},
	}
	if len(d.Params) != len(want) {
		t.Fatalf("params = %+v, want %+v", d.Params, want)
	}
	for i := range want {
		if d.Params[i] != want[i] {
			t.Errorf("param %d = %+v, want %+v", i, d.Params[i], want[i])
		}
	}
}

func TestDocumentFromToolJSONBadInput(t *testing.T) {
	tests := []struct {
		name, raw, wantErr string
	}{
		{"not json", `{`, "decoding tool"},
		{"wrong type", `[]`, "decoding tool"},
		{"no name", `{"description": "x"}`, "no name"},
		{"name not a string", `{"name": 3}`, "decoding tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DocumentFromToolJSON("s", []byte(tt.raw))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	// Odd schemas are tolerated: the tool is still worth finding.
	for _, raw := range []string{
		`{"name": "a", "inputSchema": "nonsense"}`,
		`{"name": "a", "inputSchema": {"properties": {"p": 5}}}`,
		`{"name": "a", "inputSchema": {"properties": []}}`,
		`{"name": "a", "inputSchema": null}`,
	} {
		if d, err := DocumentFromToolJSON("s", []byte(raw)); err != nil || d.Name != "a" {
			t.Errorf("%s: %+v, %v", raw, d, err)
		}
	}
}

func TestDocumentFromToolJSONIsBounded(t *testing.T) {
	// A deeply nested, wide schema stops at the depth and count bounds.
	schema := `{"type":"string"}`
	for range 7 {
		schema = `{"type":"object","properties":{"a":` + schema + `,"b":` + schema + `,"c":` + schema + `}}`
	}
	d, err := DocumentFromToolJSON("s", []byte(`{"name":"deep","inputSchema":`+schema+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Params) == 0 || len(d.Params) > maxParams {
		t.Errorf("%d params, want 1..%d", len(d.Params), maxParams)
	}
	for _, p := range d.Params {
		if strings.Count(p.Name, ".") >= maxParamDepth {
			t.Errorf("param %q deeper than %d", p.Name, maxParamDepth)
		}
	}
}

func TestLoadCatalogAndQueriesErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := LoadCatalog(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "reading catalog") {
		t.Errorf("missing catalog: %v", err)
	}
	if _, err := LoadCatalog(write("bad.json", `{"servers": 3}`)); err == nil || !strings.Contains(err.Error(), "decoding catalog") {
		t.Errorf("bad catalog: %v", err)
	}
	if _, err := LoadCatalog(write("noname.json", `{"servers":[{"name":"s","tools":[{}]}]}`)); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("nameless tool: %v", err)
	}
	if _, err := LoadQueries(filepath.Join(dir, "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "opening queries") {
		t.Errorf("missing queries: %v", err)
	}
	if _, err := LoadQueries(write("bad.jsonl", "{\"id\":\"a\",\"query\":\"q\",\"relevant\":[\"s::t\"]}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad query line: %v", err)
	}
	if _, err := LoadQueries(write("norel.jsonl", `{"id":"a","query":"q","relevant":[]}`)); err == nil || !strings.Contains(err.Error(), "no relevant") {
		t.Errorf("query without relevant tools: %v", err)
	}
	qs, err := LoadQueries(write("ok.jsonl", "\n{\"id\":\"a\",\"query\":\"q\",\"relevant\":[\"s::t\"]}\n\n"))
	if err != nil || len(qs) != 1 || qs[0].Relevant[0] != "s::t" {
		t.Errorf("good queries: %+v, %v", qs, err)
	}
}
