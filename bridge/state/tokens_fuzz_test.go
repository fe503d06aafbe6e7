package state

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
)

// FuzzOpenSealed: whatever someone else wrote at a token's key, opening
// it never panics, never quotes it back whole, and only a record this
// key sealed for this key name opens.
func FuzzOpenSealed(f *testing.F) {
	keys, err := parseTokenKeys("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		f.Fatal(err)
	}
	tk := &Tokens{keys: keys, env: "TOKEN_KEY"}
	good, err := tk.seal("tb:oauth:remote", &oauth.Record{Server: "remote", Token: transport.Token{AccessToken: "secret-access-token"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"v":1,"alg":"A256GCM","kid":"00000000","nonce":"AAAAAAAAAAAAAAAA","ct":"AAAAAAAAAAAAAAAAAAAAAA=="}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"alg":"none"}`))
	f.Add([]byte(`{"token":{"access_token":"plain"}}`))
	f.Add([]byte(""))
	f.Add([]byte("null"))
	f.Add(bytes.Repeat([]byte("["), 10000))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := tk.open("tb:oauth:remote", raw)
		if err == nil {
			if r == nil {
				t.Fatal("no error and no record")
			}
			// Only the sealed seed opens: forging one needs the key.
			if !bytes.Equal(raw, good) && r.Token.AccessToken != "secret-access-token" {
				t.Fatalf("a record not sealed here opened: %q", raw)
			}
			if _, err := tk.open("tb:oauth:other", raw); err == nil {
				t.Fatal("a record opened under another key name")
			}
			return
		}
		if len(raw) >= 24 && strings.Contains(err.Error(), string(raw)) {
			t.Fatalf("the error quotes the value: %v", err)
		}
	})
}
