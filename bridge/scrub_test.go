package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// TestConnectErrorsCarryNoSecrets: an HTTP upstream that refuses
// connections is reported on the progress line and in the pool's status,
// and neither shows the API key in its URL or the token in its headers.
func TestConnectErrorsCarryNoSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // now refusing

	cfg := testConfig()
	cfg.Timeouts.Connect = 2 * time.Second
	cfg.Restart.Initial = time.Hour // no retries during the test
	var progress bytes.Buffer
	g, err := New(cfg, Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	spec := upstream.Spec{Name: "remote", Config: config.Server{
		URL:     fmt.Sprintf("http://%s/mcp?api_key=sk-live-SECRET123", addr),
		Headers: map[string]string{"Authorization": "Bearer tok-SECRET456"},
	}}
	if err := g.Connect(context.Background(), []upstream.Spec{spec}); err == nil {
		t.Fatal("connecting to a closed port succeeded")
	}
	status, _ := json.Marshal(g.Pool().Statuses())
	for _, where := range []string{progress.String(), string(status)} {
		if !strings.Contains(where, "remote") {
			t.Errorf("the failure does not name the server: %s", where)
		}
		for _, secret := range []string{"SECRET123", "SECRET456"} {
			if strings.Contains(where, secret) {
				t.Errorf("secret %s leaked: %s", secret, where)
			}
		}
	}
}
