package bridge

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// plainMetaCases are _meta objects for TestReadPlainMeta and
// FuzzReadPlainMeta: the plain ones readPlainMeta reads, and the ones it
// leaves to the decoder (plain false).
var plainMetaCases = []struct {
	meta  string
	plain bool
}{
	{`{}`, true},
	{` { } `, true},
	{`{"progressToken":"t1"}`, true},
	{`{"progressToken":7}`, true},
	{`{"progressToken":-1.5e3}`, true},
	{`{"progressToken":null}`, true},
	{`{"progressToken":12345678901234567890}`, true},
	{`{"progressToken":"\u00e9t"}`, true},
	{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, true},
	{`{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
	{`{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{ },"tasks":{},"experimental":{},"extensions":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","title":"T","description":"d","websiteUrl":"u"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"debug","progressToken":"p"}`, true},
	{`{"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
	{`{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":false}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
	{`{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientInfo":{"name":"<a&b>"}}`, true},
	{`{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`, true},
	{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
	{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a\"b"},"io.modelcontextprotocol/clientCapabilities":{}}`, true},
	{"{\"progressToken\":\"\xff\"}", true}, // decodeID decodes it as the decoder does
	// Left to the decoder.
	{`{"other":1}`, false},
	{`{"progressToken":"a","progressToken":"b"}`, false},
	{`{"ProgressToken":"a"}`, false},
	{`{"progress\u0054oken":"a"}`, false},
	{`{"progressToken":true}`, false},
	{`{"progressToken":{"a":1}}`, false},
	{`{"progressToken":1e400}`, false},
	{`{"io.modelcontextprotocol/protocolVersion":7}`, false},
	{`{"io.modelcontextprotocol/protocolVersion":null}`, false},
	{`{"io.modelcontextprotocol/logLevel":1}`, false},
	{`{"io.modelcontextprotocol/clientInfo":{"name":"a","Name":"b"}}`, false},
	{`{"io.modelcontextprotocol/clientInfo":{"name":"a","name":"b"}}`, false},
	{`{"io.modelcontextprotocol/clientInfo":{"name":1}}`, false},
	{`{"io.modelcontextprotocol/clientInfo":{"icons":[]}}`, false},
	{`{"io.modelcontextprotocol/clientInfo":"c"}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":{"sampling":{"context":{}}}}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":{"Sampling":{}}}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"sampling":{}}}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true,"listChanged":false}}}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":1}}}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":1}}}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":null}`, false},
	{`{"io.modelcontextprotocol/clientCapabilities":[]}`, false},
	{`{"nested":{"progressToken":"a"}}`, false},
}

// checkPlainMeta fails t when readPlainMeta reads raw otherwise than
// json.Unmarshal into an mcp.Meta and mcp-go's accessors do; it returns
// whether readPlainMeta read raw.
func checkPlainMeta(t *testing.T, raw string) bool {
	t.Helper()
	m, ok := readPlainMeta([]byte(raw))
	if !ok {
		return false
	}
	var want *mcp.Meta
	if err := json.Unmarshal([]byte(raw), &want); err != nil {
		t.Fatalf("readPlainMeta read %s, which the decoder rejects: %v", raw, err)
	}
	if !reflect.DeepEqual(m.meta, want) {
		t.Errorf("readPlainMeta(%s).meta = %#v, the decoder's %#v", raw, m.meta, want)
	}
	if v := want.ProtocolVersion(); m.version != v {
		t.Errorf("readPlainMeta(%s).version = %q, mcp-go's %q", raw, m.version, v)
	}
	if !mcp.IsModernProtocol(m.version) {
		return true
	}
	if v := want.ClientInfo(); !reflect.DeepEqual(m.clientInfo, v) {
		t.Errorf("readPlainMeta(%s).clientInfo = %#v, mcp-go's %#v", raw, m.clientInfo, v)
	}
	if v := want.LogLevel(); m.level != v {
		t.Errorf("readPlainMeta(%s).level = %q, mcp-go's %q", raw, m.level, v)
	}
	if v := want.ClientCapabilities(); !reflect.DeepEqual(m.caps, v) {
		t.Errorf("readPlainMeta(%s).caps = %#v, mcp-go's %#v", raw, m.caps, v)
	}
	return true
}

// TestReadPlainMeta: readPlainMeta reads the plain _meta objects as the
// decoder and mcp-go's accessors do, and leaves every other one to them.
func TestReadPlainMeta(t *testing.T) {
	for _, c := range plainMetaCases {
		if !json.Valid([]byte(c.meta)) {
			t.Fatalf("case %s is not JSON", c.meta)
		}
		if got := checkPlainMeta(t, c.meta); got != c.plain {
			t.Errorf("readPlainMeta(%s) read it: %v, want %v", c.meta, got, c.plain)
		}
	}
}

// FuzzReadPlainMeta holds readPlainMeta to the decoder and mcp-go's
// accessors for any _meta object.
func FuzzReadPlainMeta(f *testing.F) {
	for _, c := range plainMetaCases {
		f.Add(c.meta)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) || raw == "" {
			return
		}
		if i := jsonSpaceEnd(raw); i >= len(raw) || raw[i] != '{' {
			return // readFastParams passes only objects
		}
		checkPlainMeta(t, raw)
	})
}

// jsonSpaceEnd is the index of raw's first byte that is not JSON white
// space.
func jsonSpaceEnd(raw string) int {
	i := 0
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}
