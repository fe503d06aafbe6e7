package bridge

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// convertSchema has every shape a string may be converted into.
const convertSchema = `{
  "type": "object",
  "properties": {
    "n":     {"type": "number"},
    "i":     {"type": "integer", "minimum": 1},
    "b":     {"type": "boolean"},
    "s":     {"type": "string"},
    "either": {"type": ["integer", "string"]},
    "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "flags": {"type": "array", "items": {"type": "boolean"}},
    "inner": {"type": "object", "properties": {"count": {"type": "integer"}}}
  },
  "additionalProperties": false
}`

// TestValidateConvertsExactStrings: a string where the schema wants a
// number, integer or boolean is converted when it is exactly that type's
// literal and the result is valid; anything else keeps its error and the
// arguments are forwarded as given.
func TestValidateConvertsExactStrings(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    string // the arguments forwarded
		problem string // a violation that must be reported; "" for none
	}{
		{"number", `{"n":"3.5"}`, `{"n":3.5}`, ""},
		{"negative exponent number", `{"n":"-1.5e-3"}`, `{"n":-1.5e-3}`, ""},
		{"integer", `{"i":"42"}`, `{"i":42}`, ""},
		{"integer beyond int64", `{"i":"123456789012345678901234567890"}`, `{"i":123456789012345678901234567890}`, ""},
		{"boolean true", `{"b":"true"}`, `{"b":true}`, ""},
		{"boolean false", `{"b":"false"}`, `{"b":false}`, ""},
		{"several at once, others kept", `{"n":"1","i":"2","b":"true","s":"<a&b>"}`, `{"b":true,"i":2,"n":1,"s":"<a&b>"}`, ""},
		{"anyOf branch", `{"maybe":"7"}`, `{"maybe":7}`, ""},
		{"array items", `{"flags":["true",false,"false"]}`, `{"flags":[true,false,false]}`, ""},
		{"nested object", `{"inner":{"count":"3"}}`, `{"inner":{"count":3}}`, ""},
		{"valid arguments untouched", `{"n": 1, "s": "2"}`, `{"n": 1, "s": "2"}`, ""},
		{"string allowed: no conversion", `{"either":"5"}`, `{"either":"5"}`, ""},

		{"not a number", `{"n":"three"}`, `{"n":"three"}`, "at /n: got string, want number"},
		{"spaces around", `{"n":" 3"}`, `{"n":" 3"}`, "at /n: got string, want number"},
		{"plus sign", `{"n":"+3"}`, `{"n":"+3"}`, "at /n"},
		{"hex", `{"i":"0x10"}`, `{"i":"0x10"}`, "at /i"},
		{"leading zero", `{"i":"007"}`, `{"i":"007"}`, "at /i"},
		{"fraction for integer", `{"i":"1.0"}`, `{"i":"1.0"}`, "at /i: got string, want integer"},
		{"exponent for integer", `{"i":"1e3"}`, `{"i":"1e3"}`, "at /i"},
		{"NaN", `{"n":"NaN"}`, `{"n":"NaN"}`, "at /n"},
		{"Infinity", `{"n":"Infinity"}`, `{"n":"Infinity"}`, "at /n"},
		{"empty string", `{"n":""}`, `{"n":""}`, "at /n"},
		{"capitalised boolean", `{"b":"True"}`, `{"b":"True"}`, "at /b: got string, want boolean"},
		{"yes is not a boolean", `{"b":"yes"}`, `{"b":"yes"}`, "at /b"},
		{"number for boolean", `{"b":"1"}`, `{"b":"1"}`, "at /b"},
		{"converted but out of range", `{"i":"0"}`, `{"i":"0"}`, "at /i: minimum"},
		{"one converts, one does not", `{"n":"1","b":"maybe"}`, `{"n":"1","b":"maybe"}`, "at /b: got string, want boolean"},
		{"other errors stay", `{"n":"1","zzz":true}`, `{"n":"1","zzz":true}`, "additional properties"},
	}
	v := newValidators()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := v.validateArgs([]byte(convertSchema), []byte(tt.args))
			if string(got) != tt.want {
				t.Errorf("forwarded %s, want %s", got, tt.want)
			}
			joined := strings.Join(problems, "\n")
			if tt.problem == "" && len(problems) > 0 {
				t.Errorf("problems %q, want none", joined)
			}
			if tt.problem != "" && !strings.Contains(joined, tt.problem) {
				t.Errorf("problems %q, want one containing %q", joined, tt.problem)
			}
			if tt.problem != "" && strings.Contains(tt.name, "one converts") && strings.Contains(joined, "/n") {
				t.Errorf("reported %q, which converted fine", joined)
			}
		})
	}
}

