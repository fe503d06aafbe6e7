package bridge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestCallParamsMatchesMapEncoding pins that the raw params forward sends
// upstream say what the map they replace said, once the transport's
// encoder has written them: same members, same values, names that need
// escaping included.
func TestCallParamsMatchesMapEncoding(t *testing.T) {
	tests := []struct {
		name string
		args json.RawMessage
		meta map[string]any
	}{
		{"echo", json.RawMessage(`{"text":"hello"}`), nil},
		{"echo", json.RawMessage(" {\n \"text\" : \"<b>&</b>\" } "), map[string]any{"progressToken": "tb-1", "traceparent": "00-abc"}},
		{`we"ird\name<>&`, nil, map[string]any{"k": []any{1.0, "x"}}},
		{"ünïcode\u2028", json.RawMessage(`{}`), map[string]any{}},
	}
	for _, tc := range tests {
		old := map[string]any{"name": tc.name}
		if len(tc.args) > 0 {
			old["arguments"] = tc.args
		}
		if len(tc.meta) > 0 {
			old["_meta"] = tc.meta
		}
		raw, err := callParams(tc.name, tc.args, tc.meta)
		if err != nil {
			t.Fatalf("callParams(%q): %v", tc.name, err)
		}
		// What the transport writes: both through json.Marshal.
		gotWire, err := json.Marshal(struct{ Params any }{raw})
		if err != nil {
			t.Fatalf("encoding raw params of %q: %v", tc.name, err)
		}
		wantWire, err := json.Marshal(struct{ Params any }{old})
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(gotWire, &got); err != nil {
			t.Fatalf("decoding %s: %v", gotWire, err)
		}
		if err := json.Unmarshal(wantWire, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("params of %q:\n got  %s\n want %s", tc.name, gotWire, wantWire)
		}
	}
}

// FuzzSplitObject checks argsObject's fast path against json.Unmarshal:
// whenever splitObject accepts a document it gives the members and values
// json.Unmarshal into a map[string]json.RawMessage gives, and it accepts
// nothing json.Unmarshal refuses.
func FuzzSplitObject(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { } `, `{"tool_name":"up::echo","tool_args":{"text":"hello"}}`,
		"{\n \"a\" : [1, {\"b\": \"}\"}] ,\"c\":null,\"d\":-1.5e3,\"e\":true}",
		`{"a":"x\"y","a":2}`, `{"k\u00e9y":1}`, `{"ké":1}`, `[1]`, `"s"`, `{"a":}`, `null`,
		`{"a":{"b":[[],{}]},"c":"\\"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := map[string]json.RawMessage{}
		ok := splitObject(raw, got)
		var want map[string]json.RawMessage
		err := json.Unmarshal(raw, &want)
		if !ok {
			if len(got) != 0 {
				t.Fatalf("splitObject(%q) declined but left %v", raw, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("splitObject(%q) accepted what json.Unmarshal refuses: %v", raw, err)
		}
		if len(got) != len(want) {
			t.Fatalf("splitObject(%q) = %d members, json.Unmarshal %d", raw, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Fatalf("splitObject(%q)[%q] = %q, json.Unmarshal %q", raw, k, got[k], v)
			}
		}
	})
}

// TestPlainString pins plainString against json.Unmarshal on the strings
// it accepts, and that it declines every escape.
func TestPlainString(t *testing.T) {
	for _, raw := range []string{`"up::echo"`, `""`, `"a\"b"`, `"\u0041"`, `"é"`, `1`, `"`, `"a"b"`} {
		s, ok := plainString([]byte(raw))
		var want string
		err := json.Unmarshal([]byte(raw), &want)
		if ok && (err != nil || s != want) {
			t.Errorf("plainString(%s) = %q, json.Unmarshal %q, %v", raw, s, want, err)
		}
		if !ok && err == nil && raw == `"up::echo"` {
			t.Errorf("plainString(%s) declined a plain id", raw)
		}
	}
}

// TestClipMatchesRunes holds clip to what converting to []rune and back
// gives, invalid UTF-8 included, and checks that a plain cut allocates
// only the result.
func TestClipMatchesRunes(t *testing.T) {
	byRunes := func(s string, max int) string {
		r := []rune(s)
		if len(r) <= max {
			return s
		}
		return string(r[:max-1]) + "…"
	}
	for _, s := range []string{
		"", "a", "hello", "héllo wörld", "日本語のテキスト", "emoji 🙂🙂🙂 here",
		"bad \xff byte", "\xff\xfe\xfd", "ends badly \xe6\x97", "mixed é\xffé\xffé",
		strings.Repeat("long text ", 40),
	} {
		for max := 1; max <= 24; max++ {
			if got, want := clip(s, max), byRunes(s, max); got != want {
				t.Errorf("clip(%q, %d) = %q, want %q", s, max, got, want)
			}
		}
	}
	long := strings.Repeat("a tool description that goes on ", 20)
	if n := testing.AllocsPerRun(100, func() { _ = clip(long, 100) }); n > 1 {
		t.Errorf("clip of a long ASCII string: %v allocations, want 1 (the result)", n)
	}
}
