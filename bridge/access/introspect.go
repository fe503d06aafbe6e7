package access

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The caps of token introspection (RFC 7662). Each names the attack it
// stops.
const (
	// maxIntrospectionBytes bounds an introspection answer. Real ones are
	// a few hundred bytes; a hostile or broken endpoint cannot make the
	// gateway buffer an endless body on every request.
	maxIntrospectionBytes = 64 << 10
	// introspectTimeout bounds one introspection, the wait for a slot
	// included: a slow (slow-loris) endpoint, or a queue of made-up
	// tokens, cannot hold the callers' requests forever.
	introspectTimeout = 10 * time.Second
	// maxIntrospecting bounds the introspection requests in flight. Every
	// made-up opaque token misses the cache; without this bound a flood
	// of them would turn into as many concurrent requests to the IdP (the
	// gateway amplifying an attack onto it). Requests beyond it wait for a
	// slot, within introspectTimeout.
	maxIntrospecting = 8
	// introspectCacheFor bounds how long an active answer is trusted
	// without asking again, even when the token lives longer: a token
	// revoked at the IdP stops working within this time (RFC 7662 §4).
	introspectCacheFor = time.Minute
	// refusedFor is how long an inactive answer is remembered: a client
	// retrying one dead token in a loop asks the IdP once per this time,
	// not on every request.
	refusedFor = 10 * time.Second
)

// introspector asks the issuer's RFC 7662 endpoint about opaque tokens.
type introspector struct {
	url, clientID, secret string
	client                *http.Client
	slots                 chan struct{}
}

func newIntrospector(endpoint, clientID, secret string, client *http.Client) *introspector {
	return &introspector{url: endpoint, clientID: clientID, secret: secret, client: client,
		slots: make(chan struct{}, maxIntrospecting)}
}

// introspect asks about token and returns the raw answer. Errors name the
// endpoint and what went wrong, never the token, the secret or the body.
func (in *introspector) introspect(ctx context.Context, token string) ([]byte, error) {
	// The timeout covers the wait for a slot too: under a flood the
	// requests queued behind the slots give up (401, not cached) instead
	// of piling up for as long as their clients keep the connection.
	ctx, cancel := context.WithTimeout(ctx, introspectTimeout)
	defer cancel()
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to introspect at %s: %w", in.url, ctx.Err())
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("introspecting at %s: %w", in.url, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// client_secret_basic: both parts form-encoded first (RFC 6749 §2.3.1).
	req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret))
	resp, err := in.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its message would repeat the URL
		}
		return nil, fmt.Errorf("introspecting at %s: %w", in.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("introspecting at %s: status %s (is introspection_client_id/secret right?)", in.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the introspection answer from %s: %w", in.url, err)
	}
	if len(body) > maxIntrospectionBytes {
		return nil, fmt.Errorf("the introspection answer from %s is longer than %d bytes", in.url, maxIntrospectionBytes)
	}
	return body, nil
}

// errInactive is an answer that does not let the token in; its text is
// the reason for the gateway's log.
type errInactive string

func (e errInactive) Error() string { return string(e) }

// ParseIntrospection reads an RFC 7662 answer about an access token for
// audience from issuer, as of now, and returns who the token belongs to
// and when it expires (zero when the answer does not say). It refuses an
// answer that is not active, names another issuer, does not name audience
// in aud (a token minted for another resource: no passthrough), has no
// sub, or is expired or not valid yet (with leeway). The error never
// quotes the answer: it may hold claims of a token that is not ours.
func ParseIntrospection(body []byte, issuer, audience, groupsClaim string, now time.Time) (*Identity, time.Time, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, time.Time{}, errInactive("the introspection answer is not a JSON object")
	}
	if dec.More() {
		return nil, time.Time{}, errInactive("the introspection answer has data after its JSON object")
	}
	// Only a JSON true is active: "true", 1 or a missing field are not.
	if active, _ := m["active"].(bool); !active {
		return nil, time.Time{}, errInactive("the token is not active")
	}
	if iss, ok := m["iss"]; ok {
		if s, _ := iss.(string); s != issuer {
			return nil, time.Time{}, errInactive("the introspection answer names another issuer")
		}
	}
	if !slices.Contains(claimStrings(m["aud"], false), audience) {
		return nil, time.Time{}, errInactive("aud does not name this gateway")
	}
	exp, ok, err := numericDate(m, "exp")
	if err != nil {
		return nil, time.Time{}, err
	}
	if ok && !now.Before(exp.Add(leeway)) {
		return nil, time.Time{}, errInactive("expired")
	}
	nbf, ok2, err := numericDate(m, "nbf")
	if err != nil {
		return nil, time.Time{}, err
	}
	if ok2 && now.Add(leeway).Before(nbf) {
		return nil, time.Time{}, errInactive("not valid yet (nbf)")
	}
	sub, _ := m["sub"].(string)
	if sub == "" {
		return nil, time.Time{}, errInactive("the introspection answer has no sub")
	}
	id := &Identity{Subject: sub, Issuer: issuer,
		Scopes: claimStrings(m["scope"], true),
		Groups: claimStrings(m[groupsClaim], false)}
	if c := claimStrings(m["client_id"], false); len(c) == 1 {
		id.ClientID = c[0]
	}
	if !ok {
		exp = time.Time{}
	}
	return id, exp, nil
}

// numericDate reads a NumericDate (seconds since the epoch) claim.
func numericDate(m map[string]any, name string) (time.Time, bool, error) {
	raw, ok := m[name]
	if !ok || raw == nil {
		return time.Time{}, false, nil
	}
	n, isNum := raw.(json.Number)
	if !isNum {
		return time.Time{}, false, errInactive("the introspection answer's " + name + " is not a number")
	}
	f, err := n.Float64()
	// Bounded to years 1970 to 9999: a huge value would overflow
	// time.Duration arithmetic into the past or far future.
	if err != nil || f < 0 || f > 253402300799 {
		return time.Time{}, false, errInactive("the introspection answer's " + name + " is out of range")
	}
	return time.Unix(int64(f), 0), true, nil
}

// claimStrings reads a claim that is a string or a list of strings, from a
// JWT or an introspection answer; split splits a string on spaces (the
// scope claim, RFC 8693 §4.2).
func claimStrings(raw any, split bool) []string {
	switch x := raw.(type) {
	case string:
		if split {
			return strings.Fields(x)
		}
		if x == "" {
			return nil
		}
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return slices.Clone(x)
	}
	return nil
}
