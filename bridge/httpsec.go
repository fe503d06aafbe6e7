package bridge

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/config"
)

// guardHTTP wraps the whole mux, once, so that every route, present and
// future (/mcp, /readyz, a status page, /metrics), gets what a server
// reachable from a browser or a network needs: a Host check and an Origin
// check against DNS rebinding (the MCP spec asks local servers for the
// latter; a rebound page's same-origin GET sends no Origin, so only the
// Host check stops it reading /readyz), a bearer token when configured, a
// bound on request bodies and on the time a body may take to arrive.
//
// /healthz alone is left open, whatever the Host, Origin or token: a
// load balancer's liveness probe must reach it, often by a name or without
// credentials, and it answers a constant "ok" that tells nobody anything.
func guardHTTP(cfg config.Serve, next http.Handler) http.Handler {
	tokenSum := sha256.Sum256([]byte(cfg.AuthToken))
	allowed := map[string]bool{}
	for _, o := range cfg.AllowedOrigins {
		allowed[strings.TrimRight(strings.ToLower(o), "/")] = true
	}
	hosts := map[string]bool{}
	for _, h := range cfg.AllowedHosts {
		hosts[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if !hostAllowed(r.Host, hosts) {
			// Host is the attacker's to choose; quoting bounds what it can
			// put into our answer.
			http.Error(w, fmt.Sprintf("toolbridge: host %.100q is not allowed: add it to serve.allowed_hosts", r.Host), http.StatusForbidden)
			return
		}
		// /readyz without any credentials passes: it answers such a
		// probe with its status alone (see httpHandler).
		probe := r.URL.Path == "/readyz" && r.Header.Get("Authorization") == ""
		if cfg.AuthToken != "" && !probe && !bearerOK(r, tokenSum) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolbridge"`)
			http.Error(w, "toolbridge: missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, allowed) {
			http.Error(w, fmt.Sprintf("toolbridge: origin %.100q is not allowed (serve.allowed_origins)", origin), http.StatusForbidden)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			if cfg.BodyTimeout > 0 {
				r.Body = bodyDeadline(w, r.Body, cfg.BodyTimeout)
			}
			if cfg.MaxBodyBytes > 0 {
				r.Body = http.MaxBytesReader(w, r.Body, cfg.MaxBodyBytes)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed accepts a Host header naming localhost, an IP address or a
// configured name ("*" accepts any). An IP address cannot be rebound: DNS
// rebinding needs a name the attacker controls, which the browser then
// sends as Host. An empty Host (HTTP/1.0) names nothing to rebind either.
func hostAllowed(hostport string, allowed map[string]bool) bool {
	if hostport == "" || allowed["*"] {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || allowed[host] {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// bodyDeadline bounds the time the request body may take to arrive: a
// client dripping it byte by byte would otherwise hold its connection (and
// a handler) as long as it likes. The deadline is on the connection's
// reads and is lifted once the body is read, because after that the
// server's own read watches for the client going away, and a deadline
// passing there would cancel a long tool call or end a stream. A body
// read past the deadline fails with an error matching
// os.ErrDeadlineExceeded; the server then closes the connection.
func bodyDeadline(w http.ResponseWriter, body io.ReadCloser, d time.Duration) io.ReadCloser {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return body // a writer without deadlines (a test recorder): nothing to bound
	}
	return &deadlineBody{ReadCloser: body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody lifts its read deadline when the body has been read to
// its end.
type deadlineBody struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
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

// inFlight bounds the tool calls one caller may have running at once
// (serve.max_in_flight), so one client cannot take every upstream's
// capacity; limiter does the counting (in memory by default, shared
// between replicas when one is passed in Options.CallLimiter).
type inFlight struct {
	limit   int // for the refusal's text
	limiter access.CallLimiter
	logger  *slog.Logger
}

// middleware refuses a call beyond the limit with an isError result the
// model can act on (wait for results, then retry).
func (f *inFlight) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	if f.limiter == nil {
		return next
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := inFlightKey(ctx)
		release, err := f.limiter.Acquire(ctx, id)
		if errors.Is(err, access.ErrLimitReached) {
			return toolError("This %s already has %d tool calls running (serve.max_in_flight). Wait for some to finish, then call again.", inFlightWho(id), f.limit), nil
		}
		if err != nil {
			// The count could not be kept (shared state down): refuse
			// rather than run calls nobody counts. The key may name the
			// subject, never a token.
			f.logger.Warn("refusing a tool call: counting the caller's calls in flight failed", "error", err)
			return toolError("The gateway could not count this %s's tool calls running (serve.max_in_flight). Try again shortly.", inFlightWho(id)), nil
		}
		defer release()
		return next(ctx, req)
	}
}

// newInFlight bounds calls to limit per caller with limiter, or with an
// in-memory limiter when limiter is nil; limit <= 0 turns the bound off.
func newInFlight(limit int, limiter access.CallLimiter, logger *slog.Logger) *inFlight {
	if limit <= 0 {
		return &inFlight{}
	}
	if limiter == nil {
		limiter = access.NewLocalLimiter(limit)
	}
	return &inFlight{limit: limit, limiter: limiter, logger: logger}
}
