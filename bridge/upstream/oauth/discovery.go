package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// maxDocBytes bounds a metadata document or token response.
const maxDocBytes = 1 << 20

// ResourceMetadata is OAuth protected resource metadata (RFC 9728 §2).
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
}

// ServerMetadata is authorization server metadata (RFC 8414 §2), mcp-go's
// type plus the client ID metadata document flag it lacks.
type ServerMetadata struct {
	transport.AuthServerMetadata
	// ClientIDMetadataDocumentSupported says the server accepts an HTTPS
	// URL as client_id (draft-ietf-oauth-client-id-metadata-document).
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
}

// Discovery is what the client learns about a protected MCP server before
// it asks for a token.
type Discovery struct {
	// Resource is the RFC 8707 resource indicator: the resource metadata's
	// resource, else the server URL.
	Resource string
	// ResourceScopes are the resource metadata's scopes_supported.
	ResourceScopes []string
	// Issuer is the authorization server's identifier.
	Issuer string
	// Server is the authorization server's metadata; for a 2025-03-26
	// server without metadata it holds the default endpoints.
	Server ServerMetadata
	// Legacy says no protected resource metadata was found and the
	// authorization server is the MCP server's origin (2025-03-26 spec).
	Legacy bool
	// defaults says no metadata was found at all: Server holds the
	// 2025-03-26 default endpoints.
	defaults bool
}

// discover finds the authorization server for the MCP server at serverURL,
// starting from the challenge of its 401 (which may be empty):
//
//  1. protected resource metadata (RFC 9728): the URL the challenge names,
//     else /.well-known/oauth-protected-resource with the server URL's path
//     inserted, else at the root;
//  2. the authorization server's metadata (RFC 8414 with path insertion,
//     then OpenID Connect discovery in both placements);
//  3. without resource metadata, the 2025-03-26 rules: the server's origin
//     is the authorization server, its metadata at the root, else the
//     default endpoints /authorize, /token and /register.
func discover(ctx context.Context, hc *http.Client, serverURL string, ch Challenge) (*Discovery, error) {
	base, err := url.Parse(serverURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("discovering authorization: server URL %q is not absolute", serverURL)
	}
	var prmURLs []string
	if ch.ResourceMetadata != "" {
		if err := sameOrigin(ch.ResourceMetadata, base); err != nil {
			return nil, fmt.Errorf("discovering authorization: resource_metadata in WWW-Authenticate: %w", err)
		}
		prmURLs = append(prmURLs, ch.ResourceMetadata)
	} else {
		origin := base.Scheme + "://" + base.Host
		if p := strings.TrimSuffix(base.EscapedPath(), "/"); p != "" {
			prmURLs = append(prmURLs, origin+"/.well-known/oauth-protected-resource"+p)
		}
		prmURLs = append(prmURLs, origin+"/.well-known/oauth-protected-resource")
	}
	var prm *ResourceMetadata
	for _, u := range prmURLs {
		var doc ResourceMetadata
		ok, err := getJSON(ctx, hc, u, &doc)
		if err != nil {
			return nil, fmt.Errorf("discovering authorization: %w", err)
		}
		if ok {
			prm = &doc
			break
		}
	}
	if prm == nil && ch.ResourceMetadata != "" {
		return nil, fmt.Errorf("discovering authorization: the resource metadata %s named in WWW-Authenticate is not there", ch.ResourceMetadata)
	}

	d := &Discovery{Resource: canonicalResource(base)}
	var issuer string
	if prm != nil {
		if prm.Resource != "" {
			if !resourceCovers(prm.Resource, base) {
				return nil, fmt.Errorf("discovering authorization: resource metadata names resource %q, not this server %q", prm.Resource, serverURL)
			}
			d.Resource = prm.Resource
		}
		d.ResourceScopes = prm.ScopesSupported
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("discovering authorization: resource metadata names no authorization server")
		}
		issuer = prm.AuthorizationServers[0]
	} else {
		d.Legacy = true
		issuer = base.Scheme + "://" + base.Host
	}
	d.Issuer = issuer

	for _, u := range serverMetadataURLs(issuer) {
		var doc ServerMetadata
		ok, err := getJSON(ctx, hc, u, &doc)
		if err != nil {
			return nil, fmt.Errorf("discovering authorization: %w", err)
		}
		if !ok {
			continue
		}
		// RFC 8414 §3.3 wants the issuer to be the one asked for. The
		// check keeps its point, that one origin's document cannot speak
		// for another's, and tolerates a path that differs: servers with
		// a tenant path (and the conformance suite's) publish their
		// origin as the issuer.
		if !issuerMatches(doc.Issuer, issuer) {
			return nil, fmt.Errorf("discovering authorization: metadata at %s names issuer %q, not %q", u, doc.Issuer, issuer)
		}
		if doc.AuthorizationEndpoint == "" && doc.TokenEndpoint == "" {
			return nil, fmt.Errorf("discovering authorization: metadata at %s has no endpoints", u)
		}
		if err := checkEndpoints(&doc); err != nil {
			return nil, fmt.Errorf("discovering authorization: metadata at %s: %w", u, err)
		}
		d.Server = doc
		return d, nil
	}
	if !d.Legacy {
		return nil, fmt.Errorf("discovering authorization: no metadata for authorization server %s (tried RFC 8414 and OpenID discovery)", issuer)
	}
	// 2025-03-26 fallback: the default endpoints at the server's origin.
	d.Server.Issuer = issuer
	d.Server.AuthorizationEndpoint = issuer + "/authorize"
	d.Server.TokenEndpoint = issuer + "/token"
	d.Server.RegistrationEndpoint = issuer + "/register"
	d.defaults = true
	return d, nil
}

