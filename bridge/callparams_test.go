package bridge

import (
	"encoding/json"
	"reflect"
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
