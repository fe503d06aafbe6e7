package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// httpClient is one MCP session over streamable HTTP that counts the
// tools/list_changed notifications it gets.
type httpClient struct {
	c       *client.Client
	mu      sync.Mutex
	changes int
}

func newHTTPClient(t *testing.T, url string) *httpClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	h := &httpClient{c: client.NewClient(tr)}
	// Start's context is the session's lifetime: the standalone GET stream,
	// where notifications outside a request arrive, lives as long as it.
	if err := h.c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			h.mu.Lock()
			h.changes++
			h.mu.Unlock()
		}
	})
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := h.c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.c.Close() })
	return h
}

func (h *httpClient) names(t *testing.T) []string {
	t.Helper()
	res, err := h.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

func (h *httpClient) search(t *testing.T, query string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_search"
	req.Params.Arguments = map[string]any{"query": query, "limit": 1}
	if res, err := h.c.CallTool(context.Background(), req); err != nil || res.IsError {
		t.Fatalf("tool_search %q: %v %+v", query, err, res)
	}
}

func (h *httpClient) changed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changes
}

// TestActivateRevealsPerHTTPSession: with disclosure activate, a tool found
// by one session's tool_search joins that session's tools/list (with a
// list_changed notification), and only that session's.
func TestActivateRevealsPerHTTPSession(t *testing.T) {
	env := testenv.NPM(t)
	cfg := writeConfig(t, "toolbridge.yaml", `
mode: on
disclosure: activate
mcpServers:
  memory:
    command: `+env.Bin(testenv.BinMemory)+`
    env: {MEMORY_FILE_PATH: `+t.TempDir()+`/memory.jsonl}
  everything:
    command: `+env.Bin(testenv.BinEverything)+`
    args: [stdio]
`)
	g := startHTTP(t, "--config", cfg)
	alice, bob := newHTTPClient(t, g.url), newHTTPClient(t, g.url)
	base := alice.names(t)
	if !slices.Equal(base, bob.names(t)) || !slices.Contains(base, "tool_search") || slices.Contains(base, "create_entities") {
		t.Fatalf("before any search both sessions should see the same bridge list: %v", base)
	}

	alice.search(t, "create entities knowledge graph")
	bob.search(t, "echo message back")

	// A client that honours list_changed waits for it, then lists again.
	deadline := time.Now().Add(10 * time.Second)
	for (alice.changed() == 0 || bob.changed() == 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alice.changed() == 0 || bob.changed() == 0 {
		t.Errorf("tools/list_changed: alice got %d, bob got %d; want at least one each", alice.changed(), bob.changed())
	}
	aliceNames, bobNames := alice.names(t), bob.names(t)
	if !slices.Contains(aliceNames, "create_entities") || slices.Contains(aliceNames, "echo") {
		t.Errorf("alice's list after her search: %v", aliceNames)
	}
	if !slices.Contains(bobNames, "echo") || slices.Contains(bobNames, "create_entities") {
		t.Errorf("bob's list after his search: %v", bobNames)
	}

	// Alice calls her revealed tool directly, by name.
	req := mcp.CallToolRequest{}
	req.Params.Name = "create_entities"
	req.Params.Arguments = map[string]any{"entities": []any{map[string]any{"name": "a", "entityType": "t", "observations": []any{}}}}
	if res, err := alice.c.CallTool(context.Background(), req); err != nil || res.IsError {
		t.Fatalf("direct call of a revealed tool: %v %+v", err, res)
	}
}
