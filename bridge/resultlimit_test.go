package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// bigServer is an MCP server whose tools answer with n bytes: "huge"
// directly, "huge_streamed" after a log message, which makes a streamable
// HTTP server answer with an event stream. "echo" answers small.
func bigServer(n int) *server.MCPServer {
	s := server.NewMCPServer("big", "1.0.0", server.WithToolCapabilities(true), server.WithLogging())
	text := strings.Repeat("x", n)
	s.AddTool(mcp.NewTool("huge"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	})
	s.AddTool(mcp.NewTool("huge_streamed"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
			map[string]any{"progressToken": "p", "progress": 1})
		return mcp.NewToolResultText(text), nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo:" + req.GetString("text", "")), nil
	})
	return s
}

// contentTypes records the Content-Type of every response a handler sends.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (c *contentTypes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&recordingWriter{ResponseWriter: w, c: c}, r)
	})
}

func (c *contentTypes) saw(ct string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[ct]
}

type recordingWriter struct {
	http.ResponseWriter
	c *contentTypes
}

// note records the Content-Type once the headers go out: at WriteHeader,
// or at the first Write or Flush without one.
func (w *recordingWriter) note() {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.c.seen == nil {
		w.c.seen = map[string]bool{}
	}
	w.c.seen[w.Header().Get("Content-Type")] = true
}

func (w *recordingWriter) WriteHeader(code int) {
	w.note()
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.note()
	return w.ResponseWriter.Write(p)
}

func (w *recordingWriter) Flush() {
	w.note()
	w.ResponseWriter.(http.Flusher).Flush()
}

// limitConfig is a configuration with a small max_result_bytes.
func limitConfig(limit int64) *config.Config {
	cfg := config.Default()
	cfg.Mode = config.ModeOff
	cfg.MaxResultBytes = limit
	cfg.Timeouts.Call = 20 * time.Second
	cfg.Restart.Initial = 50 * time.Millisecond
	return &cfg
}

