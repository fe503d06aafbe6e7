package oauth

import (
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

	"github.com/mark3labs/mcp-go/client/transport"
)

// Token endpoint client authentication methods (RFC 7591 §2, RFC 7523).
const (
	AuthNone          = "none"
	AuthSecretBasic   = "client_secret_basic"
	AuthSecretPost    = "client_secret_post"
	AuthPrivateKeyJWT = "private_key_jwt"
)

// Grants.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// TokenError is an OAuth error answer from a token endpoint (RFC 6749
// §5.2). It holds the server's code and description, never what was sent:
// requestToken masks in them every secret the request carried, since some
// servers echo the request in error_description.
type TokenError struct {
	Status      int
	Code        string
	Description string
}

func (e *TokenError) Error() string {
	s := "the authorization server refused: " + e.Code
	if e.Code == "" {
		s = fmt.Sprintf("the authorization server answered status %d", e.Status)
	}
	if e.Description != "" {
		s += " (" + oneLine(e.Description, 200) + ")"
	}
	return s
}

// Transient reports whether the answer may change if the request is sent
// again: a server error (5xx), 408 or 429, or the OAuth codes server_error
// and temporarily_unavailable (which GitHub-style servers send with any
// status). Every other answer (invalid_grant, invalid_client, any other
// 4xx) is definitive.
func (e *TokenError) Transient() bool {
	switch {
	case e.Code == "server_error" || e.Code == "temporarily_unavailable":
		return true
	case e.Status >= 500 || e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests:
		return true
	}
	return false
}

// noAnswerError is a token request that got no complete answer: the
// server could not be reached, the connection broke, or it timed out.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return e.err.Error() }

func (e *noAnswerError) Unwrap() error { return e.err }

// transient reports whether a failed token request may succeed if sent
// again: no answer (a network error or a timeout) or a transient OAuth
// error. A refresh that fails transiently leaves the stored token alone:
// only a definitive refusal means a new login is needed.
func transient(err error) bool {
	var na *noAnswerError
	if errors.As(err, &na) {
		return true
	}
	var te *TokenError
	return errors.As(err, &te) && te.Transient()
}

// Retries of a refresh or client credentials grant that failed
// transiently: tokenAttempts tries in all, waiting tokenBackoff before the
// second and twice as long before each next, so one request waits at most
// 0.75s more than its tries take, and an unlucky 500 or dropped
// connection costs nobody a login.
const (
	tokenAttempts = 3
	tokenBackoff  = 250 * time.Millisecond
)

