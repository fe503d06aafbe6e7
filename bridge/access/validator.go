package access

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/toolbridge/toolbridge/config"
)

// The caps of the validator. Each names the attack it stops.
const (
	// maxTokenBytes bounds an access token. Real ones are a few KB; a
	// bigger one is refused before any parsing, so a caller cannot make
	// every request cost a megabyte of base64 and JSON decoding.
	maxTokenBytes = 16 << 10
	// maxDocBytes bounds the issuer metadata and the JWKS read. A hostile
	// or broken endpoint (or whoever sits on a plain-http loopback port)
	// cannot make the gateway buffer an endless body.
	maxDocBytes = 1 << 20
	// maxKeys bounds the keys taken from a JWKS: a set of thousands of keys
	// would make every lookup and every refetch expensive.
	maxKeys = 64
	// fetchTimeout bounds one metadata or JWKS fetch: a slow (slow-loris)
	// issuer cannot hold the requests that wait for its keys.
	fetchTimeout = 10 * time.Second
	// minRefetch is the least time between two JWKS fetches. A token with a
	// made-up kid makes the validator look for a new key; without this
	// bound every such request would make the gateway hit the IdP
	// (amplifying a flood of forged tokens onto it).
	minRefetch = 10 * time.Second
	// keysMaxAge is how long a fetched JWKS is used before it is fetched
	// again on the next request, so that a revoked key stops working.
	keysMaxAge = 15 * time.Minute
	// leeway is the clock skew accepted on exp and nbf.
	leeway = 30 * time.Second
	// maxCached bounds the validated-token cache: a flood of distinct
	// valid tokens evicts old entries instead of growing memory.
	maxCached = 10000
	// cacheFor bounds how long a validated token is trusted without being
	// checked again, even when it lives longer (a rotated-out key stops
	// being accepted within this time).
	cacheFor = 5 * time.Minute
)

// allowedAlgs are the signature algorithms accepted: asymmetric only. none
// is never accepted, and neither is any HS*: with an HMAC algorithm the
// issuer's public key (which anyone can fetch) would be the secret.
var allowedAlgs = map[string]bool{
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true,
	"EdDSA": true,
}

// Error is a refused token. Status is 401 (no valid token) or 403 (a
// valid token without a required scope). Its message names the reason for
// the gateway's own log, never the token; what a client is told is the
// fixed Description.
type Error struct {
	Status int
	// Code is the RFC 6750 error code: invalid_token or insufficient_scope.
	Code string
	// Scope is the scopes required, for insufficient_scope.
	Scope  string
	reason string
	// inactive: the issuer's introspection answer refused the token.
	inactive bool
}

func (e *Error) Error() string { return "refusing the access token: " + e.reason }

// Description is what the client is told: the same for every invalid
// token, so that the answer does not help an attacker tell a wrong
// signature from a wrong audience.
func (e *Error) Description() string {
	if e.Code == "insufficient_scope" {
		return "the access token lacks a required scope"
	}
	return "the access token is missing, invalid or expired"
}

func invalid(reason string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", reason: reason}
}

// Validator validates access tokens issued by one issuer for this gateway.
// It is safe for concurrent use.
type Validator struct {
	cfg    config.OAuth
	client *http.Client
	now    func() time.Time

	fetchMu sync.Mutex // one discovery or JWKS fetch at a time
	mu      sync.RWMutex
	jwksURI string
	keys    jwk.Set
	fetched time.Time // when keys were fetched
	tried   time.Time // the last fetch attempt, for minRefetch

	cache *tokenCache
	// in checks opaque tokens (RFC 7662); nil without introspection_url.
	in *introspector
}

// ValidatorOptions are a Validator's collaborators.
type ValidatorOptions struct {
	// HTTPClient fetches the issuer's metadata and JWKS; nil uses a client
	// with fetchTimeout.
	HTTPClient *http.Client
	// Now is the clock (tests move it); nil is time.Now.
	Now func() time.Time
}

