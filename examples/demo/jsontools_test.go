package demo

import (
	"fmt"
	"strings"
	"testing"
)

func TestJSONTools(t *testing.T) {
	c := connect(t, "json")
	doc := `{"store":{"books":[{"title":"Dune","price":9.99,"tags":["sf"]},{"title":"Emma","price":4}],"open":true,"a.b":1}}`
	q := func(path string) string { return fmt.Sprintf(`{"json":%q,"path":%q}`, doc, path) }
	runCases(t, c, []toolCase{
		{name: "valid object", tool: "json_validate", args: `{"json":"{\"a\": [1, 2]}"}`, want: map[string]any{"valid": true, "type": "object", "line": 0}},
		{name: "valid scalar", tool: "json_validate", args: `{"json":" 12.5 "}`, want: map[string]any{"valid": true, "type": "number"}},
		{name: "invalid with position", tool: "json_validate", args: `{"json":"{\n  \"a\": 1,\n  \"b\": }"}`,
			want: map[string]any{"valid": false, "line": 3, "column": 8}, text: "invalid JSON",
			check: func(t *testing.T, got map[string]any) {
				if !strings.Contains(got["error"].(string), "invalid character '}'") {
					t.Errorf("error = %v", got["error"])
				}
			}},
		{name: "trailing data", tool: "json_validate", args: `{"json":"{}  {}"}`, want: map[string]any{"valid": false, "error": "unexpected data after the JSON value", "column": 5}},
		{name: "truncated", tool: "json_validate", args: `{"json":"[1, 2"}`, want: map[string]any{"valid": false, "error": "unexpected end of input", "column": 6}},
		{name: "empty", tool: "json_validate", args: `{"json":"  "}`, want: map[string]any{"valid": false, "error": "the input is empty"}},
		{name: "pretty", tool: "json_pretty", args: `{"json":"{\"b\":1,\"a\":[true,null]}"}`, want: map[string]any{"json": "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null\n  ]\n}"}},
		{name: "pretty sorted with 4 spaces", tool: "json_pretty", args: `{"json":"{\"b\":1,\"a\":2}","indent":4,"sort_keys":true}`, want: map[string]any{"json": "{\n    \"a\": 2,\n    \"b\": 1\n}"}},
		{name: "pretty keeps big numbers exact", tool: "json_pretty", args: `{"json":"[12345678901234567890]","sort_keys":true}`, want: map[string]any{"json": "[\n  12345678901234567890\n]"}},
		{name: "minify", tool: "json_minify", args: `{"json":"{ \"a\" : [ 1 , 2 ] ,\n \"b\" : \"x y\" }"}`, want: map[string]any{"json": `{"a":[1,2],"b":"x y"}`, "bytes": 21}},
		{name: "query nested", tool: "json_query", args: q("store.books.0.title"), want: map[string]any{"value": "Dune", "type": "string"}, text: `"Dune"`},
		{name: "query brackets", tool: "json_query", args: q("store.books[1].price"), want: map[string]any{"value": 4, "type": "number"}},
		{name: "query negative index", tool: "json_query", args: q("store.books[-1].title"), want: map[string]any{"value": "Emma"}},
		{name: "query quoted key", tool: "json_query", args: q(`store["a.b"]`), want: map[string]any{"value": 1}},
		{name: "query subtree", tool: "json_query", args: q("store.books.0.tags"), want: map[string]any{"value": []string{"sf"}, "type": "array"}},
		{name: "query root", tool: "json_query", args: fmt.Sprintf(`{"json":"[1]","path":""}`), want: map[string]any{"value": []int{1}, "type": "array"}},
		{name: "keys", tool: "json_keys", args: q("store"), want: map[string]any{"keys": []string{"a.b", "books", "open"}, "count": 3}},
		{name: "keys of root", tool: "json_keys", args: fmt.Sprintf(`{"json":%q}`, doc), want: map[string]any{"keys": []string{"store"}}},
		{name: "merge patch", tool: "json_merge_patch", args: `{"target":"{\"a\":1,\"b\":{\"c\":2,\"d\":3}}","patch":"{\"a\":null,\"b\":{\"c\":20},\"e\":[1]}"}`,
			want: map[string]any{"result": map[string]any{"b": map[string]any{"c": 20, "d": 3}, "e": []int{1}}}},
		{name: "merge patch replaces non-object", tool: "json_merge_patch", args: `{"target":"[1,2]","patch":"{\"x\":1}"}`, want: map[string]any{"result": map[string]any{"x": 1}}},

		// Broken input.
		{name: "query missing key", tool: "json_query", args: q("store.movies"), errHas: []string{`key "movies" not found at "store"`, "keys: a.b, books, open"}},
		{name: "query index out of range", tool: "json_query", args: q("store.books.5"), errHas: []string{`index 5 out of range at "store.books" (length 2)`}},
		{name: "query index into object", tool: "json_query", args: q("store.books.first"), errHas: []string{`segment "first" must be an index`}},
		{name: "query through a scalar", tool: "json_query", args: q("store.open.x"), errHas: []string{"is a boolean, not an object or array"}},
		{name: "query bad path", tool: "json_query", args: q("store..books"), errHas: []string{"empty segment"}},
		{name: "query unclosed bracket", tool: "json_query", args: q("store.books[0"), errHas: []string{"unclosed ["}},
		{name: "query invalid json", tool: "json_query", args: `{"json":"{\"a\":","path":"a"}`, errHas: []string{`argument "json" is not valid JSON`, "unexpected end of input"}},
		{name: "pretty invalid json", tool: "json_pretty", args: `{"json":"{'a':1}"}`, errHas: []string{`"json" is not valid JSON`, "line 1, column 2"}},
		{name: "minify trailing garbage", tool: "json_minify", args: `{"json":"[1] x"}`, errHas: []string{"unexpected data after the JSON value"}},
		{name: "pretty bad indent", tool: "json_pretty", args: `{"json":"1","indent":9}`, errHas: []string{`"indent" must be between 0 and 8`}},
		{name: "keys of array", tool: "json_keys", args: `{"json":"[1]"}`, errHas: []string{"is an array, not an object"}},
		{name: "merge invalid patch", tool: "json_merge_patch", args: `{"target":"{}","patch":"nope"}`, errHas: []string{`argument "patch" is not valid JSON`}},
		{name: "json not a string", tool: "json_validate", args: `{"json":{"a":1}}`, errHas: []string{`argument "json" must be a string, got object`}},
	})
}

