package bridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// A session id is a bearer credential (without serve.auth_token nothing
// else is asked), so what the gateway writes for others to read, the audit
// log and a hook's stdin, carries its hash, never the id.
func TestSessionIDNeverWrittenOut(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.StateDir = dir
	cfg.Mode = config.ModeOn // tool_call, the path most calls take
	cfg.Audit.File = filepath.Join(dir, "audit.jsonl")
	hookIn := filepath.Join(dir, "hook.json")
	cfg.Hooks = []config.Hook{{Match: "*", Command: "sh", Args: []string{"-c", `cat >> "$0"`, hookIn}, Events: []string{"before"}}}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"

	sid := openSession(t, url, "")
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::echo","tool_args":{"text":"hi"}}}}`
	if a := (rawHTTP{session: sid, body: call}).do(t, url); a.status != http.StatusOK || !strings.Contains(a.body, "up:hi") {
		t.Fatalf("tool_call: status %d: %s", a.status, a.body)
	}
	if err := g.Close(); err != nil { // flushes the audit log
		t.Fatal(err)
	}
	ref := trace.SessionRef(sid)
	for _, f := range []string{cfg.Audit.File, hookIn} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), sid) {
			t.Errorf("%s holds the session id %s:\n%s", filepath.Base(f), sid, b)
		}
		if !strings.Contains(string(b), `"session":"`+ref+`"`) {
			t.Errorf("%s lacks the session's hash %s:\n%s", filepath.Base(f), ref, b)
		}
	}
}
