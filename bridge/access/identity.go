// Package access answers who is calling the gateway and what they may see
// and call: it validates OAuth access tokens (JWTs signed by the issuer's
// JWKS), turns them into an Identity, and matches identities against the
// access rules of the config. It knows nothing of MCP: the gateway asks it
// about canonical tool ids ("server::tool") and server names.
package access

import (
	"context"
	"encoding/json"
	"slices"
)

// Identity is an authenticated caller: what the access token said about
// them. It never holds the token itself, so printing, logging or encoding
// an Identity cannot leak it.
type Identity struct {
	// Subject is the token's sub claim: who the caller is.
	Subject string
	// Issuer is the token's iss claim.
	Issuer string
	// Groups are the values of the configured groups claim.
	Groups []string
	// Scopes are the token's scopes (the scope claim, or scp).
	Scopes []string
	// ClientID is the client the token was issued to (client_id or azp),
	// when the token says.
	ClientID string
}

// String is the subject: what logs, audit lines and spans show.
func (id *Identity) String() string {
	if id == nil {
		return ""
	}
	return id.Subject
}

// MarshalJSON writes the subject, groups and scopes (there is no token in
// an Identity to write).
func (id *Identity) MarshalJSON() ([]byte, error) {
	if id == nil {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		Subject  string   `json:"subject"`
		Groups   []string `json:"groups,omitempty"`
		Scopes   []string `json:"scopes,omitempty"`
		ClientID string   `json:"client_id,omitempty"`
	}{id.Subject, id.Groups, id.Scopes, id.ClientID})
}

// HasScope reports whether the token granted scope.
func (id *Identity) HasScope(scope string) bool { return slices.Contains(id.Scopes, scope) }

// InGroup reports whether the caller is in group.
func (id *Identity) InGroup(group string) bool { return slices.Contains(id.Groups, group) }

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity ctx carries, or nil when the request
// was not authenticated by OAuth (stdio, or serve.auth_token).
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}
