package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxJSONPathSegments bounds a json_query path.
const maxJSONPathSegments = 100

type jsonValidation struct {
	Valid  bool   `json:"valid" jsonschema:"whether the text is one well-formed JSON value"`
	Type   string `json:"type" jsonschema:"the top-level type when valid: object, array, string, number, boolean or null"`
	Error  string `json:"error" jsonschema:"what is wrong, when invalid"`
	Line   int    `json:"line" jsonschema:"1-based line of the error (0 when valid)"`
	Column int    `json:"column" jsonschema:"1-based column of the error (0 when valid)"`
}

type jsonText struct {
	JSON  string `json:"json" jsonschema:"the resulting JSON text"`
	Bytes int    `json:"bytes" jsonschema:"its length in bytes"`
}

type jsonQueryResult struct {
	Path  string `json:"path" jsonschema:"the path as given"`
	Type  string `json:"type" jsonschema:"the type of the value found"`
	Value any    `json:"value" jsonschema:"the value found at the path"`
}

type jsonKeys struct {
	Keys  []string `json:"keys" jsonschema:"the object's keys, sorted"`
	Count int      `json:"count" jsonschema:"number of keys"`
}

type jsonMerged struct {
	Result any `json:"result" jsonschema:"the target with the patch applied"`
}

const (
	descJSONIn = "The JSON text (up to 1 MiB)."
	descPath   = "Dotted path into the document: object keys and array indexes, e.g. \"users.0.name\" or \"users[0].name\"; quote keys containing dots as [\"a.b\"]. Empty or \".\" is the whole document."
)

// jsonTools returns the json server's tools.
func jsonTools() []toolDef {
	return []toolDef{
		{newTool("json_validate",
			"Check whether a text is well-formed JSON. Invalid JSON is a normal answer (valid false, with the error, line and column), not a tool error.",
			mcp.WithString("json", mcp.Required(), mcp.Description(descJSONIn)),
			mcp.WithOutputSchema[jsonValidation](), readOnly(),
		), jsonValidate},
		{newTool("json_pretty",
			"Pretty-print JSON with indentation, optionally sorting object keys.",
			mcp.WithString("json", mcp.Required(), mcp.Description(descJSONIn)),
			mcp.WithInteger("indent", mcp.Description("Spaces per level, 0-8 (default 2); 0 uses a tab."), mcp.Min(0), mcp.Max(8), mcp.DefaultNumber(2)),
			mcp.WithBoolean("sort_keys", mcp.Description("Sort object keys alphabetically (default false: keep their order)."), mcp.DefaultBool(false)),
			mcp.WithOutputSchema[jsonText](), readOnly(),
		), jsonPretty},
		{newTool("json_minify",
			"Remove all insignificant whitespace from JSON.",
			mcp.WithString("json", mcp.Required(), mcp.Description(descJSONIn)),
			mcp.WithOutputSchema[jsonText](), readOnly(),
		), jsonMinify},
		{newTool("json_query",
			"Extract the value at a dotted path from a JSON document, e.g. \"store.books.0.title\". A missing key or index is an error naming it and the keys that exist.",
			mcp.WithString("json", mcp.Required(), mcp.Description(descJSONIn)),
			mcp.WithString("path", mcp.Required(), mcp.Description(descPath)),
			mcp.WithOutputSchema[jsonQueryResult](), readOnly(),
		), jsonQuery},
		{newTool("json_keys",
			"List the keys of a JSON object (the whole document, or the object at a path).",
			mcp.WithString("json", mcp.Required(), mcp.Description(descJSONIn)),
			mcp.WithString("path", mcp.Description(descPath)),
			mcp.WithOutputSchema[jsonKeys](), readOnly(),
		), jsonKeysTool},
		{newTool("json_merge_patch",
			"Apply a JSON Merge Patch (RFC 7386) to a JSON document: patch keys replace target keys, nested objects merge, and null deletes a key.",
			mcp.WithString("target", mcp.Required(), mcp.Description("The JSON document to patch.")),
			mcp.WithString("patch", mcp.Required(), mcp.Description("The merge patch, a JSON document, e.g. {\"a\": 1, \"b\": null}.")),
			mcp.WithOutputSchema[jsonMerged](), readOnly(),
		), jsonMergePatch},
	}
}

