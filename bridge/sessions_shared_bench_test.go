package bridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// BenchmarkSessionRequest is the cost of one request on a 2025-11-25
// session (a ping, so that the session check is most of the work) with
// the process's own session table and with the table shared in Redis (a
// real redis-server on 127.0.0.1, and a valkey-server): the difference is
// what the Redis lookup adds per request.
//
//	go test ./bridge -run '^$' -bench BenchmarkSessionRequest -benchtime 2000x
func BenchmarkSessionRequest(b *testing.B) {
	for _, store := range append([]string{"memory"}, statetest.Programs()...) {
		b.Run(strings.TrimSuffix(store, "-server"), func(b *testing.B) {
			cfg := testConfig()
			cfg.StateDir = b.TempDir()
			opts := Options{}
			if store != "memory" {
				redis := statetest.StartServer(b, store)
				cfg.Redis = config.Redis{URL: redis.URL(), KeyPrefix: "bench:"}
				st, err := state.Open(context.Background(), cfg.Redis, false, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = st.Close() })
				opts.State = st
			}
			g, err := New(cfg, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = g.Close() })
			srv := httptest.NewServer(g.HTTPHandler())
			b.Cleanup(srv.Close)
			url := srv.URL + "/mcp"
			init, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
			if err != nil {
				b.Fatal(err)
			}
			init.Header.Set("Content-Type", "application/json")
			init.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(init)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			sid := resp.Header.Get(sessionIDHeader)
			if sid == "" {
				b.Fatalf("initialize: %d", resp.StatusCode)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
				req.Header.Set(sessionIDHeader, sid)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("ping: %d", resp.StatusCode)
				}
			}
		})
	}
}
