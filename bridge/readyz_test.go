package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// TestReadyzUnderOAuth: /readyz names the upstreams, so under serve.oauth
// it shows each caller only its part. Without credentials (a probe) it
// answers ready and nothing else; a bad token gets the 401 of /mcp; a
// caller in group dev sees github and not k8s, one in ops the other way
// round, and a caller no rule selects sees no server. The config errors,
// which name servers and tools of the whole config, go to no restricted
// caller. Before, any valid token saw every upstream.
func TestReadyzUnderOAuth(t *testing.T) {
	tg := startTeamGateway(t, func(c *config.Config) {
		c.Tools = append(c.Tools, config.ToolRule{Match: "k8s::no_such_tool", Keywords: []string{"x"}})
	})
	base := strings.TrimSuffix(tg.url, "/mcp")
	get := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/readyz", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The full answer exists (the check below can fail): a gateway
	// without access rules shows both servers and the config error.
	if len(tg.g.Catalog().OverrideProblems) == 0 {
		t.Fatal("the config error for k8s::no_such_tool is missing: the test would prove nothing")
	}

	if status, body := get(""); status != http.StatusOK || strings.TrimSpace(body) != `{"ready":true}` {
		t.Errorf("probe without a token: %d %s, want 200 {\"ready\":true}", status, body)
	}
	if status, body := get("not-a-token"); status != http.StatusUnauthorized || strings.Contains(body, "github") {
		t.Errorf("a bad token: %d %s, want 401", status, body)
	}
	for _, tc := range []struct {
		who, group, own, other string
	}{
		{"dev", "dev", "github", "k8s"},
		{"ops", "ops", "k8s", "github"},
		{"nobody", "sales", "", "github"},
	} {
		status, body := get(tg.iss.Mint(t, tc.who+"@example.com", tg.url, []string{tc.group}, "mcp:tools"))
		var got struct {
			Ready   bool `json:"ready"`
			Servers []struct {
				Name string `json:"name"`
			} `json:"servers"`
			ConfigErrors []string `json:"config_errors"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || !got.Ready {
			t.Errorf("%s: %d %s", tc.who, status, body)
			continue
		}
		var names []string
		for _, s := range got.Servers {
			names = append(names, s.Name)
		}
		if want := tc.own; strings.Join(names, ",") != want {
			t.Errorf("%s sees servers %v, want [%s]", tc.who, names, want)
		}
		if strings.Contains(body, tc.other) || strings.Contains(body, "no_such_tool") || got.ConfigErrors != nil {
			t.Errorf("%s's /readyz shows what it may not see: %s", tc.who, body)
		}
	}
}

// TestStatusPageUnderOAuth: the status page shows every caller's activity,
// so under serve.oauth it needs a token (401 without, like /mcp), and it is
// off (403) for every caller while access rules are in force; without
// rules a valid token reads it (nobody is denied anything then).
func TestStatusPageUnderOAuth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules bool
		want  map[string]int // token kind -> status
	}{
		{"with access rules", true, map[string]int{"": 401, "bad": 401, "dev": 403, "nobody": 403}},
		{"without access rules", false, map[string]int{"": 401, "bad": 401, "dev": 200, "nobody": 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := startTeamGateway(t, func(c *config.Config) {
				if !tc.rules {
					c.Access = nil
				}
			})
			base := strings.TrimSuffix(tg.url, "/mcp")
			tokens := map[string]string{
				"":       "",
				"bad":    "not-a-token",
				"dev":    tg.iss.Mint(t, "dev@example.com", tg.url, []string{"dev"}, "mcp:tools"),
				"nobody": tg.iss.Mint(t, "nobody@example.com", tg.url, []string{"sales"}, "mcp:tools"),
			}
			for kind, want := range tc.want {
				for _, path := range []string{"/ui/", "/ui"} {
					req, _ := http.NewRequest(http.MethodGet, base+path, nil)
					if tokens[kind] != "" {
						req.Header.Set("Authorization", "Bearer "+tokens[kind])
					}
					client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					got := resp.StatusCode
					if got == http.StatusMovedPermanently || got == http.StatusFound || got == http.StatusPermanentRedirect {
						continue // /ui redirects to /ui/, checked on its own
					}
					if got != want {
						t.Errorf("GET %s with %q token: %d, want %d", path, kind, got, want)
					}
					if want != 200 && (strings.Contains(string(body), "list_issues") || strings.Contains(string(body), "get_pods")) {
						t.Errorf("GET %s with %q token shows a tool: %s", path, kind, body)
					}
				}
			}
		})
	}
}

// getReadyz returns GET base/readyz's status and body, with auth as the
// Authorization header if not empty.
func getReadyz(t *testing.T, base, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestReadyzProbeWithoutCredentials: with serve.auth_token, a health
// check that cannot carry the token (kubelet, HAProxy) gets the status
// alone, never the upstreams' names; the right token gets the details, a
// wrong one 401; every other route still needs the token.
func TestReadyzProbeWithoutCredentials(t *testing.T) {
	base := hostGateway(t, func(s *config.Serve) { s.AuthToken = "probe-secret-token" })
	if code, body := getReadyz(t, base, ""); code != 200 || body != `{"ready":true}` {
		t.Errorf("/readyz without credentials: %d %s, want 200 {\"ready\":true}", code, body)
	}
	if code, body := getReadyz(t, base, "Bearer probe-secret-token"); code != 200 || !strings.Contains(body, "upstream-secret-name") {
		t.Errorf("/readyz with the token: %d %s, want 200 naming the upstream", code, body)
	}
	if code, body := getReadyz(t, base, "Bearer wrong"); code != 401 || strings.Contains(body, "upstream-secret-name") {
		t.Errorf("/readyz with a wrong token: %d %s, want 401", code, body)
	}
	resp, err := http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("/ui/ without the token: %d, want 401", resp.StatusCode)
	}
}

// TestServeHTTPDrainsOnTerminate: a context ended with ErrTerminated as
// its cause keeps the gateway serving for serve.drain_delay with /readyz
// at 503 and draining true; one simply cancelled stops at once.
func TestServeHTTPDrainsOnTerminate(t *testing.T) {
	serve := func(t *testing.T, delay time.Duration) (base string, stop context.CancelCauseFunc, done <-chan error) {
		cfg := testConfig()
		cfg.StateDir = t.TempDir()
		cfg.Serve.DrainDelay = delay
		g, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancelCause(context.Background())
		result := make(chan error, 1)
		finished := make(chan struct{})
		go func() {
			result <- g.ServeHTTP(ctx, ln)
			close(finished)
		}()
		t.Cleanup(func() {
			stop(nil)
			<-finished
		})
		return "http://" + ln.Addr().String(), stop, result
	}

	t.Run("terminated", func(t *testing.T) {
		// Long enough for the checks below to run inside it on a slow
		// machine; the cleanup waits for it to end.
		base, stop, done := serve(t, 15*time.Second)
		if code, body := getReadyz(t, base, ""); code != 200 || strings.Contains(body, "draining") {
			t.Fatalf("/readyz before: %d %s", code, body)
		}
		stop(fmt.Errorf("received SIGTERM: %w", ErrTerminated))
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := getReadyz(t, base, "")
			var r struct{ Ready, Draining bool }
			if code == 503 && json.Unmarshal([]byte(body), &r) == nil && !r.Ready && r.Draining {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz after ErrTerminated: %d %s, want 503 draining", code, body)
			}
			time.Sleep(10 * time.Millisecond)
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatalf("/healthz while draining: %v", err)
		}
		resp.Body.Close()
		select {
		case err := <-done:
			t.Fatalf("ServeHTTP returned during the drain delay: %v", err)
		default:
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		_, stop, done := serve(t, time.Hour)
		stop(nil)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute): // a bound for a hang: the delay is an hour
			t.Fatal("a plain cancel waited for the drain delay")
		}
	})
}
