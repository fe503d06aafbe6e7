package bridge

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
)

// BenchmarkHTTPGuard measures what the gateway's own guards in front of
// mcp-go (guardHTTP, guardSessions) cost one tools/call POST, the way
// BenchmarkHTTPThroughput's sessions send it: on a session of the table
// (protocol 2025-11-25, as the gateway speaks to its upstreams) and
// without one (2026-07-28, which has no sessions). The handler behind
// them reads the body, as mcp-go's does.
func BenchmarkHTTPGuard(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::echo","tool_args":{"text":"hello"}}}}`
	table := newSessionTable(time.Minute, 100, nil)
	session := table.issue("", nil)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	})
	h := guardHTTP(config.Serve{MaxBodyBytes: 1 << 20}, guardSessions(table, next))
	for _, tc := range []struct {
		name, version, session string
	}{
		{"protocol=2025-11-25", "2025-11-25", session},
		{"protocol=2026-07-28", mcp.ProtocolVersion20260728, ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(mcp.HeaderProtocolVersion, tc.version)
				if tc.session != "" {
					req.Header.Set(sessionIDHeader, tc.session)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
