package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
)

// recordSent wraps h and keeps every value of the secret parameters and
// the Authorization header of the token requests it sees: what the
// client sent that nothing it prints or stores may repeat.
func recordSent(h oauthtest.TokenHook) (oauthtest.TokenHook, func() []string) {
	var mu sync.Mutex
	var sent []string
	return func(w http.ResponseWriter, r *http.Request) bool {
			mu.Lock()
			for _, k := range secretParams {
				sent = append(sent, r.PostForm[k]...)
			}
			if h := r.Header.Get("Authorization"); h != "" {
				sent = append(sent, strings.TrimPrefix(h, "Basic "))
			}
			if _, secret, ok := r.BasicAuth(); ok {
				sent = append(sent, secret)
			}
			mu.Unlock()
			return h(w, r)
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), sent...)
		}
}

// TestEchoedRequestNeverLeaks runs every grant against a token endpoint
// whose error_description echoes the request (#24 item 1): the refresh
// token, code, verifier, client secret (in the body and in Basic auth)
// and the private_key_jwt assertion appear in no error, no stored record
// ("needs_login"), no status reason and no /readyz message, while the
// server's code and the rest of its description still do.
func TestEchoedRequestNeverLeaks(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		// loginFirst logs in (authorization code) before the hook is
		// set, so that the refused request is a refresh.
		loginFirst  bool
		refuseLogin bool
	}{
		{name: "refresh, public client", loginFirst: true},
		{name: "code exchange", refuseLogin: true},
		{name: "client credentials, secret in body", mod: func(c *Config) {
			c.Grant, c.ClientID, c.ClientSecret, c.AuthMethod = GrantClientCredentials, "machine", "s3cret-machine-body", AuthSecretPost
		}},
		{name: "client credentials, Basic auth", mod: func(c *Config) {
			c.Grant, c.ClientID, c.ClientSecret, c.AuthMethod = GrantClientCredentials, "machine", "s3cret-machine-basic", AuthSecretBasic
		}},
		{name: "client credentials, private_key_jwt", mod: func(c *Config) {
			c.Grant, c.ClientID, c.PrivateKey = GrantClientCredentials, "machine", pemOf(t, ecKey(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := protected(t)
			store, err := NewFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			c := newClient(t, as, store, tt.mod)
			hook, sent := recordSent(oauthtest.EchoingRefusal("invalid_grant"))
			var shown []string
			if tt.loginFirst {
				login(t, c)
				as.SetTokenHook(hook)
				forceExpiry(t, c, time.Now().Add(-time.Minute))
				_, err = call(t.Context(), c, as.URL()+"/mcp")
				if !IsNeedsLogin(err) {
					t.Fatalf("refused refresh = %v, want needs login", err)
				}
				st, _ := c.Status(t.Context())
				shown = append(shown, st.Reason, c.NeedsLoginNow())
				// A later request reads the reason back from the store.
				_, _, again := c.AccessToken(t.Context())
				shown = append(shown, again.Error())
			} else {
				as.SetTokenHook(hook)
				if tt.refuseLogin {
					err = c.Login(t.Context(), FollowOpener(nil))
				} else {
					_, err = call(t.Context(), c, as.URL()+"/mcp")
				}
			}
			if err == nil {
				t.Fatal("the refused grant succeeded")
			}
			shown = append(shown, err.Error())
			// The record on disk keeps its tokens, by design; what it
			// says about them must not repeat them.
			if r, lerr := store.Load(t.Context(), "remote"); lerr == nil {
				shown = append(shown, r.NeedsLogin)
				if tt.loginFirst && r.NeedsLogin == "" {
					t.Errorf("the stored record does not say it needs login")
				}
			}
			all := strings.Join(shown, "\n")
			secrets := sent()
			if len(secrets) == 0 {
				t.Fatal("the hook saw no secret: the test proves nothing")
			}
			for _, s := range secrets {
				// Messages cut long descriptions: a prefix is a leak too.
				if len(s) >= minSecret && strings.Contains(all, s[:min(len(s), 16)]) {
					t.Errorf("what the client sent (%d chars, %.6s...) appears in what it shows or stores:\n%s", len(s), s, all)
				}
			}
			if !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "rejected request") {
				t.Errorf("the error lost the server's code or description: %v", err)
			}
		})
	}
}

