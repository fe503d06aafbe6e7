package oauth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/zalando/go-keyring"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

// TestStores runs the same checks on the file store and on the keyring
// store (go-keyring's in-memory mock: tests never touch a real keyring).
func TestStores(t *testing.T) {
	keyring.MockInit()
	fs, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Store{fs, KeyringStore{}} {
		t.Run(s.String(), func(t *testing.T) {
			if _, err := s.Load(t.Context(), "x"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Load(missing) = %v, want ErrNotFound", err)
			}
			r := &Record{Server: "x", URL: "https://x/mcp", Scopes: []string{"a"},
				Token: transport.Token{AccessToken: "at-123456", RefreshToken: "rt-123456", ExpiresAt: time.Now().Add(time.Hour).Round(0)}}
			if err := s.Save(t.Context(), "x", r); err != nil {
				t.Fatal(err)
			}
			got, err := s.Load(t.Context(), "x")
			if err != nil || got.Token.AccessToken != "at-123456" || got.Token.RefreshToken != "rt-123456" || !got.Token.ExpiresAt.Equal(r.Token.ExpiresAt) {
				t.Fatalf("Load = %+v, %v", got, err)
			}
			if err := s.Delete(t.Context(), "x"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(t.Context(), "x"); err != nil {
				t.Errorf("Delete(missing) = %v", err)
			}
			if _, err := s.Load(t.Context(), "x"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Load after Delete = %v", err)
			}
		})
	}

	// A corrupt keyring entry is named, never quoted.
	if err := keyring.Set(keyringService, keyringUser("bad"), `{"token": "s3cr3t-half`); err != nil {
		t.Fatal(err)
	}
	_, err = KeyringStore{}.Load(t.Context(), "bad")
	if err == nil || !strings.Contains(err.Error(), "oauth:bad") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("corrupt entry: %v", err)
	}

	// Gateways sharing the keyring lock under the state directory.
	locks, _ := statefile.Open(t.TempDir())
	ks := KeyringStore{Locks: &locks}
	unlock, err := ks.Lock(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan struct{})
	go func() {
		u2, err := ks.Lock(t.Context(), "x")
		if err == nil {
			u2()
		}
		close(second)
	}()
	time.Sleep(50 * time.Millisecond) // a slow machine only weakens this
	select {
	case <-second:
		t.Error("a second keyring lock was taken while the first was held")
	default:
	}
	unlock()
	<-second

	// token_store chooses.
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	for _, tt := range []struct {
		store, want string
	}{{config.TokenStoreKeyring, "the OS keyring"}, {config.TokenStoreFile, "file "}, {config.TokenStoreAuto, "the OS keyring"}} {
		cfg.TokenStore = tt.store
		s, err := OpenStore(&cfg)
		if err != nil || !strings.HasPrefix(s.String(), tt.want) {
			t.Errorf("OpenStore(%s) = %v, %v; want %s", tt.store, s, err, tt.want)
		}
	}
}

// TestFileStoreCorrupt: a corrupt token file is an error naming it, and a
// login does not silently overwrite it.
func TestFileStoreCorrupt(t *testing.T) {
	fs, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.dir.Write("oauth/x.json", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	_, err = fs.Load(t.Context(), "x")
	p, _ := fs.dir.Path("oauth/x.json")
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Load(corrupt) = %v, want an error naming %s", err, p)
	}
	as := protected(t)
	c := newClient(t, as, fs, func(cfg *Config) { cfg.Server = "x" })
	err = c.Login(t.Context(), FollowOpener(nil))
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "auth logout x") {
		t.Errorf("Login over a corrupt file = %v", err)
	}
	if b, _ := fs.dir.Read("oauth/x.json"); string(b) != "{not json" {
		t.Errorf("the corrupt file was overwritten: %q", b)
	}
	if err := c.Logout(t.Context()); err != nil {
		t.Fatalf("Logout deletes a corrupt file: %v", err)
	}
	if err := c.Login(t.Context(), FollowOpener(nil)); err != nil {
		t.Errorf("Login after logout: %v", err)
	}
}
