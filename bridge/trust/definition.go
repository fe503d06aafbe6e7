// Package trust decides which upstream tools toolbridge may show and run.
//
// It pins each tool's definition the first time toolbridge sees it (trust
// on first use) and holds a tool whose pinned definition later changes (a
// "rug pull") until a person approves the change. It flags descriptions
// that read like instructions to the model (tool poisoning), and it reads
// the MCP tool annotations (read-only, destructive, ...) for search
// filters and the destructive-call policy.
//
// The package knows no MCP library types: callers convert a tool into a
// Definition. Pins live in the state directory, one JSON file per server.
package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Definition is the part of an MCP tool that a pin covers: everything the
// model reads or relies on. A change to any field is a change of the tool.
type Definition struct {
	// Name is the tool's name on its upstream.
	Name string `json:"name"`
	// Title is the tool's display title.
	Title string `json:"title,omitempty"`
	// Description is what the model reads to decide on a call.
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema are the JSON Schemas, raw.
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the behaviour hints.
	Annotations Annotations `json:"annotations,omitzero"`
}

// Annotations are the MCP tool annotations. The hints are pointers because
// an absent hint has a default in the MCP specification that differs from
// false (see ReadOnly and Destructive).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Fields of a Definition, as diffs and reasons name them.
const (
	FieldName         = "name"
	FieldTitle        = "title"
	FieldDescription  = "description"
	FieldInputSchema  = "inputSchema"
	FieldOutputSchema = "outputSchema"
	FieldAnnotations  = "annotations"
)

// canonical returns d with its schemas in canonical JSON (object keys
// sorted, no insignificant space, numbers as written), so that two
// encodings of the same schema hash the same. A schema that is not valid
// JSON is kept byte for byte: it still hashes, and any change to it shows.
func (d Definition) canonical() Definition {
	d.InputSchema = canonicalJSON(d.InputSchema)
	d.OutputSchema = canonicalJSON(d.OutputSchema)
	return d
}

func canonicalJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// Hash is the definition's fingerprint: "sha256:" and the hex SHA-256 of
// its canonical JSON encoding.
func (d Definition) Hash() string { return d.hashOf(d.canonical()) }

// digest returns d's Hash and field prints, canonicalizing it once.
func (d Definition) digest() (string, fieldPrints) {
	c := d.canonical()
	return d.hashOf(c), c.canonicalPrints()
}

// hashOf is Hash given c, d.canonical().
func (d Definition) hashOf(c Definition) string {
	b, err := json.Marshal(c)
	if err != nil {
		// Only reachable with a RawMessage that is neither valid JSON nor
		// canonicalizable; hash the fields' text instead so it still pins.
		b = fmt.Appendf(nil, "%q", []any{d.Name, d.Title, d.Description, string(d.InputSchema), string(d.OutputSchema), d.Annotations})
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ChangedFields names the fields that differ between old and new, in
// definition order.
func ChangedFields(old, new Definition) []string {
	o, n := old.canonical(), new.canonical()
	var out []string
	if o.Name != n.Name {
		out = append(out, FieldName)
	}
	if o.Title != n.Title {
		out = append(out, FieldTitle)
	}
	if o.Description != n.Description {
		out = append(out, FieldDescription)
	}
	if !bytes.Equal(o.InputSchema, n.InputSchema) {
		out = append(out, FieldInputSchema)
	}
	if !bytes.Equal(o.OutputSchema, n.OutputSchema) {
		out = append(out, FieldOutputSchema)
	}
	if annotationsText(o.Annotations) != annotationsText(n.Annotations) {
		out = append(out, FieldAnnotations)
	}
	return out
}

// fieldOrder is the definition's fields in the order ChangedFields names
// them, and the order of fieldPrints.
var fieldOrder = [...]string{FieldName, FieldTitle, FieldDescription, FieldInputSchema, FieldOutputSchema, FieldAnnotations}

// fieldPrints digest each field of a definition in the canonical form
// ChangedFields compares, so that the fields a change touched can be named
// without keeping the pinned definition. 128 bits each: finding two texts
// of one digest takes about 2^64 tries, so a server cannot make a changed
// field look unchanged (and the whole hash still catches the change).
type fieldPrints [len(fieldOrder)][16]byte

// prints returns d's field prints.
func (d Definition) prints() fieldPrints { return d.canonical().canonicalPrints() }

// canonicalPrints is prints of a canonical definition.
func (c Definition) canonicalPrints() fieldPrints {
	var p fieldPrints
	for i, field := range [...][]byte{
		[]byte(c.Name), []byte(c.Title), []byte(c.Description),
		c.InputSchema, c.OutputSchema, []byte(annotationsText(c.Annotations)),
	} {
		sum := sha256.Sum256(field)
		copy(p[i][:], sum[:])
	}
	return p
}

// changedSince names the fields of d that differ from the definition
// pinned as old: ChangedFields without the old definition.
func changedSince(old fieldPrints, d Definition) []string {
	now := d.prints()
	var out []string
	for i, field := range fieldOrder {
		if now[i] != old[i] {
			out = append(out, field)
		}
	}
	return out
}

// annotationsText is the annotations as canonical JSON ("" when empty).
func annotationsText(a Annotations) string {
	if a == (Annotations{}) {
		return ""
	}
	b, _ := json.Marshal(a) // a struct of strings and bools always encodes
	return string(b)
}

// ReadOnly reports whether the tool says it does not modify its
// environment. Absent, readOnlyHint defaults to false.
func (a Annotations) ReadOnly() bool {
	return a.ReadOnlyHint != nil && *a.ReadOnlyHint
}

// Destructive reports whether the tool may perform destructive updates, as
// the MCP specification defines it: never for a read-only tool; otherwise
// true unless destructiveHint is false, so a tool without annotations
// counts as destructive.
func (a Annotations) Destructive() bool {
	if a.ReadOnly() {
		return false
	}
	return a.DestructiveHint == nil || *a.DestructiveHint
}

// Annotated reports whether the tool gave any behaviour hint.
func (a Annotations) Annotated() bool {
	return a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.IdempotentHint != nil || a.OpenWorldHint != nil
}

// Hint words, as Hints returns them.
const (
	HintReadOnly    = "read-only"
	HintDestructive = "destructive"
	HintIdempotent  = "idempotent"
	HintOpenWorld   = "open-world"
	HintClosedWorld = "closed-world"
)

// Hints renders the hints the tool gave explicitly, compactly, for search
// hits and listings: read-only or destructive, then idempotent, then
// open-world or closed-world. Defaults are not rendered: a tool that says
// nothing gets no words, so the reader can tell "unknown" from "no".
func (a Annotations) Hints() []string {
	var out []string
	switch {
	case a.ReadOnly():
		out = append(out, HintReadOnly)
	case a.DestructiveHint != nil && *a.DestructiveHint:
		out = append(out, HintDestructive)
	}
	if a.IdempotentHint != nil && *a.IdempotentHint {
		out = append(out, HintIdempotent)
	}
	if a.OpenWorldHint != nil {
		if *a.OpenWorldHint {
			out = append(out, HintOpenWorld)
		} else {
			out = append(out, HintClosedWorld)
		}
	}
	return out
}