// TestTransientRefreshFailuresKeepTheToken checks that a 5xx, an answer
// cut off or a timeout at the token endpoint is retried with backoff and
// never turns the server into "needs login" (#24 item 11); only a
// definitive refusal (invalid_grant) does.
func TestTransientRefreshFailuresKeepTheToken(t *testing.T) {
	tests := []struct {
		name string
		hook func(count *atomic.Int64) oauthtest.TokenHook
		// failures is how many requests fail; more than tokenAttempts
		// make one renewal fail, and the next request must succeed.
		failures int64
	}{
		{"one 500", func(n *atomic.Int64) oauthtest.TokenHook {
			return oauthtest.Failing(1, http.StatusInternalServerError, n)
		}, 1},
		{"two 503", func(n *atomic.Int64) oauthtest.TokenHook {
			return oauthtest.Failing(2, http.StatusServiceUnavailable, n)
		}, 2},
		{"429", func(n *atomic.Int64) oauthtest.TokenHook { return oauthtest.Failing(1, http.StatusTooManyRequests, n) }, 1},
		{"a timeout", func(n *atomic.Int64) oauthtest.TokenHook { return oauthtest.Stalling(1, n) }, 1},
		{"500s past the retries", func(n *atomic.Int64) oauthtest.TokenHook {
			return oauthtest.Failing(tokenAttempts, http.StatusInternalServerError, n)
		}, tokenAttempts},
		{"server_error", func(n *atomic.Int64) oauthtest.TokenHook {
			return func(w http.ResponseWriter, r *http.Request) bool {
				if n.Add(1) > 1 {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"temporarily_unavailable"}`))
				return true
			}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := protected(t)
			c := newClient(t, as, nil, func(cfg *Config) {
				// Generous for a slow machine; the stall lasts until
				// the client gives up, however long that is.
				cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
			})
			login(t, c)
			var count atomic.Int64
			as.SetTokenHook(tt.hook(&count))
			forceExpiry(t, c, time.Now().Add(-time.Minute))
			_, _, err := c.AccessToken(t.Context())
			if tt.failures >= tokenAttempts {
				if err == nil || IsNeedsLogin(err) {
					t.Fatalf("AccessToken with the endpoint failing every try = %v, want an error that is not needs login", err)
				}
				if n := count.Load(); n != tokenAttempts {
					t.Errorf("%d tries, want %d (bounded)", n, tokenAttempts)
				}
				if st, _ := c.Status(t.Context()); st.State == "needs login" {
					t.Errorf("status after transient failures = %+v, want the token kept", st)
				}
				// The endpoint recovers: the next request refreshes.
				_, _, err = c.AccessToken(t.Context())
			}
			if err != nil {
				t.Fatalf("AccessToken after %s = %v, want a refreshed token", tt.name, err)
			}
			if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
				t.Fatalf("call = %q, %v", got, err)
			}
			if n := as.Refreshes.Load(); n != 1 {
				t.Errorf("%d refreshes, want 1", n)
			}
		})
	}

	// A definitive refusal still means a login.
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	as.SetTokenHook(oauthtest.EchoingRefusal("invalid_grant"))
	forceExpiry(t, c, time.Now().Add(-time.Minute))
	if _, _, err := c.AccessToken(t.Context()); !IsNeedsLogin(err) {
		t.Errorf("AccessToken after invalid_grant = %v, want needs login", err)
	}
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestTokenErrorTransient(t *testing.T) {
	tests := []struct {
		err  *TokenError
		want bool
	}{
		{&TokenError{Status: 500}, true},
		{&TokenError{Status: 502}, true},
		{&TokenError{Status: 503, Code: "invalid_grant"}, true},
		{&TokenError{Status: 408}, true},
		{&TokenError{Status: 429}, true},
		{&TokenError{Status: 400, Code: "temporarily_unavailable"}, true},
		{&TokenError{Status: 200, Code: "server_error"}, true},
		{&TokenError{Status: 400, Code: "invalid_grant"}, false},
		{&TokenError{Status: 401, Code: "invalid_client"}, false},
		{&TokenError{Status: 400, Code: "invalid_scope"}, false},
		{&TokenError{Status: 404}, false},
	}
	for _, tt := range tests {
		if got := tt.err.Transient(); got != tt.want {
			t.Errorf("%+v.Transient() = %v, want %v", *tt.err, got, tt.want)
		}
	}
	if !transient(&noAnswerError{errors.New("dial tcp: connection refused")}) {
		t.Errorf("no answer is not transient")
	}
	if transient(errors.New("decoding the token answer")) {
		t.Errorf("a garbled answer is transient")
	}
}

func TestMaskSecrets(t *testing.T) {
	tests := []struct {
		text    string
		secrets []string
		want    string
	}{
		{"refresh_token=abc/def+ghi rest", []string{"abc/def+ghi"}, "refresh_token=**** rest"},
		{"refresh_token=abc%2Fdef%2Bghi rest", []string{"abc/def+ghi"}, "refresh_token=**** rest"},
		{"short 12345 kept", []string{"12345"}, "short 12345 kept"},
		{"outer-secret-123 and inner-1", []string{"inner-1", "outer-secret-123"}, "**** and ****"},
		{"nothing", nil, "nothing"},
	}
	for _, tt := range tests {
		if got := maskSecrets(tt.text, tt.secrets...); got != tt.want {
			t.Errorf("maskSecrets(%q, %q) = %q, want %q", tt.text, tt.secrets, got, tt.want)
		}
	}
}
