package bridge

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
)

// protectResource makes the handler of the MCP endpoint an OAuth 2.1
// protected resource when serve.oauth is set: it serves the RFC 9728
// metadata at /.well-known/oauth-protected-resource (and at its path form
// for the audience, /.well-known/oauth-protected-resource/mcp) on mux, and
// wraps the endpoint so that each request needs a valid access token. The
// caller's identity rides in the request's context (access.FromContext);
// the token itself goes no further: it is never forwarded upstream, logged
// or stored.
//
// The settings are read per request, so a reload that changes the access
// rules or the issuer's scopes applies at once.
func (g *Gateway) protectResource(mux *http.ServeMux) func(http.Handler) http.Handler {
	metadata := func(w http.ResponseWriter, r *http.Request) {
		o := g.settings().cfg.Serve.OAuth
		if !o.Enabled() {
			http.NotFound(w, r)
			return
		}
		server.NewProtectedResourceMetadataHandler(server.ProtectedResourceMetadataConfig{
			Resource:               o.Audience,
			AuthorizationServers:   []string{o.Issuer},
			ScopesSupported:        o.RequiredScopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "toolbridge",
		}).ServeHTTP(w, r)
	}
	mux.HandleFunc("GET "+server.WellKnownProtectedResourcePath, metadata)
	mux.HandleFunc("GET "+server.WellKnownProtectedResourcePath+"/{path...}", metadata)
	return g.requireToken
}

// requireToken lets a request through only with a valid access token
// when serve.oauth is set, and puts the caller's identity in its context.
func (g *Gateway) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		live := g.settings()
		if live.tokens == nil {
			next.ServeHTTP(w, r)
			return
		}
		o := live.cfg.Serve.OAuth
		challenge := `Bearer resource_metadata="` + metadataURL(o.Audience) + `"`
		token, ok := bearerToken(r)
		if !ok {
			// RFC 6750 §3.1: no error code when the request carried no
			// credentials at all.
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "toolbridge: this gateway needs an OAuth access token (see the WWW-Authenticate header)", http.StatusUnauthorized)
			return
		}
		id, err := live.tokens.Validate(r.Context(), token)
		if err != nil {
			ae, _ := err.(*access.Error)
			if ae == nil {
				ae = &access.Error{Status: http.StatusUnauthorized, Code: "invalid_token"}
			}
			g.logger.Debug("refused an access token", "reason", err, "remote", r.RemoteAddr)
			h := challenge + `, error="` + ae.Code + `", error_description="` + ae.Description() + `"`
			if ae.Code == "insufficient_scope" {
				h += `, scope="` + ae.Scope + `"`
			}
			w.Header().Set("WWW-Authenticate", h)
			http.Error(w, "toolbridge: "+ae.Description(), ae.Status)
			return
		}
		next.ServeHTTP(w, r.WithContext(access.NewContext(r.Context(), id)))
	})
}

// bearerToken is the request's bearer token (RFC 6750 §2.1; the header
// is the only method a protected resource must support, and query or
// body tokens end up in logs).
func bearerToken(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", false
	}
	tok := strings.TrimSpace(auth[len(prefix):])
	return tok, tok != ""
}

// metadataURL is where RFC 9728 §3.1 puts a resource's metadata: the
// well-known path inserted between the host and the resource's path.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return resource
	}
	return u.Scheme + "://" + u.Host + server.ProtectedResourceMetadataPath(resource)
}

// teamOnly keeps the status page from callers when access rules are in
// force: its activity feed shows every caller's recent calls and
// searches, which the rules would hide from most of them. (Its catalog
// part is already the caller's view.) The page answers 403 then; an
// operator reads it on a gateway without rules or through ui.listen.
func (g *Gateway) teamOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.settings().access.Enabled() {
			http.Error(w, "toolbridge: the status page shows every caller's activity, so it is off while access rules are configured", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