// decodeJSON parses exactly one JSON value, keeping numbers exact.
func decodeJSON(key, s string) (any, error) {
	v, jerr := decodeOne(s)
	if jerr != nil {
		line, col := jerr.position(s)
		return nil, fmt.Errorf("argument %q is not valid JSON: %s (line %d, column %d)", key, jerr.msg, line, col)
	}
	return v, nil
}

// jsonError is a JSON decoding failure with the byte offset it refers to.
type jsonError struct {
	msg    string
	offset int64
}

func (e *jsonError) Error() string { return e.msg }

// decodeOne decodes one JSON value, keeping numbers exact, and rejects
// anything after it.
func decodeOne(s string) (any, *jsonError) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil, &jsonError{"the input is empty", 0}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &jsonError{"unexpected end of input", int64(len(s))}
		case errors.As(err, &se):
			// Offset is just past the offending byte; point at the byte.
			return nil, &jsonError{se.Error(), max(se.Offset-1, 0)}
		}
		return nil, &jsonError{err.Error(), dec.InputOffset()}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rest := s[end:]
		end += int64(len(rest) - len(strings.TrimLeft(rest, " \t\r\n")))
		return nil, &jsonError{"unexpected data after the JSON value", end}
	}
	return v, nil
}

// position turns the error's byte offset in s into a 1-based line and
// column.
func (e *jsonError) position(s string) (line, col int) {
	off := min(max(e.offset, 0), int64(len(s)))
	before := s[:off]
	line = strings.Count(before, "\n") + 1
	col = len(before) - strings.LastIndex(before, "\n")
	return line, col
}

// withArticle prefixes a JSON type name with "a" or "an".
func withArticle(typ string) string {
	if strings.ContainsAny(typ[:1], "aeiou") {
		return "an " + typ
	}
	return "a " + typ
}

func jsonTypeOf(v any) string {
	if _, ok := v.(json.Number); ok {
		return "number"
	}
	return jsonType(v)
}

func jsonValidate(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("json")
	if err != nil {
		return nil, err
	}
	v, jerr := decodeOne(s)
	if jerr != nil {
		line, col := jerr.position(s)
		out := jsonValidation{Valid: false, Type: "", Error: jerr.msg, Line: line, Column: col}
		return structured(out, fmt.Sprintf("invalid JSON: %s (line %d, column %d)", out.Error, line, col))
	}
	out := jsonValidation{Valid: true, Type: jsonTypeOf(v)}
	return structured(out, "valid JSON "+out.Type)
}

// encodeJSON encodes v; Go's encoder sorts map keys, so decoding then
// encoding is how sort_keys works.
func encodeJSON(v any, indent string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encoding JSON: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func jsonTextOut(s string) (*mcp.CallToolResult, error) {
	if len(s) > maxResultTextBytes {
		return nil, fmt.Errorf("the result would be %d bytes, the limit is %d", len(s), maxResultTextBytes)
	}
	return structured(jsonText{JSON: s, Bytes: len(s)}, s)
}

func jsonPretty(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("json")
	if err != nil {
		return nil, err
	}
	n, err := a.optInteger("indent", 2, 0, 8)
	if err != nil {
		return nil, err
	}
	sortKeys, err := a.optBool("sort_keys", false)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON("json", s)
	if err != nil {
		return nil, err
	}
	indent := strings.Repeat(" ", int(n))
	if n == 0 {
		indent = "\t"
	}
	if sortKeys {
		out, err := encodeJSON(v, indent)
		if err != nil {
			return nil, err
		}
		return jsonTextOut(out)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(strings.TrimSpace(s)), "", indent); err != nil {
		return nil, fmt.Errorf("argument \"json\" is not valid JSON: %w", err)
	}
	return jsonTextOut(b.String())
}

func jsonMinify(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("json")
	if err != nil {
		return nil, err
	}
	if _, err := decodeJSON("json", s); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, fmt.Errorf("argument \"json\" is not valid JSON: %w", err)
	}
	return jsonTextOut(b.String())
}