// requestTokenRetrying is requestToken, tried again after a transient
// failure (see transient) within tokenAttempts and ctx. The code exchange
// does not use it: a code is single-use, and a retry would only turn a 500
// into invalid_grant.
func requestTokenRetrying(ctx context.Context, hc *http.Client, endpoint string, form url.Values, auth clientAuth) (*transport.Token, error) {
	wait := tokenBackoff
	for attempt := 1; ; attempt++ {
		tok, err := requestToken(ctx, hc, endpoint, form, auth)
		if err == nil || attempt == tokenAttempts || !transient(err) {
			return tok, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait *= 2
	}
}

// oneLine cuts s to one line of at most n bytes, for messages built from
// what a server said.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// clientAuth is how the client authenticates at the token endpoint.
type clientAuth struct {
	id, secret string
	method     string
	// key signs private_key_jwt assertions; audience is the issuer.
	key      *signer
	audience string
}

// apply adds the client's credentials to a token or revocation request.
func (a clientAuth) apply(req *http.Request, form url.Values) error {
	switch a.method {
	case AuthSecretBasic:
		// RFC 6749 §2.3.1: both parts are form-encoded first.
		req.SetBasicAuth(url.QueryEscape(a.id), url.QueryEscape(a.secret))
	case AuthSecretPost:
		form.Set("client_id", a.id)
		form.Set("client_secret", a.secret)
	case AuthPrivateKeyJWT:
		if a.key == nil {
			return errors.New("private_key_jwt needs a private key")
		}
		assertion, err := a.key.assertion(a.id, a.audience, time.Now())
		if err != nil {
			return err
		}
		form.Set("client_id", a.id)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	default: // none
		form.Set("client_id", a.id)
	}
	return nil
}

// pickAuthMethod chooses the token endpoint authentication: the one
// configured or registered, else the first the server supports of those
// the client can do with what it has. A server that lists none is sent
// the secret in the body (RFC 6749 leaves the default to the server; the
// MCP reference clients do this).
func pickAuthMethod(preferred, secret string, supported []string) string {
	if preferred != "" {
		return preferred
	}
	if secret == "" {
		return AuthNone
	}
	for _, m := range supported {
		if m == AuthSecretBasic || m == AuthSecretPost {
			return m
		}
	}
	if len(supported) > 0 && slices.Contains(supported, AuthNone) {
		return AuthNone
	}
	return AuthSecretPost
}

// requestToken posts form to the token endpoint and decodes the token.
func requestToken(ctx context.Context, hc *http.Client, endpoint string, form url.Values, auth clientAuth) (*transport.Token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("requesting a token: %w", err)
	}
	if err := auth.apply(req, form); err != nil {
		return nil, fmt.Errorf("requesting a token: %w", err)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	sent := sentSecrets(req, form)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, &noAnswerError{fmt.Errorf("requesting a token from %s: %w", endpoint, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if err != nil {
		return nil, &noAnswerError{fmt.Errorf("reading the token answer of %s: %w", endpoint, err)}
	}
	var oe struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(b, &oe)
	// Some servers (GitHub) answer errors with status 200.
	if resp.StatusCode < 200 || resp.StatusCode >= 300 || oe.Error != "" {
		// Some servers echo the request in their answer: what it
		// carried must not reach a log, the store or the terminal.
		return nil, &TokenError{Status: resp.StatusCode, Code: maskSecrets(oe.Error, sent...), Description: maskSecrets(oe.Description, sent...)}
	}
	var tok transport.Token
	if err := json.Unmarshal(b, &tok); err != nil {
		return nil, fmt.Errorf("decoding the token answer of %s: %w", endpoint, err)
	}
	if tok.AccessToken == "" {
		return nil, fmt.Errorf("the token answer of %s has no access_token", endpoint)
	}
	if tok.ExpiresIn > 0 {
		tok.ExpiresAt = time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return &tok, nil
}

// secretParams are the form parameters of token and revocation requests
// that carry secrets.
var secretParams = []string{"refresh_token", "code", "code_verifier", "client_secret", "client_assertion", "token"}

// sentSecrets returns the secrets req carries, once auth applied to it and
// form is its body: the secret parameters and the Authorization header,
// each as sent and as its decoded parts.
func sentSecrets(req *http.Request, form url.Values) []string {
	var out []string
	for _, k := range secretParams {
		out = append(out, form[k]...)
	}
	if h := req.Header.Get("Authorization"); h != "" {
		out = append(out, h)
		if _, cred, ok := strings.Cut(h, " "); ok {
			out = append(out, cred)
		}
		if _, secret, ok := req.BasicAuth(); ok {
			// RFC 6749 §2.3.1 form-encodes both parts first; the client
			// id is public.
			out = append(out, secret)
			if dec, err := url.QueryUnescape(secret); err == nil {
				out = append(out, dec)
			}
		}
	}
	return out
}

// minSecret is the shortest value maskSecrets masks: shorter ones are not
// secrets worth the mangled text.
const minSecret = 6

// maskSecrets replaces in text every secret, as given and in the
// encodings an echo may use (form and URL escaping), by a mask.
func maskSecrets(text string, secrets ...string) string {
	var forms []string
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		forms = append(forms, s, url.QueryEscape(s), url.PathEscape(s))
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range forms {
		text = strings.ReplaceAll(text, f, "****")
	}
	return text
}

// revoke asks the revocation endpoint (RFC 7009) to revoke token.
func revoke(ctx context.Context, hc *http.Client, endpoint, token, hint string, auth clientAuth) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return fmt.Errorf("revoking: %w", err)
	}
	if err := auth.apply(req, form); err != nil {
		return fmt.Errorf("revoking: %w", err)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("revoking at %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoking at %s: status %d", endpoint, resp.StatusCode)
	}
	return nil
}
