package bridge

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// bigStdioServer is a stdio MCP server (a shell script) whose tool "big"
// answers with a line of about size bytes and "small" with a short one.
const bigStdioServer = `size="$1"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([^,}]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"big\",\"version\":\"0\"}}}" ;;
    *'"method":"tools/list"'*)
      printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"tools\":[{\"name\":\"big\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"small\",\"inputSchema\":{\"type\":\"object\"}}]}}" ;;
    *'"name":"big"'*)
      printf '%s' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\""
      head -c "$size" /dev/zero | tr '\0' x
      printf '%s\n' "\"}]}}" ;;
    *'"name":"small"'*)
      printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"small\"}]}}" ;;
  esac
done
`

// TestStdioResultOverLimitGoesToItsCall calls, 20 times, a stdio tool whose
// answer is over max_result_bytes, next to a call of a small one: each
// time the oversized call gets the limit error (not a timeout, not a lost
// server), the other call its answer, and the server is not restarted.
func TestStdioResultOverLimitGoesToItsCall(t *testing.T) {
	script := filepath.Join(t.TempDir(), "big.sh")
	if err := os.WriteFile(script, []byte(bigStdioServer), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := limitConfig(64 << 10)
	cfg.Timeouts.Call = time.Minute // a timeout would be the bug
	g, c := gatewayWith(t, cfg, []upstream.Spec{{Name: "big", Config: config.Server{Command: "sh", Args: []string{script, "1000000"}}}})
	before, _ := g.pool.Get("big")
	for i := range 20 {
		var wg sync.WaitGroup
		var smallRes *mcp.CallToolResult
		var smallText string
		wg.Go(func() { smallRes, smallText = callText(t, c, "small", nil) })
		res, text := callText(t, c, "big", nil)
		wg.Wait()
		if !res.IsError || !strings.Contains(text, "with more than max_result_bytes (65536 bytes)") {
			t.Fatalf("round %d: the oversized call got isError=%v %.300q; want the limit error", i, res.IsError, text)
		}
		if smallRes.IsError || smallText != "small" {
			t.Fatalf("round %d: the call next to it got isError=%v %q", i, smallRes.IsError, smallText)
		}
		if res, text := callText(t, c, "small", nil); res.IsError || text != "small" {
			t.Fatalf("round %d: the call after it got isError=%v %q", i, res.IsError, text)
		}
	}
	if after, _ := g.pool.Get("big"); after != before {
		t.Error("the server was reconnected: an oversized answer was taken for a lost connection")
	}
}
