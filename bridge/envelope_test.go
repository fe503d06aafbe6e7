package bridge

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The HTTP guard reads a POST body once (parseMessage) where it used to
// decode it once per question. These are the former one-question readers,
// kept as the reference the one-pass reader must agree with.

func refusedMessageReference(body []byte) string {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' && json.Valid(trimmed) {
		return "batch not supported: JSON-RPC batches were removed from MCP in 2025-06-18; send one message per request"
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &msg) == nil && len(msg.ID) > 0 {
		switch msg.ID[0] {
		case '{', '[', 't', 'f':
			return "invalid request: id must be a string or a number"
		}
	}
	return ""
}

func isInitializeReference(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodInitialize)
}

// envelopeSeeds are bodies where a one-pass reader could go wrong: a
// method or id of the wrong type, keys given twice, arrays, escapes,
// invalid JSON.
var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"tool_call","arguments":{"tool":"x"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":{},"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":false}`,
	`{"jsonrpc":"2.0","id":null,"method":"initialize"}`,
	`{"id":{"a":1},"method":5}`,
	`{"method":5,"id":{}}`,
	`{"method":5,"method":"initialize"}`,
	`{"method":"initialize","method":5}`,
	`{"method":"initialize","method":"ping"}`,
	`{"id":{},"id":1,"method":"initi\u0061lize"}`,
	`{"id":1,"id":{}}`,
	`{"method":"INITIALIZE"}`,
	`{"method":null,"id":[]}`,
	` [{"jsonrpc":"2.0","id":1,"method":"initialize"}]`,
	"\n\t[1,2]",
	`[1,`,
	`{"id":{}`,
	`"initialize"`,
	`5`,
	`null`,
	``,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"method":"initialize","id":1}`,
	// Keys as encoding/json matches them, without regard to case (the
	// stdio front's one pass, readLine, must too), escaped or not ASCII.
	`{"jsonrpc":"2.0","ID":{},"Method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"iD":{},"method":"tools/call","params":{"name":"x"}}`,
	`{"MeThOd":"initialize","id":7}`,
	`{"\u0069d":{},"method":"tools/call"}`,
	"{\"ıd\":{},\"method\":\"tools/call\"}",
	`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a"},"method":"ping"}`,
}

// TestParseMessageAgreesWithReference checks the guard's one-pass reader
// against the former readers on bodies chosen to trip it.
func TestParseMessageAgreesWithReference(t *testing.T) {
	for _, body := range envelopeSeeds {
		checkEnvelope(t, []byte(body))
	}
}

// FuzzParseMessage checks the guard's one-pass reader against the former
// readers on any body.
func FuzzParseMessage(f *testing.F) {
	for _, body := range envelopeSeeds {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkEnvelope(t, body) })
}

func checkEnvelope(t *testing.T, body []byte) {
	t.Helper()
	m := parseMessage(body)
	if got, want := m.refused(), refusedMessageReference(body); got != want {
		t.Errorf("%q: refused %q, want %q", body, got, want)
	}
	if got, want := refusedMessage(body), refusedMessageReference(body); got != want {
		t.Errorf("%q: refusedMessage %q, want %q", body, got, want)
	}
	if got, want := m.isInitialize(), isInitializeReference(body); got != want {
		t.Errorf("%q: isInitialize %v, want %v", body, got, want)
	}
	// The stdio front reads a line once for the guard and the fast path.
	env, _, _ := readLine(trimJSONSpace(body))
	if env.batch != m.batch || string(env.id) != string(m.id) || env.method != m.method {
		t.Errorf("%q: readLine's envelope %+v, parseMessage's %+v", body, env, m)
	}
}
