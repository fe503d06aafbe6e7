package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ParamSummary is one input parameter as tool_search shows it: often
// enough to call the tool without describing it first.
type ParamSummary struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required,omitempty"`
}

// maxEnumInline is how many enum values a summary spells out.
const maxEnumInline = 8

// summarizeParams lists a schema's top-level properties in the schema's
// own order (the order the tool's author chose), with their types; enums
// are written inline (`enum["a","b"]`), arrays as `array<item>`. A tool
// without parameters gets an empty list, never nil: tool_search's output
// schema says parameters is an array, and strict clients (the TypeScript
// SDK) reject a result whose parameters is null.
func summarizeParams(schema json.RawMessage) []ParamSummary {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	out := []ParamSummary{}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return out
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, kv := range orderedObject(s.Properties) {
		out = append(out, ParamSummary{Name: kv.key, Type: typeOf(kv.value), Required: required[kv.key]})
	}
	return out
}

type keyValue struct {
	key   string
	value json.RawMessage
}

// orderedObject returns a JSON object's members in document order; nil if
// raw is not an object.
func orderedObject(raw json.RawMessage) []keyValue {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []keyValue
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return out
		}
		out = append(out, keyValue{key, value})
	}
	return out
}

// typeOf renders a property schema's type compactly.
func typeOf(raw json.RawMessage) string {
	var p struct {
		Type  json.RawMessage   `json:"type"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
		Items json.RawMessage   `json:"items"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
		Ref   string            `json:"$ref"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return "any"
	}
	if len(p.Enum) > 0 {
		vals := make([]string, 0, min(len(p.Enum), maxEnumInline))
		for _, v := range p.Enum[:min(len(p.Enum), maxEnumInline)] {
			vals = append(vals, string(v))
		}
		more := ""
		if len(p.Enum) > maxEnumInline {
			more = fmt.Sprintf(",…+%d", len(p.Enum)-maxEnumInline)
		}
		return "enum[" + strings.Join(vals, ",") + more + "]"
	}
	if len(p.Const) > 0 {
		return "const " + string(p.Const)
	}
	var types []string
	var single string
	if json.Unmarshal(p.Type, &single) == nil && single != "" {
		types = []string{single}
	} else {
		_ = json.Unmarshal(p.Type, &types)
	}
	if len(types) == 0 {
		alts := p.AnyOf
		if len(alts) == 0 {
			alts = p.OneOf
		}
		for _, a := range alts {
			types = append(types, typeOf(a))
		}
		if len(types) == 0 {
			if p.Ref != "" {
				return "object"
			}
			return "any"
		}
	}
	for i, t := range types {
		if t == "array" && len(p.Items) > 0 {
			types[i] = "array<" + typeOf(p.Items) + ">"
		}
	}
	return strings.Join(types, "|")
}