func TestHTTPUpstreamResultOverLimitIsAToolError(t *testing.T) {
	const limit = 64 << 10
	streamable := func(t *testing.T, s *server.MCPServer, seen *contentTypes) string {
		ts := httptest.NewServer(seen.wrap(server.NewStreamableHTTPServer(s)))
		t.Cleanup(ts.Close)
		return ts.URL + "/mcp"
	}
	sse := func(t *testing.T, s *server.MCPServer, seen *contentTypes) string {
		ts := httptest.NewServer(seen.wrap(server.NewSSEServer(s)))
		t.Cleanup(ts.Close)
		return ts.URL + "/sse"
	}
	for _, tc := range []struct {
		name      string
		transport string
		serve     func(*testing.T, *server.MCPServer, *contentTypes) string
		tool      string
		// the Content-Type the oversized answer came with
		wantType string
		// whether the session survives: a legacy SSE server sends every
		// answer on one stream, which the oversized one breaks
		keeps bool
	}{
		{name: "streamable json", transport: config.TransportStreamableHTTP, serve: streamable, tool: "huge", wantType: "application/json", keeps: true},
		{name: "streamable event stream", transport: config.TransportStreamableHTTP, serve: streamable, tool: "huge_streamed", wantType: "text/event-stream", keeps: true},
		{name: "sse", transport: config.TransportSSE, serve: sse, tool: "huge", wantType: "text/event-stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := &contentTypes{}
			url := tc.serve(t, bigServer(1<<20), seen)
			// The upstream is served first: its cleanup then runs after the
			// gateway's, which closes the gateway's streams to it.
			g, c := gatewayWith(t, limitConfig(limit), []upstream.Spec{{Name: "big", Config: config.Server{URL: url, Transport: tc.transport}}})
			before, ok := g.pool.Get("big")
			if !ok {
				t.Fatal("big is not connected")
			}

			res, text := callText(t, c, tc.tool, nil)
			if !res.IsError || !strings.Contains(text, "with more than max_result_bytes (65536 bytes)") {
				t.Fatalf("want an isError result naming the limit, got isError %v: %.300q", res.IsError, text)
			}
			t.Logf("the client got: %s", text)
			if len(text) > 1000 {
				t.Fatalf("the error carries %d bytes of the result", len(text))
			}
			if !seen.saw(tc.wantType) {
				t.Fatalf("the server never answered with %s; the test does not test what it says", tc.wantType)
			}

			// The server stays usable: at once over the same session for
			// streamable HTTP, after the gateway reconnects for SSE.
			deadline := time.Now().Add(10 * time.Second)
			for {
				res, text = callText(t, c, "echo", map[string]any{"text": "hi"})
				if !res.IsError || time.Now().After(deadline) || tc.keeps {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if res.IsError || text != "echo:hi" {
				t.Fatalf("the next call got isError %v: %q", res.IsError, text)
			}
			if after, _ := g.pool.Get("big"); tc.keeps && after != before {
				t.Fatal("the gateway reconnected: an oversized answer was taken for a lost connection")
			}
		})
	}
}

// floodServer is a minimal streamable-HTTP MCP server whose tool "flood"
// answers with size bytes of text, written from one small buffer, so that
// what this process allocates while the answer is read is the gateway's.
// "ping" answers "pong". With sse, answers come as an event stream.
func floodServer(t *testing.T, size int64, sse bool) string {
	t.Helper()
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			// No standalone stream: mcp-go stops asking.
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var result string
		switch {
		case req.Method == "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`
		case req.Method == "tools/list":
			result = `{"tools":[{"name":"flood","inputSchema":{"type":"object"}},{"name":"ping","inputSchema":{"type":"object"}}]}`
		case req.Method == "tools/call" && req.Params.Name == "ping":
			result = `{"content":[{"type":"text","text":"pong"}]}`
		case req.Method == "tools/call":
		default: // notifications
			w.WriteHeader(http.StatusAccepted)
			return
		}
		prefix, suffix := "", "\n"
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			prefix, suffix = "event: message\ndata: ", "\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		head := prefix + `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":`
		if result != "" {
			_, _ = io.WriteString(w, head+result+"}"+suffix)
			return
		}
		if _, err := io.WriteString(w, head+`{"content":[{"type":"text","text":"`); err != nil {
			return
		}
		// Until the gateway hangs up, which it does at the limit.
		for sent := int64(0); sent < size; sent += int64(len(chunk)) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}]}}`+suffix)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestHTTPUpstreamFloodKeepsMemoryBounded has an upstream answer with 50
// MiB against a 64 KiB limit and checks that the gateway allocates a small
// fraction of that while it reads and refuses the answer. (Without the
// bound, mcp-go decodes the whole answer: well over 100 MiB allocated.)
func TestHTTPUpstreamFloodKeepsMemoryBounded(t *testing.T) {
	const (
		limit = 64 << 10
		size  = 50 << 20
		// Generous against the 64 KiB a bounded read needs, small against
		// the 50 MiB an unbounded one does.
		budget = 8 << 20
	)
	for _, sse := range []bool{false, true} {
		t.Run("sse="+strconv.FormatBool(sse), func(t *testing.T) {
			url := floodServer(t, size, sse)
			_, c := gatewayWith(t, limitConfig(limit), []upstream.Spec{{Name: "flood", Config: config.Server{URL: url}}})
			// Warm up the paths a call takes, so that one-time setup is not
			// counted.
			if res, text := callText(t, c, "ping", nil); res.IsError || text != "pong" {
				t.Fatalf("ping: isError %v: %q", res.IsError, text)
			}

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, text := callText(t, c, "flood", nil)
			runtime.ReadMemStats(&after)

			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d KiB while refusing a %d MiB answer (limit %d KiB)", alloc>>10, size>>20, limit>>10)
			if alloc > budget {
				t.Errorf("allocated %d bytes while refusing the answer, want under %d", alloc, budget)
			}
			if !res.IsError || !strings.Contains(text, fmt.Sprintf("max_result_bytes (%d bytes)", limit)) {
				t.Fatalf("want an isError result naming the limit, got isError %v: %.300q", res.IsError, text)
			}
			if res, text := callText(t, c, "ping", nil); res.IsError || text != "pong" {
				t.Fatalf("ping after the flood: isError %v: %q", res.IsError, text)
			}
		})
	}
}