// NewValidator returns a validator for cfg. It fetches nothing yet: the
// issuer's metadata and keys are fetched on the first token, so the
// gateway starts while the IdP is down.
func NewValidator(cfg config.OAuth, opts ValidatorOptions) (*Validator, error) {
	if err := config.CheckIssuerURL(cfg.Issuer); err != nil {
		return nil, err
	}
	if cfg.Audience == "" {
		return nil, errors.New("creating the token validator: no audience")
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	v := &Validator{cfg: cfg, client: client, now: now, cache: newTokenCache(maxCached)}
	if cfg.IntrospectionURL != "" {
		if err := config.CheckIssuerURL(cfg.IntrospectionURL); err != nil {
			return nil, fmt.Errorf("creating the token validator: introspection_url: %w", err)
		}
		if cfg.IntrospectionClientID == "" {
			return nil, errors.New("creating the token validator: introspection_url needs introspection_client_id")
		}
		v.in = newIntrospector(cfg.IntrospectionURL, cfg.IntrospectionClientID, cfg.IntrospectionClientSecret, client)
	}
	return v, nil
}

// Validate checks token and returns the caller's identity, or an *Error.
func (v *Validator) Validate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, invalid("no token")
	}
	if len(token) > maxTokenBytes {
		return nil, invalid("token longer than 16 KiB")
	}
	sum := sha256.Sum256([]byte(token))
	now := v.now()
	id, ok := v.cache.get(sum, now)
	if ok && id == nil {
		return nil, invalid("the issuer said recently that this token is not active")
	}
	if !ok {
		var exp time.Time
		var err error
		trust := cacheFor
		if v.in != nil && strings.Count(token, ".") != 2 {
			// Not a JWT: an opaque token, which only the issuer can read.
			trust = introspectCacheFor
			id, exp, err = v.introspect(ctx, token, now)
			if e, isErr := err.(*Error); isErr && e.inactive {
				v.cache.put(sum, nil, now.Add(refusedFor), now)
			}
		} else {
			id, exp, err = v.validate(ctx, token, now)
		}
		if err != nil {
			return nil, err
		}
		// Trusted until its exp at the latest: the cache never outlives
		// the token.
		until := now.Add(trust)
		if !exp.IsZero() && exp.Before(until) {
			until = exp
		}
		v.cache.put(sum, id, until, now)
	}
	if missing := v.missingScopes(id); len(missing) > 0 {
		return nil, &Error{Status: http.StatusForbidden, Code: "insufficient_scope",
			Scope: strings.Join(v.cfg.RequiredScopes, " "), reason: "missing scope " + strings.Join(missing, " ")}
	}
	return id, nil
}

