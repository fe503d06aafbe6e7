package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// hostileServer is cmd/toolbridge/e2e/hostileserver: a stdio MCP server
// written on the wire, for what SDK servers would not send.
var hostileServer = &testenv.GoBinary{Package: "github.com/toolbridge/toolbridge/cmd/toolbridge/e2e/hostileserver"}

// hostileConfig writes a config with one hostileserver, started with args.
func hostileConfig(t *testing.T, top string, args ...string) string {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = yamlString(a)
	}
	return writeConfig(t, "toolbridge.yaml", top+"mcpServers:\n  hostile:\n    command: "+yamlString(hostileServer.Path(t))+
		"\n    args: ["+strings.Join(quoted, ", ")+"]\n")
}

// TestSamplingToAClientWithoutTheCapability: an upstream sends
// sampling/createMessage and elicitation/create during a call from a stdio
// client that declared neither capability. The client never sees them; the
// upstream is answered at once with -32601 (#24, item 10). It used to get
// the requests forwarded to the client, which cannot answer them.
func TestSamplingToAClientWithoutTheCapability(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", hostileConfig(t, "timeouts: {call: 5m}\n", "ask"), "--mode", "off")
	p.initialize(ctx) // declares no capabilities
	p.send(`{"jsonrpc":"2.0","id":"ask-1","method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	m := p.expect(ctx, "the answer to ask, or a request forwarded to the client", func(m rpcMessage) bool {
		return string(m.ID) == `"ask-1"` && m.Method == "" || m.Method == "sampling/createMessage" || m.Method == "elicitation/create"
	})
	if m.Method != "" {
		t.Fatalf("toolbridge forwarded %s to a client that did not declare the capability", m.Method)
	}
	isErr, text := p.toolResult("ask", m)
	if isErr {
		t.Fatalf("ask: isError %q", text)
	}
	lines := strings.Split(text, "\n")
	if len(lines) != 2 {
		t.Fatalf("ask answered %q, want one line per request", text)
	}
	for i, method := range []string{"sampling/createMessage", "elicitation/create"} {
		var got struct {
			Method string    `json:"method"`
			Error  *rpcError `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("decoding %q: %v", lines[i], err)
		}
		if got.Method != method || got.Error == nil || got.Error.Code != -32601 {
			t.Errorf("the upstream's %s was answered %s, want error -32601", method, lines[i])
			continue
		}
		if capability := strings.SplitN(method, "/", 2)[0]; !strings.Contains(got.Error.Message, capability+" capability") {
			t.Errorf("the error for %s does not name the missing capability: %q", method, got.Error.Message)
		}
	}
}
