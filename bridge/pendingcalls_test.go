package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestLeadingResponseID(t *testing.T) {
	tests := []struct {
		msg      string
		id       string
		response bool
	}{
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, `"a"`, true},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"x"}}`, `7`, true},
		{`{"id":7,"jsonrpc":"2.0","result":{"method":"x"}}`, `7`, true}, // "method" inside the result does not count
		{`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, "", false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, "", false},
		{`{"jsonrpc":"2.0","method":"roots/list","id":1}`, "", false},
		{`{"jsonrpc":"2.0","id":"last"}`, `"last"`, true},
		{`[{"id":1}]`, "", false},
		{`not json`, "", false},
		{``, "", false},
		{`{"jsonrpc":"2.0","id":`, "", false},
	}
	for _, tt := range tests {
		id, response := leadingResponseID([]byte(tt.msg))
		if response != tt.response || string(id) != tt.id {
			t.Errorf("leadingResponseID(%s) = %s, %v; want %s, %v", tt.msg, id, response, tt.id, tt.response)
		}
	}
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		raw string
		key string
		ok  bool
	}{
		{`"a"`, `"a"`, true},
		{`"1"`, `"1"`, true}, // a string is never the number
		{`1`, `1`, true},
		{`1.0`, `1`, true}, // the same number however it is spelled
		{`1e0`, `1`, true},
		{`null`, "", false},
		{`{"a":1}`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		key, ok := idKey([]byte(tt.raw))
		if key != tt.key || ok != tt.ok {
			t.Errorf("idKey(%s) = %q, %v; want %q, %v", tt.raw, key, ok, tt.key, tt.ok)
		}
	}
}

// TestPendingCallsFromReadToAnswer: a tool call is pending from the line
// that carries it until the line that answers it, whatever else is
// written in between (a request to the client with the same id, other
// answers), and a call whose id comes twice needs two answers.
func TestPendingCallsFromReadToAnswer(t *testing.T) {
	c := newPendingCalls()
	c.read([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"))
	c.read([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}` + "\n"))
	c.read([]byte(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"b"}}` + "\n"))
	c.read([]byte(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"b"}}` + "\n"))
	if n := c.pending.Running(); n != 3 {
		t.Fatalf("%d calls pending, want 3", n)
	}
	c.answered([]byte(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`))
	c.answered([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}`))
	if n := c.pending.Running(); n != 3 {
		t.Fatalf("%d calls pending after writes that answer none, want 3", n)
	}
	c.answered([]byte(`{"jsonrpc":"2.0","id":1.0,"result":{}}`))
	c.answered([]byte(`{"jsonrpc":"2.0","id":"b","result":{}}`))
	if n := c.pending.Running(); n != 1 {
		t.Fatalf("%d calls pending, want 1", n)
	}
	c.answered([]byte(`{"jsonrpc":"2.0","id":"b","error":{"code":-1,"message":"x"}}`))
	if err := c.pending.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func FuzzLeadingResponseID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x"}`))
	f.Add([]byte(`{"id":{"x":1},"result":1}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		id, response := leadingResponseID(msg)
		if !response {
			return
		}
		if len(id) == 0 || !bytes.Contains(msg, id) {
			t.Fatalf("leadingResponseID(%q) = %q, not a part of the message", msg, id)
		}
		_, _ = idKey(id)
	})
}

// pendingCallReference is how pendingCalls.read told a tool call before
// it reused the guard's parse: a decode of the line of its own.
func pendingCallReference(line []byte) (json.RawMessage, bool) {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		return nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != string(mcp.MethodToolsCall) {
		return nil, false
	}
	return m.ID, true
}

// TestPendingCallsReadAsDecoded: the guard's parse tells a tool call and
// its id exactly as pendingCalls' own decode did, odd spellings included.
func TestPendingCallsReadAsDecoded(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"name":"tools/call"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","id":2}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":null}`,
		`{"jsonrpc":"2.0","id":1,"method":5,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"arguments":{"m":"tools/call"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"tools/call"}`,
		`"tools/call"`,
		`null`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`,
		``,
	} {
		wantID, want := pendingCallReference([]byte(line))
		msg := parseMessage([]byte(line))
		got := msg.isToolsCall() && bytes.Contains([]byte(line), []byte(`"tools/call"`))
		if got != want || (want && string(msg.id) != string(wantID)) {
			t.Errorf("%s: tool call %v id %s, want %v id %s", line, got, msg.id, want, wantID)
		}
	}
}