// splitPath splits "a.b[0].c" or `a["x.y"].1` into segments.
func splitPath(path string) ([]string, error) {
	p := strings.TrimSpace(path)
	if p == "" || p == "." || p == "$" {
		return nil, nil
	}
	p = strings.TrimPrefix(strings.TrimPrefix(p, "$"), ".")
	var segs []string
	for p != "" {
		if len(segs) >= maxJSONPathSegments {
			return nil, fmt.Errorf("path has more than %d segments", maxJSONPathSegments)
		}
		switch {
		case strings.HasPrefix(p, "[\""):
			end := strings.Index(p[2:], "\"]")
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [\"...\"]", path)
			}
			segs = append(segs, p[2:2+end])
			p = p[2+end+2:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", path)
			}
			segs = append(segs, strings.TrimSpace(p[1:end]))
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			if end == 0 {
				return nil, fmt.Errorf("path %q has an empty segment", path)
			}
			segs = append(segs, p[:end])
			p = p[end:]
		}
		if strings.HasPrefix(p, ".") {
			p = p[1:]
			if p == "" {
				return nil, fmt.Errorf("path %q ends with a dot", path)
			}
		}
	}
	return segs, nil
}

// walkPath follows path through v.
func walkPath(v any, path string) (any, error) {
	segs, err := splitPath(path)
	if err != nil {
		return nil, err
	}
	cur := v
	for i, seg := range segs {
		at := strings.Join(segs[:i], ".")
		if at == "" {
			at = "the document root"
		} else {
			at = strconv.Quote(at)
		}
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				keys := sortedKeys(c)
				if len(keys) > 20 {
					keys = append(keys[:20], "…")
				}
				return nil, fmt.Errorf("key %q not found at %s (keys: %s)", seg, at, strings.Join(keys, ", "))
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(seg)
			if err != nil {
				return nil, fmt.Errorf("%s is an array: segment %q must be an index", at, seg)
			}
			if idx < 0 {
				idx += len(c) // -1 is the last element
			}
			if idx < 0 || idx >= len(c) {
				return nil, fmt.Errorf("index %s out of range at %s (length %d)", seg, at, len(c))
			}
			cur = c[idx]
		default:
			return nil, fmt.Errorf("cannot look up %q: the value at %s is %s, not an object or array", seg, at, withArticle(jsonTypeOf(cur)))
		}
	}
	return cur, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func jsonQuery(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("json")
	if err != nil {
		return nil, err
	}
	path, err := a.str("path")
	if err != nil {
		return nil, err
	}
	doc, err := decodeJSON("json", s)
	if err != nil {
		return nil, err
	}
	v, err := walkPath(doc, path)
	if err != nil {
		return nil, err
	}
	text, err := encodeJSON(v, "")
	if err != nil {
		return nil, err
	}
	return structured(jsonQueryResult{Path: path, Type: jsonTypeOf(v), Value: v}, text)
}

func jsonKeysTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("json")
	if err != nil {
		return nil, err
	}
	path, err := a.optStr("path", "")
	if err != nil {
		return nil, err
	}
	doc, err := decodeJSON("json", s)
	if err != nil {
		return nil, err
	}
	v, err := walkPath(doc, path)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the value at path %q is %s, not an object", path, withArticle(jsonTypeOf(v)))
	}
	keys := sortedKeys(obj)
	return structured(jsonKeys{Keys: keys, Count: len(keys)}, strings.Join(keys, "\n"))
}

// mergePatch applies an RFC 7386 merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

func jsonMergePatch(_ context.Context, a args) (*mcp.CallToolResult, error) {
	ts, err := a.str("target")
	if err != nil {
		return nil, err
	}
	ps, err := a.str("patch")
	if err != nil {
		return nil, err
	}
	target, err := decodeJSON("target", ts)
	if err != nil {
		return nil, err
	}
	patch, err := decodeJSON("patch", ps)
	if err != nil {
		return nil, err
	}
	out := mergePatch(target, patch)
	text, err := encodeJSON(out, "  ")
	if err != nil {
		return nil, err
	}
	if len(text) > maxResultTextBytes {
		return nil, fmt.Errorf("the result would be %d bytes, the limit is %d", len(text), maxResultTextBytes)
	}
	return structured(jsonMerged{Result: out}, text)
}
