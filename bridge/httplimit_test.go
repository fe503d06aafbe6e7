package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// fakeRoundTripper answers every request with its response.
type fakeRoundTripper struct{ resp *http.Response }

func (f fakeRoundTripper) RoundTrip(*http.Request) (*http.Response, error) { return f.resp, nil }

// countingReader serves body and counts what was read from it.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return nil }

// endless is an io.Reader of the byte b, without end.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

func TestLimitTransportBoundsBodies(t *testing.T) {
	const limit = 1000
	lines := func(n, size int) string {
		var b strings.Builder
		for range n {
			b.WriteString(strings.Repeat("x", size-1) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name        string
		contentType string
		body        io.Reader
		length      int64 // the Content-Length header; -1 for none
		tooLarge    bool
		wantPrefix  string // what the reader gets before failing, if it fails
	}{
		{name: "json under", contentType: "application/json", body: strings.NewReader(strings.Repeat("a", limit-1)), length: -1},
		{name: "json at", contentType: "application/json", body: strings.NewReader(strings.Repeat("a", limit)), length: -1},
		{name: "json over", contentType: "application/json", body: strings.NewReader(strings.Repeat("a", limit+1)), length: -1, tooLarge: true},
		{name: "json over by lines", contentType: "application/json; charset=utf-8", body: strings.NewReader(lines(20, 100)), length: -1, tooLarge: true},
		{name: "json endless", contentType: "application/json", body: endless('a'), length: -1, tooLarge: true},
		{name: "json content-length over", contentType: "application/json", body: strings.NewReader(strings.Repeat("a", limit+1)), length: limit + 1, tooLarge: true},
		{name: "json content-length at", contentType: "application/json", body: strings.NewReader(strings.Repeat("a", limit)), length: limit},
		{name: "no content type over", body: strings.NewReader(strings.Repeat("a", limit+1)), length: -1, tooLarge: true},
		{name: "text error body over", contentType: "text/plain", body: strings.NewReader(strings.Repeat("a", 2*limit)), length: -1, tooLarge: true},
		{name: "sse line at", contentType: "text/event-stream", body: strings.NewReader("data: " + strings.Repeat("a", limit-6) + "\n\n"), length: -1},
		{name: "sse line over", contentType: "text/event-stream", body: strings.NewReader("data: " + strings.Repeat("a", limit-5) + "\n\n"), length: -1, tooLarge: true},
		{name: "sse endless line", contentType: "text/event-stream", body: endless('a'), length: -1, tooLarge: true},
		{name: "sse many small lines", contentType: "text/event-stream; charset=utf-8", body: strings.NewReader(lines(1000, 100)), length: -1},
		{name: "sse lines up to the limit", contentType: "text/event-stream", body: strings.NewReader(lines(50, limit+1)), length: -1},
		{
			name: "sse good lines then one over", contentType: "text/event-stream",
			body:   strings.NewReader(lines(3, 10) + strings.Repeat("b", limit+1) + "\n"),
			length: -1, tooLarge: true,
			// Every line before the long one, whatever the read sizes.
			wantPrefix: lines(3, 10),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{r: tc.body}
			h := http.Header{}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			tr := &limitTransport{limit: limit, next: fakeRoundTripper{&http.Response{
				StatusCode: http.StatusOK, Header: h, Body: src, ContentLength: tc.length,
			}}}
			ctx, over := watchOverflow(context.Background())
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// Reads of one byte and of a large buffer meet the bound alike.
			got, err := io.ReadAll(bufio.NewReaderSize(resp.Body, 16))
			if !tc.tooLarge {
				if err != nil {
					t.Fatalf("read failed: %v", err)
				}
				if over.failed() != nil {
					t.Fatalf("overflow reported for a body in bounds: %v", over.failed())
				}
				return
			}
			var tl *tooLargeError
			if !errors.As(err, &tl) || tl.limit != limit {
				t.Fatalf("err = %v, want a *tooLargeError for %d bytes", err, limit)
			}
			if want := "max_result_bytes (1000 bytes)"; !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name the limit (%q)", err, want)
			}
			if !errors.Is(over.failed(), err) {
				t.Fatalf("the request's overflow = %v, want %v", over.failed(), err)
			}
			if !strings.HasPrefix(string(got), tc.wantPrefix) {
				t.Fatalf("the lines before the long one were not all passed on: got %d bytes", len(got))
			}
			// Bounded: the limiter reads at most one byte past the limit
			// of the body, or of the line since the last newline passed on.
			counted := int64(len(got))
			if strings.HasPrefix(tc.contentType, "text/event-stream") {
				counted -= int64(bytes.LastIndexByte(got, '\n') + 1)
			}
			if counted > limit {
				t.Fatalf("passed on %d bytes of the message, want at most %d", counted, limit)
			}
			if rest := src.read - int64(len(got)) + counted; rest > limit+1 {
				t.Fatalf("read %d bytes of the message from the body, want at most %d", rest, limit+1)
			}
			if tc.length > limit && src.read != 0 {
				t.Fatalf("read %d bytes of a body whose Content-Length is over the limit", src.read)
			}
			// The failure sticks.
			if n, err := resp.Body.Read(make([]byte, 10)); n != 0 || !errors.As(err, &tl) {
				t.Fatalf("read after the failure = %d, %v", n, err)
			}
		})
	}
}

