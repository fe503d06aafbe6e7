package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestStdioRefusesWhatHTTPRefuses: over stdio, as over HTTP, a batch and a
// request whose id is an object or a boolean are answered with -32600 and
// a reason, and the session goes on: the next request is served.
func TestStdioRefusesWhatHTTPRefuses(t *testing.T) {
	g, err := New(testConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := g.ServeStdio(context.Background(), strings.NewReader(in), &out, nil); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	var refused []string
	served := false
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var msg struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		switch {
		case msg.Error != nil && msg.Error.Code == mcp.INVALID_REQUEST:
			refused = append(refused, msg.Error.Message)
		case msg.Error == nil && string(msg.ID) == "7":
			served = true
		default:
			t.Errorf("unexpected answer %s", line)
		}
	}
	if len(refused) != 3 {
		t.Fatalf("%d messages refused with -32600, want 3: %q\nstdout:\n%s", len(refused), refused, out.String())
	}
	if !strings.Contains(strings.Join(refused, "\n"), "batch not supported") ||
		!strings.Contains(strings.Join(refused, "\n"), "id must be a string or a number") {
		t.Errorf("the refusals do not say why: %q", refused)
	}
	if !served {
		t.Errorf("the request after the refused ones was not answered:\n%s", out.String())
	}
}