// serverMetadataURLs lists where an issuer's metadata may be, in the order
// the MCP spec gives: RFC 8414 with the path inserted, OpenID discovery
// with the path inserted, OpenID discovery with the path appended.
func serverMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.Trim(u.EscapedPath(), "/")
	if p == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server/" + p,
		origin + "/.well-known/openid-configuration/" + p,
		origin + "/" + p + "/.well-known/openid-configuration",
	}
}

// getJSON fetches a metadata document. A 4xx answer is "not here"
// (ok=false, no error): discovery goes on to the next place.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) (ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, fmt.Errorf("fetching %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("fetching %s: status %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocBytes)).Decode(v); err != nil {
		return false, fmt.Errorf("decoding %s: %w", u, err)
	}
	return true, nil
}

// sameOrigin checks that a URL a server advertised shares base's scheme
// and host, so a resource cannot send the client's discovery elsewhere.
func sameOrigin(raw string, base *url.URL) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if !strings.EqualFold(u.Scheme, base.Scheme) || !strings.EqualFold(u.Host, base.Host) {
		return fmt.Errorf("%q is not on the server's origin %s://%s", raw, base.Scheme, base.Host)
	}
	return nil
}

// canonicalResource is the server URL as an RFC 8707 resource: no
// fragment, no trailing slash, and neither the userinfo nor the query
// (RFC 8707 §2 advises against one): a config may keep the server's own
// credentials there (user:password@, ?api_key=), and the resource goes to
// the authorization server and into the login URL, beyond any masking.
func canonicalResource(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	c.Path = strings.TrimSuffix(c.Path, "/")
	c.RawPath = ""
	return c.String()
}

// resourceCovers reports whether the resource a metadata document declares
// is this server: same origin, and a path equal to or a segment prefix of
// the server's (a server at /mcp may declare its origin).
func resourceCovers(resource string, base *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || !strings.EqualFold(r.Scheme, base.Scheme) || !strings.EqualFold(r.Host, base.Host) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	bp := strings.TrimSuffix(base.EscapedPath(), "/")
	return rp == bp || strings.HasPrefix(bp, rp+"/")
}

// checkEndpoints rejects endpoints that are not http(s) URLs, which a
// hostile server could use to reach a browser or the file system.
func checkEndpoints(m *ServerMetadata) error {
	for name, v := range map[string]string{
		"authorization_endpoint": m.AuthorizationEndpoint,
		"token_endpoint":         m.TokenEndpoint,
		"registration_endpoint":  m.RegistrationEndpoint,
		"revocation_endpoint":    m.RevocationEndpoint,
	} {
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s %q is not an http(s) URL", name, v)
		}
	}
	return nil
}

// issuerMatches reports whether the issuer a metadata document declares
// may stand for the one asked for: equal, or on the same origin.
func issuerMatches(declared, asked string) bool {
	if strings.TrimSuffix(declared, "/") == strings.TrimSuffix(asked, "/") {
		return true
	}
	d, err1 := url.Parse(declared)
	a, err2 := url.Parse(asked)
	return err1 == nil && err2 == nil && d.Host != "" &&
		strings.EqualFold(d.Scheme, a.Scheme) && strings.EqualFold(d.Host, a.Host)
}
