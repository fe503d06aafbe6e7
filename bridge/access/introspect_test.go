package access_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/config"
)

const introspectIssuer = "https://idp.example.com"

// TestParseIntrospection: every answer that must not let a token in is
// refused, with a reason that does not quote the answer.
func TestParseIntrospection(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(time.Hour).Unix()
	good := fmt.Sprintf(`{"active":true,"sub":"alice","aud":[%q,"other"],"exp":%d,"scope":"mcp:tools openid","groups":["dev"],"client_id":"cli","iss":%q}`, audience, exp, introspectIssuer)
	for _, tc := range []struct {
		name, body, reason string
	}{
		{"not JSON", `<html>login</html>`, "not a JSON object"},
		{"empty", ``, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"array", `[{"active":true}]`, "not a JSON object"},
		{"two objects", `{"active":true,"sub":"a","aud":"` + audience + `"}{"active":false}`, "data after"},
		{"active missing", `{"sub":"alice","aud":"` + audience + `"}`, "not active"},
		{"active false", `{"active":false,"sub":"alice","aud":"` + audience + `"}`, "not active"},
		{"active as string", `{"active":"true","sub":"alice","aud":"` + audience + `"}`, "not active"},
		{"active as number", `{"active":1,"sub":"alice","aud":"` + audience + `"}`, "not active"},
		{"other issuer", `{"active":true,"sub":"alice","aud":"` + audience + `","iss":"https://evil.example.com"}`, "another issuer"},
		{"issuer not a string", `{"active":true,"sub":"alice","aud":"` + audience + `","iss":7}`, "another issuer"},
		{"no aud", `{"active":true,"sub":"alice"}`, "aud does not name"},
		{"aud of an upstream", `{"active":true,"sub":"alice","aud":"https://upstream.example.com/mcp"}`, "aud does not name"},
		{"aud prefix only", `{"active":true,"sub":"alice","aud":"` + audience + `/x"}`, "aud does not name"},
		{"aud not strings", `{"active":true,"sub":"alice","aud":[1,2]}`, "aud does not name"},
		{"expired", fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"exp":%d}`, audience, now.Add(-time.Minute).Unix()), "expired"},
		{"exp as string", fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"exp":"%d"}`, audience, exp), "not a number"},
		{"exp huge", fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"exp":1e300}`, audience), "out of range"},
		{"exp negative", fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"exp":-5}`, audience), "out of range"},
		{"nbf future", fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"nbf":%d}`, audience, now.Add(time.Hour).Unix()), "nbf"},
		{"no sub", fmt.Sprintf(`{"active":true,"aud":%q}`, audience), "no sub"},
		{"sub not a string", fmt.Sprintf(`{"active":true,"aud":%q,"sub":42}`, audience), "no sub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, _, err := access.ParseIntrospection([]byte(tc.body), introspectIssuer, audience, "groups", now)
			if err == nil {
				t.Fatalf("accepted: %+v", id)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("reason %q, want it to say %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "evil") {
				t.Errorf("reason quotes the answer: %v", err)
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		id, gotExp, err := access.ParseIntrospection([]byte(good), introspectIssuer, audience, "groups", now)
		if err != nil {
			t.Fatal(err)
		}
		if id.Subject != "alice" || !id.InGroup("dev") || !id.HasScope("mcp:tools") || id.ClientID != "cli" || id.Issuer != introspectIssuer || gotExp.Unix() != exp {
			t.Errorf("identity %+v exp %v", id, gotExp)
		}
	})
	t.Run("aud as a string, no exp, no iss", func(t *testing.T) {
		id, gotExp, err := access.ParseIntrospection([]byte(`{"active":true,"sub":"bob","aud":"`+audience+`","groups":"ops"}`), introspectIssuer, audience, "groups", now)
		if err != nil {
			t.Fatal(err)
		}
		if id.Subject != "bob" || !id.InGroup("ops") || !gotExp.IsZero() {
			t.Errorf("identity %+v exp %v", id, gotExp)
		}
	})
}

// introspectionEndpoint is an RFC 7662 endpoint for tests: it checks the
// gateway's client credentials and answers what answer says for a token.
type introspectionEndpoint struct {
	*httptest.Server
	calls  atomic.Int32
	mu     sync.Mutex
	answer func(token string) (int, string)
}

const (
	introClient = "toolbridge-gw"
	introSecret = "s3cr3t-introspection-5b1f"
)

func newIntrospectionEndpoint(t *testing.T, answer func(token string) (int, string)) *introspectionEndpoint {
	t.Helper()
	e := &introspectionEndpoint{answer: answer}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != introClient || secret != introSecret || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token_type_hint") != "access_token" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		status, body := e.answer(r.PostForm.Get("token"))
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *introspectionEndpoint) setAnswer(f func(string) (int, string)) {
	e.mu.Lock()
	e.answer = f
	e.mu.Unlock()
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func introspectingValidator(t *testing.T, endpoint, secret string, clk *clock) *access.Validator {
	t.Helper()
	v, err := access.NewValidator(config.OAuth{
		Issuer: introspectIssuer, Audience: audience, GroupsClaim: "groups", RequiredScopes: []string{"mcp:tools"},
		IntrospectionURL: endpoint, IntrospectionClientID: introClient, IntrospectionClientSecret: secret,
	}, access.ValidatorOptions{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestIntrospection: an opaque token is accepted on the issuer's word,
// that word is cached by the token's hash for at most introspectCacheFor
// and never past the token's exp, a refusal is remembered briefly, a
// failure to ask is not, and neither the token nor the client secret
// reaches an error.
func TestIntrospection(t *testing.T) {
	const opaque = "opaque-token-4c1d9e7a2b"
	clk := &clock{t: time.Now()}
	exp := clk.now().Add(90 * time.Second)
	answer := func(tok string) (int, string) {
		if tok != opaque {
			return http.StatusOK, `{"active":false}`
		}
		return http.StatusOK, fmt.Sprintf(`{"active":true,"sub":"svc-a","aud":%q,"scope":"mcp:tools","groups":["ops"],"exp":%d}`, audience, exp.Unix())
	}
	e := newIntrospectionEndpoint(t, answer)
	v := introspectingValidator(t, e.URL, introSecret, clk)
	ctx := context.Background()

	id, err := v.Validate(ctx, opaque)
	if err != nil || id.Subject != "svc-a" || !id.InGroup("ops") {
		t.Fatalf("Validate: %+v %v", id, err)
	}
	if _, err := v.Validate(ctx, opaque); err != nil || e.calls.Load() != 1 {
		t.Fatalf("second Validate: %v, %d introspection calls, want 1 (cached)", err, e.calls.Load())
	}
	// The cache trusts an answer for at most a minute, though the token
	// lives 90s: after 61s the issuer is asked again.
	clk.add(61 * time.Second)
	if _, err := v.Validate(ctx, opaque); err != nil || e.calls.Load() != 2 {
		t.Fatalf("after 61s: %v, %d calls, want 2 (asked again)", err, e.calls.Load())
	}
	// That answer is cached until exp (29s away), not for another minute:
	// at exp the cache lets go and the issuer's answer (expired) refuses.
	clk.add(30 * time.Second)
	e.setAnswer(func(string) (int, string) { return http.StatusOK, `{"active":false}` })
	if _, err := v.Validate(ctx, opaque); err == nil || e.calls.Load() != 3 {
		t.Fatalf("past exp: %v, %d calls, want a refusal after asking (3)", err, e.calls.Load())
	}
	// A refusal is remembered for a few seconds: a client retrying a
	// dead token does not make the gateway ask on every request.
	before := e.calls.Load()
	for range 5 {
		if _, err := v.Validate(ctx, opaque); err == nil {
			t.Fatal("a refused token was accepted")
		}
	}
	if got := e.calls.Load() - before; got != 0 {
		t.Errorf("%d introspection calls for a token refused a moment ago, want 0", got)
	}
	clk.add(11 * time.Second)
	if _, err := v.Validate(ctx, opaque); err == nil || e.calls.Load() != before+1 {
		t.Errorf("after the refusal's 10s: %v, calls %d, want one more ask", err, e.calls.Load()-before)
	}

	// A failure to ask is not cached: the next request asks again.
	e.setAnswer(func(string) (int, string) { return http.StatusInternalServerError, `oops` })
	const other = "opaque-token-other-77f0a1"
	before = e.calls.Load()
	for range 2 {
		_, err := v.Validate(ctx, other)
		var ae *access.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
			t.Fatalf("endpoint failing: %v, want a 401", err)
		}
		if !strings.Contains(err.Error(), "500") {
			t.Errorf("reason %q does not say the endpoint failed", err)
		}
		checkQuiet(t, err.Error(), other)
	}
	if got := e.calls.Load() - before; got != 2 {
		t.Errorf("%d calls for two requests while the endpoint fails, want 2 (a failure is not cached)", got)
	}
}

// checkQuiet fails when text holds the token or the client secret.
func checkQuiet(t *testing.T, text, token string) {
	t.Helper()
	for _, s := range []string{token, introSecret} {
		if strings.Contains(text, s) {
			t.Errorf("%q holds a secret (%s…)", text, s[:4])
		}
	}
}

// TestIntrospectionBrokenEndpoint: whatever the endpoint does, the token
// is refused with a 401 that quotes neither it nor the client secret.
func TestIntrospectionBrokenEndpoint(t *testing.T) {
	const opaque = "opaque-broken-9d8c7b6a"
	big := `{"active":true,"sub":"x","aud":"` + audience + `","pad":"` + strings.Repeat("a", 70<<10) + `"}`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		secret string
		reason string
	}{
		{"wrong client secret", 0, "", "wrong-secret", "status 401"},
		{"server error", http.StatusInternalServerError, `{"active":true}`, introSecret, "status 500"},
		{"HTML login page", http.StatusOK, `<html>sign in</html>`, introSecret, "not a JSON object"},
		{"answer too big", http.StatusOK, big, introSecret, "longer than"},
		{"echoes the token", http.StatusOK, `{"active":false,"token":"` + opaque + `"}`, introSecret, "not active"},
		{"no aud", http.StatusOK, `{"active":true,"sub":"svc","scope":"mcp:tools"}`, introSecret, "aud does not name"},
		{"lacks the scope", http.StatusOK, `{"active":true,"sub":"svc","aud":"` + audience + `","scope":"openid"}`, introSecret, "missing scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newIntrospectionEndpoint(t, func(string) (int, string) { return tc.status, tc.body })
			v := introspectingValidator(t, e.URL, tc.secret, &clock{t: time.Now()})
			_, err := v.Validate(context.Background(), opaque)
			var ae *access.Error
			if !errors.As(err, &ae) {
				t.Fatalf("Validate: %v, want an *access.Error", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("reason %q, want %q", err, tc.reason)
			}
			checkQuiet(t, err.Error(), opaque)
			checkQuiet(t, ae.Description(), opaque)
			if tc.secret != introSecret && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("reason quotes the configured secret: %v", err)
			}
		})
	}
}

// TestIntrospectionOnlyForOpaqueTokens: a JWT is never sent to the
// introspection endpoint (its signature decides), and without
// introspection_url an opaque token is refused without a request.
func TestIntrospectionOnlyForOpaqueTokens(t *testing.T) {
	e := newIntrospectionEndpoint(t, func(string) (int, string) {
		return http.StatusOK, `{"active":true,"sub":"x","aud":"` + audience + `","scope":"mcp:tools"}`
	})
	v := introspectingValidator(t, e.URL, introSecret, &clock{t: time.Now()})
	if _, err := v.Validate(context.Background(), "eyJhbGciOiJSUzI1NiJ9.e30.sig"); err == nil {
		t.Error("a forged JWT was accepted")
	}
	if n := e.calls.Load(); n != 0 {
		t.Errorf("a JWT was introspected (%d calls)", n)
	}
	plain, err := access.NewValidator(config.OAuth{Issuer: introspectIssuer, Audience: audience, GroupsClaim: "groups"}, access.ValidatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Validate(context.Background(), "opaque-token"); err == nil || !strings.Contains(err.Error(), "not a JWT") {
		t.Errorf("without introspection_url: %v, want 'not a JWT'", err)
	}
}

// FuzzParseIntrospection: no answer makes the parser panic, and every
// answer it accepts is active, names the audience and has a subject.
func FuzzParseIntrospection(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add(`{"active":true,"sub":"a","aud":"` + audience + `"}`)
	f.Add(`{"active":true,"sub":"a","aud":["x","` + audience + `"],"exp":1800000100,"nbf":1799999000,"scope":"a b","groups":["g"]}`)
	f.Add(`{"active":"true","sub":"a","aud":"` + audience + `"}`)
	f.Add(`{"active":true,"sub":"a","aud":"` + audience + `","exp":1e400}`)
	f.Add(`{"active":true,"sub":"a","aud":"` + audience + `","exp":-1}`)
	f.Add(`{"active":true}{"active":true}`)
	f.Add(`[]`)
	f.Add(`null`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, body string) {
		id, exp, err := access.ParseIntrospection([]byte(body), introspectIssuer, audience, "groups", now)
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal([]byte(body), &m) != nil || m["active"] != true || id.Subject == "" {
			t.Fatalf("accepted %q as %+v", body, id)
		}
		if !exp.IsZero() && !now.Before(exp.Add(time.Minute)) {
			t.Fatalf("accepted an expired answer %q", body)
		}
	})
}

// TestIntrospectionBoundsConcurrency: a burst of made-up opaque tokens (each
// a cache miss) never has more than 8 introspection requests open at the
// IdP at once; the rest wait for a slot.
func TestIntrospectionBoundsConcurrency(t *testing.T) {
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"active":false}`))
	}))
	t.Cleanup(srv.Close)
	v := introspectingValidator(t, srv.URL, introSecret, &clock{t: time.Now()})
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() { _, _ = v.Validate(context.Background(), fmt.Sprintf("made-up-opaque-%02d", i)) })
	}
	// Wait (bounded) until the IdP holds as many as it will get, then
	// give the others a moment to push past the bound if there were none.
	deadline := time.Now().Add(30 * time.Second)
	for inflight.Load() < 8 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 8 {
		t.Errorf("at most %d introspection requests were open at once, want exactly 8 (the bound, reached by 24 callers)", p)
	}
}
