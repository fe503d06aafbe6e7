package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// TestSecretsInURLsNeverLeak runs toolbridge with upstream URLs that carry
// credentials (user:password@, secret-looking query parameters, and, as
// Zapier-style URLs do, a secret path segment and a parameter name no list
// knows: ?hmac=), makes
// the URLs show up wherever they can (a server that fails at start, one
// that dies between two calls), and greps every output channel of the run
// for the secrets: stderr, /readyz, the results the client sees, the spans
// of the stdout exporter, the audit log and config check.
func TestSecretsInURLsNeverLeak(t *testing.T) {
	secrets := []string{"S3CRET-PASSWORD-a1", "S3CRET-APIKEY-b2", "S3CRET-SIG-c3", "S3CRET-TOKEN-d4", "S3CRET-ACCESS-e5",
		"sk-PATHSECRET-f6", "S3CRET-HMAC-g7", "sk-DEADPATH-h8", "S3CRET-HMAC-i9"}

	up := server.NewMCPServer("remote", "1.0.0", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo:" + req.GetString("text", "")), nil
	})
	upstream := httptest.NewServer(server.NewStreamableHTTPServer(up))
	defer upstream.Close()
	refused := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))

	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := writeConfig(t, "toolbridge.yaml", fmt.Sprintf(`mcpServers:
  remote:
    url: http://tbuser:%s@%s/%s/mcp?api_key=%s&Sig=%s&region=eu&hmac=%s
  dead:
    url: http://%s/%s/mcp?TOKEN=%s&access_token=%s&hmac=%s
mode: "off"
restart: {initial: 60s, max: 60s}
telemetry: {exporter: stdout}
audit: {file: %s}
`, secrets[0], strings.TrimPrefix(upstream.URL, "http://"), secrets[5], secrets[1], secrets[2], secrets[6],
		refused, secrets[7], secrets[3], secrets[4], secrets[8], audit))

	g := startHTTPProc(t, "--config", cfg)
	var seen []string // what the client was shown

	tr, err := transport.NewStreamableHTTP(g.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func() (*mcp.CallToolResult, string) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"text": "hi"}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			seen = append(seen, err.Error())
			t.Fatalf("calling echo: %v", err)
		}
		text := fmt.Sprint(res.Content, res.StructuredContent)
		seen = append(seen, text)
		return res, text
	}
	if res, text := call(); res.IsError || !strings.Contains(text, "echo:hi") {
		t.Fatalf("echo while the server is up: isError=%v %s", res.IsError, text)
	}
	upstream.CloseClientConnections()
	upstream.Close()
	res, text := call()
	if !res.IsError || !strings.Contains(text, "remote") {
		t.Fatalf("echo after its server went away: isError=%v %s; want an isError result naming it", res.IsError, text)
	}
	_ = c.Close()

	resp, err := http.Get(g.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	readyz, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("toolbridge did not exit on SIGTERM\nstderr:\n%s", g.stderr.String())
	}
	auditLog, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	_, checkOut, checkErr := runCLI(t, nil, "config", "check", cfg)

	channels := []struct{ name, text, mustHave string }{
		// The stdout exporter writes to stderr, so that stdio mode keeps
		// stdout for JSON-RPC.
		{"stderr (logs, progress, spans)", g.stderr.String(), "tools/call echo"},
		{"/readyz", string(readyz), "127.0.0.1"},
		{"client results", strings.Join(seen, "\n"), "remote"},
		{"stdout", g.stdout.String(), ""},
		{"audit log", string(auditLog), "echo"},
		{"config check", checkOut + checkErr, "region=****"},
	}
	for _, ch := range channels {
		// Each channel must carry what it is checked for, or a clean
		// result would prove nothing.
		if !strings.Contains(ch.text, ch.mustHave) {
			t.Errorf("%s lacks %q, so it was not exercised:\n%.2000s", ch.name, ch.mustHave, ch.text)
		}
		for _, s := range secrets {
			if i := strings.Index(ch.text, s); i >= 0 {
				t.Errorf("%s leaks %q: ...%s...", ch.name, s, ch.text[max(0, i-200):min(len(ch.text), i+100)])
			}
		}
	}
	// The failing URL is shown, masked, so the operator still sees where:
	// scheme://host:port, the path's secret masked, every value masked.
	if want := "http://" + refused + "/****/mcp?TOKEN=****&access_token=****&hmac=****"; !strings.Contains(g.stderr.String(), want) {
		t.Errorf("stderr does not show the refused URL as %s:\n%s", want, g.stderr.String())
	}
}
