package trust

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	dir, err := statefile.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(dir), root
}

func TestStoreReviewPinsAndCatchesChange(t *testing.T) {
	s, root := newStore(t)
	p := config.Trust{Mode: config.TrustPin, NewServers: config.NewServersTrust}
	d := sample()

	r, err := s.Review(p, "gh", []Definition{d}, t0, approveCmd)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Verdicts[0].FirstUse {
		t.Fatalf("first review did not pin: %+v", r.Verdicts[0])
	}
	fi, err := os.Stat(filepath.Join(root, "pins", "gh.json"))
	if err != nil {
		t.Fatalf("pin file not written: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("pin file mode = %v, want 0600", fi.Mode().Perm())
	}

	// A second process sees the pin: same definition passes, a change is held.
	r, err = s.Review(p, "gh", []Definition{d}, t0.Add(time.Hour), approveCmd)
	if err != nil || r.Verdicts[0].State != StatePinned || r.Verdicts[0].FirstUse {
		t.Fatalf("second review = %+v, %v; want pinned, not first use", r.Verdicts, err)
	}
	d2 := d
	d2.Description = "changed"
	r, err = s.Review(p, "gh", []Definition{d2}, t0.Add(time.Hour), approveCmd)
	if err != nil || !r.Verdicts[0].Held {
		t.Fatalf("changed review = %+v, %v; want held", r.Verdicts, err)
	}
	// Held is not pinned: the next run still holds it.
	r, _ = s.Review(p, "gh", []Definition{d2}, t0.Add(2*time.Hour), approveCmd)
	if !r.Verdicts[0].Held {
		t.Fatal("a held change was pinned by the review that held it")
	}

	if err := s.Approve("gh", []Definition{d2}, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	r, _ = s.Review(p, "gh", []Definition{d2}, t0.Add(4*time.Hour), approveCmd)
	if v := r.Verdicts[0]; v.Held || v.State != StatePinned || !v.Pin.Approved {
		t.Fatalf("after approval: %+v; want pinned, approved, not held", v)
	}
}

func TestStoreAddKeepsExisting(t *testing.T) {
	s, _ := newStore(t)
	d := sample()
	if err := s.Approve("gh", []Definition{d}, t0); err != nil {
		t.Fatal(err)
	}
	d2 := d
	d2.Description = "other"
	// A concurrent first-use review must not replace the approval.
	if err := s.Add("gh", map[string]Pin{d.Name: NewPin(d2, t0, false)}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Load("gh")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tools[d.Name]; got.Hash != d.Hash() || !got.Approved {
		t.Fatalf("pin = %+v, want the approved one kept", got)
	}
}

func TestStoreCorruptFileIsKept(t *testing.T) {
	s, root := newStore(t)
	path := filepath.Join(root, "pins", "gh.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{`{"version":1,"tools":{`, `{"version":7,"tools":{}}`, `[]`} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.Review(config.Trust{Mode: config.TrustPin}, "gh", []Definition{sample()}, t0, nil)
		var ce *statefile.CorruptError
		if !errors.As(err, &ce) || ce.Path != path {
			t.Fatalf("%s: err = %v, want a CorruptError naming %s", content, err, path)
		}
		for _, op := range []func() error{
			func() error { return s.Approve("gh", []Definition{sample()}, t0) },
			func() error { _, err := s.Forget("gh"); return err },
			func() error { return s.Add("gh", map[string]Pin{"x": NewPin(sample(), t0, false)}) },
		} {
			if err := op(); !errors.As(err, &ce) {
				t.Errorf("%s: write on a corrupt file: err = %v, want a CorruptError", content, err)
			}
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Fatalf("corrupt file was changed to %q", got)
		}
	}
}

func TestStoreForgetAndServers(t *testing.T) {
	s, root := newStore(t)
	a, b := sample(), sample()
	b.Name = "b"
	for _, server := range []string{"gh", "fs"} {
		if err := s.Approve(server, []Definition{a, b}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Servers(); err != nil || !slices.Equal(got, []string{"fs", "gh"}) {
		t.Fatalf("Servers = %v, %v", got, err)
	}
	removed, err := s.Forget("gh", "b", "missing")
	if err != nil || !slices.Equal(removed, []string{"b"}) {
		t.Fatalf("Forget(b, missing) = %v, %v; want [b]", removed, err)
	}
	removed, err = s.Forget("fs")
	if err != nil || !slices.Equal(removed, []string{"b", "create_issue"}) {
		t.Fatalf("Forget(all) = %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(root, "pins", "fs.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an emptied pin file stays: %v", err)
	}
	if p, err := s.Load("fs"); p != nil || err != nil {
		t.Fatalf("Load after forgetting all = %v, %v; want a new server", p, err)
	}
	if got, _ := s.Servers(); !slices.Equal(got, []string{"gh"}) {
		t.Fatalf("Servers = %v, want [gh]", got)
	}
}

func TestStoreRejectsBadServerName(t *testing.T) {
	s, _ := newStore(t)
	for _, name := range []string{"", "../x", "a/b", ".hidden"} {
		if _, err := s.Load(name); err == nil {
			t.Errorf("Load(%q) accepted a name that is not a server name", name)
		}
	}
}

func TestStoreOffWritesNothing(t *testing.T) {
	s, root := newStore(t)
	r, err := s.Review(config.Trust{Mode: config.TrustOff}, "gh", []Definition{sample()}, t0, nil)
	if err != nil || r.Verdicts[0].State != StateUnchecked {
		t.Fatalf("review = %+v, %v", r.Verdicts, err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("mode off wrote %v", entries)
	}
}

func TestMemoryStore(t *testing.T) {
	s := NewMemoryStore()
	if s.Persistent() || s.Dir() != "" {
		t.Fatal("a memory store claims to persist")
	}
	p := config.Trust{Mode: config.TrustPin, NewServers: config.NewServersTrust}
	d := sample()
	if r, err := s.Review(p, "gh", []Definition{d}, t0, nil); err != nil || !r.Verdicts[0].FirstUse {
		t.Fatalf("first review = %+v, %v", r.Verdicts, err)
	}
	d.Description = "changed"
	if r, _ := s.Review(p, "gh", []Definition{d}, t0, nil); !r.Verdicts[0].Held {
		t.Fatal("a change within the run is not held")
	}
	if got, _ := s.Servers(); !slices.Equal(got, []string{"gh"}) {
		t.Fatalf("Servers = %v", got)
	}
	if removed, _ := s.Forget("gh"); len(removed) != 1 {
		t.Fatalf("Forget removed %v", removed)
	}
	if got, _ := s.Servers(); len(got) != 0 {
		t.Fatalf("Servers after forgetting = %v", got)
	}
}

// A pin file changed by another process (toolbridge trust approve) is
// read again; an unchanged one is not parsed again but gives the same pins.
func TestStoreRereadsChangedFile(t *testing.T) {
	s, _ := newStore(t)
	other := NewStore(s.dir) // another process on the same directory
	d := sample()
	if err := s.Add("gh", map[string]Pin{d.Name: NewPin(d, t0, false)}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		p, err := s.Load("gh")
		if err != nil || p.Tools[d.Name].Approved {
			t.Fatalf("Load = %+v, %v; want the first-use pin", p, err)
		}
		delete(p.Tools, d.Name) // the caller's copy: must not change the store's
	}
	if err := other.Approve("gh", []Definition{d}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p, err := s.Load("gh")
	if err != nil || !p.Tools[d.Name].Approved {
		t.Fatalf("after another store approved: %+v, %v; want the approval", p, err)
	}
	if _, err := other.Forget("gh"); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Load("gh"); p != nil || err != nil {
		t.Fatalf("after another store forgot: %+v, %v; want no pins", p, err)
	}
}