func TestLimitTransportWithoutOverflowInContext(t *testing.T) {
	tr := &limitTransport{limit: 10, next: fakeRoundTripper{&http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(strings.Repeat("z", 11))), ContentLength: -1,
	}}}
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tl *tooLargeError
	if _, err := io.ReadAll(resp.Body); !errors.As(err, &tl) {
		t.Fatalf("err = %v, want a *tooLargeError", err)
	}
}

// chunkReader returns at most n bytes a read, so that reads end anywhere.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// FuzzLimitedBody checks the bound on any body, limit and read sizes: a
// body in bounds comes through unchanged; one out of bounds fails with a
// *tooLargeError after passing on a prefix that holds everything before
// the long message (per line: every complete line before it) and no more
// than limit bytes of it.
func FuzzLimitedBody(f *testing.F) {
	f.Add([]byte("data: {}\n\n"), uint16(8), true, uint8(3), uint8(7))
	f.Add([]byte("aaaa\nbbbbbbbbbb\ncc"), uint16(5), true, uint8(1), uint8(64))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), uint16(36), false, uint8(5), uint8(5))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), uint16(35), false, uint8(255), uint8(1))
	f.Add([]byte{}, uint16(0), true, uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, perLine bool, srcChunk, dstChunk uint8) {
		b := &limitedBody{rc: io.NopCloser(chunkReader{bytes.NewReader(data), int(srcChunk) + 1}), limit: int64(limit), perLine: perLine}
		got, err := io.ReadAll(chunkReader{b, int(dstChunk) + 1})
		// start is where the first message over the limit begins, or -1.
		start := -1
		if perLine {
			off := 0
			for _, line := range bytes.SplitAfter(data, []byte("\n")) {
				if len(bytes.TrimSuffix(line, []byte("\n"))) > int(limit) {
					start = off
					break
				}
				off += len(line)
			}
		} else if len(data) > int(limit) {
			start = 0
		}
		if start < 0 {
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("body in bounds: got %d of %d bytes, err %v", len(got), len(data), err)
			}
			return
		}
		var tl *tooLargeError
		if !errors.As(err, &tl) {
			t.Fatalf("body out of bounds: err = %v", err)
		}
		if !bytes.HasPrefix(data, got) || len(got) < start || int64(len(got)-start) > int64(limit) {
			t.Fatalf("passed on %d bytes; the long message starts at %d, limit %d", len(got), start, limit)
		}
	})
}

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

// startHTTPGateway connects a gateway to the HTTP upstream s serves at
// url and returns it with a client talking to it in process. The
// upstream must be served before this is called (its cleanup then runs
// after the gateway's, which closes the gateway's streams to it).
func startHTTPGateway(t *testing.T, cfg *config.Config, spec Spec) (*Gateway, *client.Client) {
	t.Helper()
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []Spec{spec}); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	c, err := client.NewInProcessClient(g.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	return g, startClient(t, c)
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
			g, c := startHTTPGateway(t, limitConfig(limit), Spec{Name: "big", Config: config.Server{URL: url, Transport: tc.transport}})
			before, ok := g.pool.get("big")
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
			if after, _ := g.pool.get("big"); tc.keeps && after != before {
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
			_, c := startHTTPGateway(t, limitConfig(limit), Spec{Name: "flood", Config: config.Server{URL: url}})
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
