package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// benchToolSearchRawStdio is BenchmarkToolSearch10k's client=stdio with a
// client that decodes nothing: the same stdio protocol over the same OS
// pipes, the same queries and arguments, but each request line is built
// once per query (only its id is written per request) and each answer
// line is only checked to be its id's result and not an error. mcp-go's
// stdio client allocates about 44 KB a search decoding the answer (its
// structuredContent into maps), four times the gateway's own bytes, and
// in one process its garbage sets the process CPU's p99 (see
// docs/performance.md); this row counts the gateway's work, plus a client
// that is negligible. One answer is decoded in full before the timed loop,
// so a gateway answering wrongly still fails the benchmark.
func benchToolSearchRawStdio(b *testing.B, g *Gateway, queries []string) {
	c := newRawStdioClient(b, g)
	// Each query's line is split around its id: prefix, id, suffix.
	suffixes := make([][]byte, len(queries))
	for i, q := range queries {
		params, err := json.Marshal(map[string]any{"name": toolid.MetaSearch, "arguments": map[string]any{"query": q, "limit": 5}})
		if err != nil {
			b.Fatal(err)
		}
		suffixes[i] = fmt.Appendf(nil, `,"method":"tools/call","params":%s}`+"\n", params)
	}
	c.checkSearch(b, suffixes[0], queries[0])

	var lat []time.Duration
	var cpuLat cpuQuantiles
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		cpuLat.start()
		start := time.Now()
		line, err := c.call(suffixes[i%len(suffixes)])
		lat = append(lat, time.Since(start))
		cpuLat.stop()
		if err != nil {
			b.Fatalf("tool_search %q: %v", queries[i%len(queries)], err)
		}
		if bytes.Contains(line, []byte(`"isError":true`)) {
			b.Fatalf("tool_search %q: isError answer: %.300s", queries[i%len(queries)], line)
		}
		i++
	}
	cpu.report(b, i)
	reportQuantiles(b, lat, "")
	cpuLat.report(b)
}

// rawStdioClient is an MCP client over stdio that writes prepared request
// lines and reads answer lines without decoding them.
type rawStdioClient struct {
	w    *os.File
	r    *bufio.Reader
	id   int64
	line []byte // the request line being written, reused
	want []byte // the answer's expected start, reused
}

// rawLinePrefix starts every request line; the id follows it.
const rawLinePrefix = `{"jsonrpc":"2.0","id":`

// newRawStdioClient serves g with ServeStdio on a pair of OS pipes, as
// stdioPipeClient does, and initializes a raw client on the other ends:
// initialize, then notifications/initialized. Everything is stopped at
// cleanup.
func newRawStdioClient(tb testing.TB, g *Gateway) *rawStdioClient {
	tb.Helper()
	toServerR, toServerW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	toClientR, toClientW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := g.ServeStdio(ctx, toServerR, toClientW, io.Discard)
		_ = toClientW.Close()
		done <- err
	}()
	tb.Cleanup(func() {
		_ = toServerW.Close() // EOF on the gateway's stdin ends ServeStdio
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("ServeStdio: %v", err)
		}
		_ = toServerR.Close()
		_ = toClientR.Close()
	})
	// Answers are a few KB; the buffer holds any line whole.
	c := &rawStdioClient{w: toServerW, r: bufio.NewReaderSize(toClientR, 1<<20)}
	init := fmt.Appendf(nil, `,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw-bench","version":"1.0.0"}}}`+"\n", mcp.LATEST_PROTOCOL_VERSION)
	line, err := c.call(init)
	if err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	var res struct {
		Result *mcp.InitializeResult `json:"result"`
	}
	if err := json.Unmarshal(line, &res); err != nil || res.Result == nil || res.Result.Capabilities.Tools == nil {
		tb.Fatalf("initialize answered %.300s (%v), want a result with tools", line, err)
	}
	if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		tb.Fatalf("notifications/initialized: %v", err)
	}
	return c
}

// call writes one request, rawLinePrefix, a new id and suffix (the rest
// of the line, newline included), and returns its answer line, valid
// until the next call. Lines without the id (notifications) are skipped;
// an answer to another id, or an error answer, is an error.
func (c *rawStdioClient) call(suffix []byte) ([]byte, error) {
	c.id++
	c.line = append(strconv.AppendInt(append(c.line[:0], rawLinePrefix...), c.id, 10), suffix...)
	if _, err := c.w.Write(c.line); err != nil {
		return nil, fmt.Errorf("writing request %d: %w", c.id, err)
	}
	c.want = append(strconv.AppendInt(append(c.want[:0], rawLinePrefix...), c.id, 10), ',')
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the answer to %d: %w (read %.300s)", c.id, err, line)
		}
		if bytes.HasPrefix(line, c.want) {
			if !bytes.HasPrefix(line[len(c.want):], []byte(`"result":`)) {
				return nil, fmt.Errorf("answer to %d is not a result: %.300s", c.id, line)
			}
			return line, nil
		}
		if bytes.HasPrefix(line, []byte(rawLinePrefix)) {
			return nil, fmt.Errorf("waiting for the answer to %d, read %.300s", c.id, line)
		}
		// A notification from the gateway: not an answer.
	}
}

// checkSearch makes one tool_search and decodes its answer in full: a
// result, not an error, with hits that name their tools.
func (c *rawStdioClient) checkSearch(tb testing.TB, suffix []byte, query string) {
	tb.Helper()
	line, err := c.call(suffix)
	if err != nil {
		tb.Fatalf("tool_search %q: %v", query, err)
	}
	var ans struct {
		ID     int64 `json:"id"`
		Result struct {
			IsError           bool              `json:"isError"`
			Content           []mcp.TextContent `json:"content"`
			StructuredContent SearchResult      `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		tb.Fatalf("tool_search %q: decoding the answer: %v: %.300s", query, err, line)
	}
	hits := ans.Result.StructuredContent.Tools
	if ans.ID != c.id || ans.Result.IsError || len(ans.Result.Content) == 0 || len(hits) == 0 {
		tb.Fatalf("tool_search %q answered id %d (want %d), isError %v, %d content, %d hits: %.300s",
			query, ans.ID, c.id, ans.Result.IsError, len(ans.Result.Content), len(hits), line)
	}
	for _, h := range hits {
		if h.ID == "" || h.Server == "" || h.Name == "" || h.Score <= 0 {
			tb.Fatalf("tool_search %q: incomplete hit %+v", query, h)
		}
	}
}