// FuzzValidateConversion: whatever the arguments, validation never
// panics; what it forwards after a conversion is valid, and differs from
// the input only where strings became numbers or booleans.
func FuzzValidateConversion(f *testing.F) {
	for _, seed := range []string{
		`{"n":"3.5"}`, `{"i":"42"}`, `{"b":"true"}`, `{"flags":["true","x"]}`, `{"inner":{"count":"-0"}}`,
		`{"n":"1e400"}`, `{"i":"-"}`, `{"n":"1."}`, `{"n":".5"}`, `{"maybe":"null"}`, `{"i":"9223372036854775808"}`,
		`{"n":"١٢"}`, `{"b":"true\u0000"}`, `{}`, `[]`, `"x"`, `{"flags":{"0":"true"}}`,
	} {
		f.Add(seed)
	}
	v := newValidators()
	f.Fuzz(func(t *testing.T, args string) {
		got, problems := v.validateArgs([]byte(convertSchema), []byte(args))
		if string(got) == args {
			return
		}
		if len(problems) > 0 {
			t.Fatalf("forwarded changed arguments %s with problems %q", got, problems)
		}
		if _, again := v.validateArgs([]byte(convertSchema), got); len(again) > 0 {
			t.Fatalf("forwarded %s (from %s), which does not validate: %q", got, args, again)
		}
	})
}

// TestValidateIsStrict: checking a result (structuredContent against an
// output schema) converts nothing, as strict clients do not.
func TestValidateIsStrict(t *testing.T) {
	if problems := newValidators().validate([]byte(convertSchema), []byte(`{"n":"3"}`)); len(problems) == 0 {
		t.Fatal(`validate accepted "3" for a number; only tool arguments are converted`)
	}
}

// FuzzDecodeInstance holds decodeInstance to jsonschema.UnmarshalJSON:
// the same instance for every document, and an error for the same ones.
func FuzzDecodeInstance(f *testing.F) {
	for _, seed := range []string{
		`{"text":"hello"}`, `{}`, `[]`, `null`, ` {"a": [1, -2.5e3, true, false, null, "x", {"b": []}]} `,
		`{"a":1,"a":2}`, `{"\u0061":1}`, `{"é":1}`, `{"s":"esc\n\u00e9"}`, `{"s":"bad \xff"}`,
		"{\"s\":\"bad \xff\"}", `"str"`, `12`, `{"a":1} x`, `{"a":}`, ``, `[1,,2]`, `0.0e-0`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, gotErr := decodeInstance([]byte(doc))
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("decodeInstance(%q) error %v, jsonschema.UnmarshalJSON %v", doc, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeInstance(%q) = %#v, jsonschema.UnmarshalJSON %#v", doc, got, want)
		}
	})
}

// TestDecodeInstanceAllocations: a call's plain arguments are decoded
// with a handful of allocations (the map, its keys, the values), not the
// 12 of jsonschema.UnmarshalJSON's decoder for this document.
func TestDecodeInstanceAllocations(t *testing.T) {
	doc := []byte(`{"text":"hello","n":3}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeInstance(doc) }); n > 6 {
		t.Errorf("decodeInstance: %v allocations, want at most 6", n)
	}
}
