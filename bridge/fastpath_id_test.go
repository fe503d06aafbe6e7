package bridge

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeID holds decodeID to json.Unmarshal into an any, for every
// string or number id.
func FuzzDecodeID(f *testing.F) {
	for _, seed := range []string{`1`, `-0`, `1.0`, `-1.5e3`, `1e400`, `-1e400`, `4.9e-324`, `1e-400`, `12345678901234567890`,
		`"a"`, `""`, `"a\"b"`, `"\u00e9"`, `"é"`, "\"\xff\"", `"\ud800"`, `"<&>"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		raw = string(trimJSONSpace([]byte(raw))) // as members hands a value over
		if !json.Valid([]byte(raw)) || (raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
			return // fastCallOf reads only a string or number id
		}
		var want any
		werr := json.Unmarshal([]byte(raw), &want)
		got, ok := decodeID([]byte(raw))
		if ok != (werr == nil) || (ok && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeID(%s) = %#v %v, json.Unmarshal %#v %v", raw, got, ok, want, werr)
		}
	})
}