func (v *Validator) missingScopes(id *Identity) []string {
	var missing []string
	for _, s := range v.cfg.RequiredScopes {
		if !id.HasScope(s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// validate does the work of Validate for a token not in the cache.
func (v *Validator) validate(ctx context.Context, token string, now time.Time) (*Identity, time.Time, error) {
	// A JWS in compact form is three base64url parts; anything else (an
	// opaque token, garbage, a JWE) is refused before the library sees it.
	if strings.Count(token, ".") != 2 {
		return nil, time.Time{}, invalid("not a JWT")
	}
	kp := &keyProvider{v: v, ctx: ctx}
	tok, err := jwt.ParseString(token,
		jwt.WithKeyProvider(kp),
		jwt.WithValidate(true),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithAcceptableSkew(leeway),
		jwt.WithClock(jwt.ClockFunc(func() time.Time { return now })),
		jwt.WithRequiredClaim("exp"),
		jwt.WithRequiredClaim("sub"),
	)
	if err != nil {
		if kp.err != nil {
			return nil, time.Time{}, kp.err
		}
		return nil, time.Time{}, invalid(classify(err))
	}
	id := &Identity{Issuer: v.cfg.Issuer}
	id.Subject, _ = tok.Subject()
	if id.Subject == "" {
		return nil, time.Time{}, invalid("empty sub claim")
	}
	exp, _ := tok.Expiration()
	id.Scopes = stringsClaim(tok, "scope", true)
	if len(id.Scopes) == 0 {
		id.Scopes = stringsClaim(tok, "scp", true)
	}
	id.Groups = stringsClaim(tok, v.cfg.GroupsClaim, false)
	if c := stringsClaim(tok, "client_id", false); len(c) == 1 {
		id.ClientID = c[0]
	} else if c := stringsClaim(tok, "azp", false); len(c) == 1 {
		id.ClientID = c[0]
	}
	return id, exp, nil
}

// introspect asks the issuer's introspection endpoint about an opaque
// token. An answer that refuses it is an errInactive (cached briefly); a
// failure to ask is not (the next request asks again).
func (v *Validator) introspect(ctx context.Context, token string, now time.Time) (*Identity, time.Time, error) {
	body, err := v.in.introspect(ctx, token)
	if err != nil {
		return nil, time.Time{}, invalid(err.Error())
	}
	id, exp, err := ParseIntrospection(body, v.cfg.Issuer, v.cfg.Audience, v.cfg.GroupsClaim, now)
	if err != nil {
		return nil, time.Time{}, &Error{Status: http.StatusUnauthorized, Code: "invalid_token", reason: err.Error(), inactive: true}
	}
	return id, exp, nil
}

// classify names why the library refused a token, for the gateway's log.
// The library's own message is not used: it may quote parts of the token.
func classify(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return "expired"
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return "not valid yet (nbf)"
	case errors.Is(err, jwt.InvalidAudienceError()):
		return "aud does not name this gateway"
	case errors.Is(err, jwt.InvalidIssuerError()):
		return "wrong issuer"
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return "a required claim (exp, sub) is missing"
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return "iat in the future"
	}
	return "malformed token or bad signature"
}

// stringsClaim reads a claim that is a string or a list of strings. split
// splits a string on spaces (the scope claim, RFC 8693 §4.2).
func stringsClaim(tok jwt.Token, name string, split bool) []string {
	var raw any
	if err := tok.Get(name, &raw); err != nil {
		return nil
	}
	return claimStrings(raw, split)
}

// keyProvider gives the library the one key that may verify a signature:
// the JWKS key with the token's kid, if the token's alg is allowed and
// fits that key. It refetches the JWKS once for an unknown kid (bounded by
// minRefetch).
type keyProvider struct {
	v   *Validator
	ctx context.Context
	err *Error // why no key was given, when it is worth more than the library's error
}

func (kp *keyProvider) FetchKeys(_ context.Context, sink jws.KeySink, sig *jws.Signature, _ *jws.Message) error {
	h := sig.ProtectedHeaders()
	alg, ok := h.Algorithm()
	if !ok || !allowedAlgs[alg.String()] {
		kp.err = invalid("algorithm not allowed")
		return kp.err
	}
	kid, _ := h.KeyID()
	key, err := kp.v.key(kp.ctx, kid)
	if err != nil {
		kp.err = invalid(err.Error())
		return kp.err
	}
	if !keyFits(key, alg) {
		kp.err = invalid("algorithm does not fit the key")
		return kp.err
	}
	sink.Key(alg, key)
	return nil
}

// keyFits checks that the key is of the family alg needs, is meant for
// signatures, and, if the key names an alg, that it is this one.
func keyFits(key jwk.Key, alg jwa.SignatureAlgorithm) bool {
	if use, ok := key.KeyUsage(); ok && use != "sig" {
		return false
	}
	if ka, ok := key.Algorithm(); ok && ka.String() != alg.String() {
		return false
	}
	name := alg.String()
	switch key.KeyType() {
	case jwa.RSA():
		return strings.HasPrefix(name, "RS") || strings.HasPrefix(name, "PS")
	case jwa.EC():
		return strings.HasPrefix(name, "ES")
	case jwa.OKP():
		return name == "EdDSA"
	}
	return false
}

// key returns the signing key with kid (any key when kid is empty and the
// set holds exactly one).
func (v *Validator) key(ctx context.Context, kid string) (jwk.Key, error) {
	v.mu.RLock()
	keys, fetched := v.keys, v.fetched
	v.mu.RUnlock()
	now := v.now()
	if keys != nil && now.Sub(fetched) < keysMaxAge {
		if k, ok := lookup(keys, kid); ok {
			return k, nil
		}
	}
	// Unknown kid or stale keys: fetch again, unless a fetch was tried
	// within minRefetch.
	keys, err := v.refresh(ctx, keys)
	if err != nil {
		return nil, err
	}
	if k, ok := lookup(keys, kid); ok {
		return k, nil
	}
	return nil, errors.New("no key with the token's kid in the issuer's JWKS")
}

func lookup(keys jwk.Set, kid string) (jwk.Key, bool) {
	if keys == nil {
		return nil, false
	}
	if kid == "" {
		if keys.Len() == 1 {
			return keys.Key(0)
		}
		return nil, false
	}
	return keys.LookupKeyID(kid)
}

// refresh fetches the JWKS again (discovering its URL first if needed),
// unless another fetch happened within minRefetch; then it returns the
// keys held (old is what the caller saw).
func (v *Validator) refresh(ctx context.Context, old jwk.Set) (jwk.Set, error) {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	v.mu.RLock()
	keys, tried := v.keys, v.tried
	v.mu.RUnlock()
	if keys != old {
		return keys, nil // someone else fetched while we waited
	}
	now := v.now()
	if !tried.IsZero() && now.Sub(tried) < minRefetch {
		if keys == nil {
			return nil, errors.New("the issuer's keys are not available (fetch failed recently)")
		}
		return keys, nil
	}
	v.mu.Lock()
	v.tried = now
	v.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	set, err := v.fetchKeys(ctx)
	if err != nil {
		if keys != nil {
			return keys, nil // keep serving with what we had
		}
		return nil, err
	}
	v.mu.Lock()
	v.keys, v.fetched = set, v.now()
	v.mu.Unlock()
	return set, nil
}

// fetchKeys discovers the JWKS URL (once) and fetches the set.
func (v *Validator) fetchKeys(ctx context.Context) (jwk.Set, error) {
	v.mu.RLock()
	uri := v.jwksURI
	v.mu.RUnlock()
	if uri == "" {
		var err error
		if uri, err = v.discover(ctx); err != nil {
			return nil, err
		}
		v.mu.Lock()
		v.jwksURI = uri
		v.mu.Unlock()
	}
	body, err := v.get(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("fetching the issuer's JWKS: %w", err)
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("parsing the issuer's JWKS from %s: %w", uri, err)
	}
	if set.Len() > maxKeys {
		return nil, fmt.Errorf("the issuer's JWKS at %s has %d keys, more than %d", uri, set.Len(), maxKeys)
	}
	// Only public keys are used: a set that (wrongly) publishes a private
	// or symmetric key must not turn into an HMAC secret.
	out := jwk.NewSet()
	for i := range set.Len() {
		k, _ := set.Key(i)
		if k.KeyType() == jwa.OctetSeq() {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			continue
		}
		_ = out.AddKey(pub)
	}
	return out, nil
}

// discover finds the issuer's jwks_uri through its RFC 8414 metadata,
// then its OpenID Connect discovery document, and checks that the document
// names the configured issuer (RFC 8414 §3.3: it stops an attacker's
// metadata from passing for the issuer's).
func (v *Validator) discover(ctx context.Context) (string, error) {
	u, err := url.Parse(v.cfg.Issuer)
	if err != nil {
		return "", fmt.Errorf("discovering the issuer's metadata: %w", err)
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(v.cfg.Issuer, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		body, err := v.get(ctx, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
			continue
		}
		if meta.Issuer != v.cfg.Issuer {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", c, meta.Issuer, v.cfg.Issuer))
			continue
		}
		if err := secureURL(meta.JWKSURI); err != nil {
			errs = append(errs, fmt.Errorf("%s: jwks_uri: %w", c, err))
			continue
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("discovering the issuer's metadata: %w", errors.Join(errs...))
}

// secureURL accepts https URLs, and http ones on a loopback host.
func secureURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("invalid URL %q", s)
	}
	if u.Scheme == "https" {
		return nil
	}
	if u.Scheme == "http" {
		h := u.Hostname()
		if strings.EqualFold(h, "localhost") {
			return nil
		}
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%q must use https://", s)
}

// get fetches a JSON document, bounded by maxDocBytes.
func (v *Validator) get(ctx context.Context, uri string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", uri, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", uri, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: status %s", uri, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", uri, err)
	}
	if len(body) > maxDocBytes {
		return nil, fmt.Errorf("reading %s: longer than %d bytes", uri, maxDocBytes)
	}
	return body, nil
}

// tokenCache remembers validated tokens by their SHA-256 (never the token
// itself) until min(exp, cacheFor): a client sends the same token on every
// request, and a signature check costs far more than a hash.
type tokenCache struct {
	mu  sync.Mutex
	max int
	m   map[[sha256.Size]byte]cached
}

type cached struct {
	id    *Identity
	until time.Time
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, m: map[[sha256.Size]byte]cached{}}
}

func (c *tokenCache) get(sum [sha256.Size]byte, now time.Time) (*Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[sum]
	if !ok {
		return nil, false
	}
	if !now.Before(e.until) {
		delete(c.m, sum)
		return nil, false
	}
	return e.id, true
}

func (c *tokenCache) put(sum [sha256.Size]byte, id *Identity, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		// Full: drop the expired entries, and if that frees nothing, any
		// (map order) entry. A dropped token is only validated again.
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[sum] = cached{id: id, until: until}
}
