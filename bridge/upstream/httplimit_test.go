package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
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
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.Limit != limit {
				t.Fatalf("err = %v, want a *TooLargeError for %d bytes", err, limit)
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
	var tl *TooLargeError
	if _, err := io.ReadAll(resp.Body); !errors.As(err, &tl) {
		t.Fatalf("err = %v, want a *TooLargeError", err)
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
// *TooLargeError after passing on a prefix that holds everything before
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
		var tl *TooLargeError
		if !errors.As(err, &tl) {
			t.Fatalf("body out of bounds: err = %v", err)
		}
		if !bytes.HasPrefix(data, got) || len(got) < start || int64(len(got)-start) > int64(limit) {
			t.Fatalf("passed on %d bytes; the long message starts at %d, limit %d", len(got), start, limit)
		}
	})
}