func TestSplitPath(t *testing.T) {
	tests := map[string][]string{
		"":                nil,
		".":               nil,
		"$.a":             {"a"},
		"a.b.0":           {"a", "b", "0"},
		"a[0][1].b":       {"a", "0", "1", "b"},
		`a["x.y"].z`:      {"a", "x.y", "z"},
		`["only"]`:        {"only"},
		"users[ 2 ].name": {"users", "2", "name"},
	}
	for in, want := range tests {
		got, err := splitPath(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("splitPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"a.", "a..b", "a[0", `a["x`, strings.Repeat("a.", 101) + "a"} {
		if _, err := splitPath(bad); err == nil {
			t.Errorf("splitPath(%q) succeeded", bad)
		}
	}
}

// FuzzJSONQuery checks that no document and path make json_query's path
// walker panic.
func FuzzJSONQuery(f *testing.F) {
	f.Add(`{"a":[1,{"b":null}]}`, "a.1.b")
	f.Add(`[[[]]]`, "[0][0][0]")
	f.Add(`{"x.y":1}`, `["x.y"]`)
	f.Add(`1`, "a")
	f.Fuzz(func(t *testing.T, doc, path string) {
		v, jerr := decodeOne(doc)
		if jerr != nil {
			if l, c := jerr.position(doc); l < 1 || c < 1 {
				t.Errorf("position of %v in %q = %d:%d", jerr, doc, l, c)
			}
			return
		}
		_, _ = walkPath(v, path)
	})
}
