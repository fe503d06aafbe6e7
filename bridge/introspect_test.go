package bridge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbridge/toolbridge/config"
)

// TestIntrospectedCaller: with serve.oauth.introspection_url, a caller
// with an opaque token is who the issuer's introspection answer says: in
// group ops it sees and calls k8s, not github, and the audit log names its
// subject. A made-up opaque token gets 401. Neither token nor the
// gateway's introspection secret reaches a log, span or audit line.
func TestIntrospectedCaller(t *testing.T) {
	const (
		good   = "opaque-ops-token-8b2f61d0c4"
		forged = "opaque-forged-token-17aa9e3c"
		secret = "introspection-secret-c0ffee42"
	)
	var calls atomic.Int32
	var audience atomic.Value
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if id, s, ok := r.BasicAuth(); !ok || id != "gw" || s != secret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostFormValue("token") != good {
			fmt.Fprint(w, `{"active":false}`)
			return
		}
		fmt.Fprintf(w, `{"active":true,"sub":"svc-ops","aud":%q,"scope":"mcp:tools","groups":["ops"]}`, audience.Load())
	}))
	t.Cleanup(endpoint.Close)
	tg := startTeamGateway(t, func(c *config.Config) {
		audience.Store(c.Serve.OAuth.Audience)
		c.Serve.OAuth.IntrospectionURL = endpoint.URL
		c.Serve.OAuth.IntrospectionClientID = "gw"
		c.Serve.OAuth.IntrospectionClientSecret = secret
	})
	c := tg.client(t, good)
	if res, text := callText(t, c, "get_pods", nil); res.IsError || !strings.Contains(text, "k8s ran get_pods") {
		t.Errorf("the introspected caller's own tool: %s", text)
	}
	if res, err := c.CallTool(context.Background(), callReq("list_issues", nil)); err == nil && !res.IsError {
		t.Errorf("the introspected caller (ops) called github's list_issues: %+v", res)
	}
	req, _ := http.NewRequest(http.MethodPost, tg.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+forged)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("a made-up opaque token: %d %q, want 401 invalid_token", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if calls.Load() < 2 {
		t.Fatalf("the introspection endpoint was asked %d times: the tokens did not go through it", calls.Load())
	}

	audit, _ := os.ReadFile(tg.audit)
	if !strings.Contains(string(audit), "svc-ops") {
		t.Errorf("the audit log does not name the introspected subject:\n%s", audit)
	}
	if !strings.Contains(tg.logs.String(), "refused an access token") {
		t.Error("the refusal is not logged at debug (the grep below would prove nothing)")
	}
	var spans strings.Builder
	for _, s := range tg.spans.GetSpans() {
		fmt.Fprintf(&spans, "%s %v %v\n", s.Name, s.Attributes, s.Events)
	}
	for where, text := range map[string]string{"log": tg.logs.String(), "audit": string(audit), "spans": spans.String()} {
		for _, s := range []string{good, forged, secret} {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds %s…", where, s[:10])
			}
		}
	}
}
