package bridge

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

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
