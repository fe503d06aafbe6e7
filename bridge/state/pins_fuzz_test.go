package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/trust"
)

// FuzzDecodePin: whatever someone else wrote into a pin's hash field,
// decoding it never panics, and what it accepts is a pin of the tool it
// is filed under, with a well-formed hash and a time.
func FuzzDecodePin(f *testing.F) {
	good, _ := json.Marshal(trust.NewPin(trust.Definition{Name: "create_issue", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}, time.Unix(1700000000, 0), true))
	f.Add("create_issue", good)
	f.Add("other", good)
	f.Add("t", []byte(`{"hash":"sha256:`+string(make([]byte, 0))+`","pinned_at":"2026-01-01T00:00:00Z","definition":{"name":"t"}}`))
	f.Add("t", []byte(`{"hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","pinned_at":"0001-01-01T00:00:00Z","definition":{"name":"t"}}`))
	f.Add("t", []byte(`null`))
	f.Add("", []byte(`{}`))
	f.Add("t", []byte(`{"definition":{"name":"t","inputSchema":[[[[[]]]]]}}`))
	f.Fuzz(func(t *testing.T, tool string, raw []byte) {
		pin, err := decodePin(tool, raw)
		if err != nil {
			return
		}
		if pin.Definition.Name != tool || !hashForm.MatchString(pin.Hash) || pin.PinnedAt.IsZero() {
			t.Fatalf("accepted %+v for tool %q", pin, tool)
		}
	})
}
