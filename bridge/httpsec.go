package bridge

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// guardHTTP wraps the MCP endpoint with what the streamable HTTP transport
// needs when it is reachable from a browser or a network: a bearer token
// (when configured), Origin validation against DNS rebinding (the MCP spec
// asks local servers to check it), and a bound on request bodies. The
// health endpoints stay open for probes, except /readyz, which names the
// upstreams and so needs the token too.
func guardHTTP(cfg config.Serve, next http.Handler) http.Handler {
	tokenSum := sha256.Sum256([]byte(cfg.AuthToken))
	allowed := map[string]bool{}
	for _, o := range cfg.AllowedOrigins {
		allowed[strings.TrimRight(strings.ToLower(o), "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if cfg.AuthToken != "" && !bearerOK(r, tokenSum) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolbridge"`)
			http.Error(w, "toolbridge: missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, allowed) {
			http.Error(w, "toolbridge: origin "+origin+" is not allowed (serve.allowed_origins)", http.StatusForbidden)
			return
		}
		if cfg.MaxBodyBytes > 0 && r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, cfg.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// bearerOK compares the request's bearer token with the configured one in
// constant time: both sides are hashed first, so neither the content nor
// the length of the token leaks through timing.
func bearerOK(r *http.Request, want [32]byte) bool {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(auth[len(prefix):])))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// originAllowed accepts loopback origins (a page served by the user's own
// machine) and the configured ones; a web page on any other origin must not
// drive the user's tools.
func originAllowed(origin string, allowed map[string]bool) bool {
	if allowed[strings.TrimRight(strings.ToLower(origin), "/")] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// inFlight bounds the tool calls one client session may have running at
// once, so one client cannot take every upstream's capacity.
type inFlight struct {
	limit int
	mu    sync.Mutex
	calls map[string]int // session id -> calls running
}

func newInFlight(limit int) *inFlight { return &inFlight{limit: limit, calls: map[string]int{}} }

// middleware refuses a call beyond the limit with an isError result the
// model can act on (wait for results, then retry).
func (f *inFlight) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	if f.limit <= 0 {
		return next
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := sessionID(ctx)
		f.mu.Lock()
		if f.calls[id] >= f.limit {
			f.mu.Unlock()
			return toolError("This session already has %d tool calls running (serve.max_in_flight). Wait for some to finish, then call again.", f.limit), nil
		}
		f.calls[id]++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			if f.calls[id]--; f.calls[id] <= 0 {
				delete(f.calls, id)
			}
			f.mu.Unlock()
		}()
		return next(ctx, req)
	}
}
