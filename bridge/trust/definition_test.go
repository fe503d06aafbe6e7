package trust

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func ptr(b bool) *bool { return &b }

func sample() Definition {
	return Definition{
		Name:         "create_issue",
		Title:        "Create issue",
		Description:  "Creates an issue in a repository.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"n":{"type":"integer","maximum":10}},"required":["title"]}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations:  Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(false)},
	}
}

func TestHashIgnoresEncoding(t *testing.T) {
	a := sample()
	b := sample()
	// Same schema, other key order and spacing: the same definition.
	b.InputSchema = json.RawMessage(` { "required" : ["title"], "properties": {"n": {"maximum": 10, "type": "integer"}, "title": {"type":"string"}}, "type": "object" }`)
	if a.Hash() != b.Hash() {
		t.Fatalf("hash differs for the same schema in another encoding: %s vs %s", a.Hash(), b.Hash())
	}
	if !strings.HasPrefix(a.Hash(), "sha256:") || len(a.Hash()) != len("sha256:")+64 {
		t.Fatalf("hash %q is not sha256:<64 hex>", a.Hash())
	}
	// Absent, empty and null schemas are the same absence.
	c, d := sample(), sample()
	c.OutputSchema, d.OutputSchema = nil, json.RawMessage(" null ")
	if c.Hash() != d.Hash() {
		t.Fatal("null output schema hashes unlike an absent one")
	}
}

func TestChangedFields(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Definition)
		want   []string
	}{
		{"nothing", func(*Definition) {}, nil},
		{"name", func(d *Definition) { d.Name = "create_issue2" }, []string{FieldName}},
		{"title", func(d *Definition) { d.Title = "Make issue" }, []string{FieldTitle}},
		{"description", func(d *Definition) { d.Description += " <IMPORTANT>x</IMPORTANT>" }, []string{FieldDescription}},
		{"input schema", func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"n":{"type":"integer","maximum":11}},"required":["title"]}`)
		}, []string{FieldInputSchema}},
		{"number spelling", func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"n":{"type":"integer","maximum":10.0}},"required":["title"]}`)
		}, []string{FieldInputSchema}},
		{"output schema dropped", func(d *Definition) { d.OutputSchema = nil }, []string{FieldOutputSchema}},
		{"annotation flipped", func(d *Definition) { d.Annotations.DestructiveHint = ptr(true) }, []string{FieldAnnotations}},
		{"annotation removed", func(d *Definition) { d.Annotations.DestructiveHint = nil }, []string{FieldAnnotations}},
		{"annotation title", func(d *Definition) { d.Annotations.Title = "x" }, []string{FieldAnnotations}},
		{"two fields", func(d *Definition) { d.Title = ""; d.Description = "" }, []string{FieldTitle, FieldDescription}},
	}
	base := sample()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := sample()
			tc.change(&d)
			if got := ChangedFields(base, d); !slices.Equal(got, tc.want) {
				t.Errorf("ChangedFields = %v, want %v", got, tc.want)
			}
			if same := base.Hash() == d.Hash(); same != (tc.want == nil) {
				t.Errorf("hash equal = %v, but changed fields are %v", same, tc.want)
			}
		})
	}
}

func TestAnnotations(t *testing.T) {
	tests := []struct {
		name                  string
		a                     Annotations
		readOnly, destructive bool
		hints                 []string
	}{
		{"none: MCP defaults count it destructive", Annotations{}, false, true, nil},
		{"read-only", Annotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)}, true, false, []string{HintReadOnly, HintClosedWorld}},
		{"read-only beats destructive", Annotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(true)}, true, false, []string{HintReadOnly}},
		{"explicitly destructive", Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(true)}, false, true, []string{HintDestructive, HintIdempotent}},
		{"additive write", Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, false, false, []string{HintOpenWorld}},
		{"only a title", Annotations{Title: "T"}, false, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.ReadOnly(); got != tc.readOnly {
				t.Errorf("ReadOnly = %v, want %v", got, tc.readOnly)
			}
			if got := tc.a.Destructive(); got != tc.destructive {
				t.Errorf("Destructive = %v, want %v", got, tc.destructive)
			}
			if got := tc.a.Hints(); !slices.Equal(got, tc.hints) {
				t.Errorf("Hints = %v, want %v", got, tc.hints)
			}
		})
	}
}
