package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// TestRefusedGETStreamKeepsTheSession: the GET stream is optional. A
// server that answers it 404 or 405 while its POSTs work (the conformance
// suite's tools_call server answers 404) keeps its one session: calls go
// through, nobody initializes again, and the server is not marked lost.
// A refusal that asking again will not change (400, 406) is taken as 405:
// the stream is asked for once, not once a second for ever.
func TestRefusedGETStreamKeepsTheSession(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusBadRequest, http.StatusNotAcceptable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			mcpHandler := server.NewStreamableHTTPServer(toolServer("s"))
			var inits, gets atomic.Int32
			gotGET := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					gets.Add(1)
					select {
					case gotGET <- struct{}{}:
					default:
					}
					http.Error(w, "no GET stream here", status)
					return
				}
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"method":"initialize"`)) {
					inits.Add(1)
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				mcpHandler.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)

			cfg := config.Default()
			p := NewPool(&cfg, PoolOptions{}, NewRelay(nil, nil))
			t.Cleanup(func() { _ = p.Close() })
			spec := Spec{Name: "s", Config: config.Server{URL: srv.URL + "/mcp", Transport: config.TransportStreamableHTTP}}
			if err := p.Connect(context.Background(), []Spec{spec}, nil); err != nil {
				t.Fatalf("connecting: %v", err)
			}
			u, ok := p.Get("s")
			if !ok {
				t.Fatal("the server is not served after connecting")
			}
			select {
			case <-gotGET:
			case <-time.After(30 * time.Second):
				t.Fatal("the client never asked for the GET stream")
			}
			for i := range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := u.Request(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": fmt.Sprint(i)}})
				cancel()
				if err != nil {
					t.Fatalf("call %d after the GET stream was refused: %v", i, err)
				}
				if want := fmt.Sprintf(`"s:%d"`, i); !strings.Contains(string(res), want) {
					t.Fatalf("call %d answered %s, want %s in it", i, res, want)
				}
			}
			select {
			case <-u.lostCh:
				t.Fatalf("the server was marked lost: %s", u.lostWhy)
			default:
			}
			if n := inits.Load(); n != 1 {
				t.Fatalf("initialize was sent %d times, want once", n)
			}
			if why, _ := p.Down("s"); why != "" {
				t.Fatalf("the pool has the server down: %s", why)
			}
			// mcp-go asks again after a refusal it takes as passing once a
			// second: past two of those, a second GET would have come.
			// (A slow machine can only make this pass less often, never fail.)
			time.Sleep(2500 * time.Millisecond)
			if n := gets.Load(); n != 1 {
				t.Fatalf("the GET stream was asked for %d times, want once", n)
			}
		})
	}
}

// TestClosedStdinWritesDropped: once the gateway has closed a child's
// stdin, a late write (an answer to the server's last request) is dropped
// without an error; a write the child can no longer read still fails.
func TestClosedStdinWritesDropped(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	in := (&child{stdin: w}).transportStdin()
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	go func() { _, _ = io.Copy(io.Discard, r) }()
	if n, err := in.Write(msg); err != nil || n != len(msg) {
		t.Fatalf("write to an open stdin: %d, %v", n, err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := in.Write(msg); err != nil || n != len(msg) {
		t.Fatalf("write after close: %d, %v; want it dropped without an error", n, err)
	}
	_ = r.Close()

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_ = r2.Close() // the child is gone: nobody reads
	in2 := (&child{stdin: w2}).transportStdin()
	t.Cleanup(func() { _ = in2.Close() })
	if _, err := in2.Write(msg); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a stdin nobody reads: %v, want EPIPE", err)
	}
}
