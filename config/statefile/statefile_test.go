package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T) Dir {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOpen(t *testing.T) {
	tests := []struct {
		root    string
		wantErr string
	}{
		{"", "no state directory"},
		{"relative/dir", "not an absolute path"},
		{"/abs/dir/../x", ""},
	}
	for _, tt := range tests {
		d, err := Open(tt.root)
		if tt.wantErr == "" {
			if err != nil || d.Root() != "/abs/x" {
				t.Errorf("Open(%q) = %q, %v; want /abs/x", tt.root, d.Root(), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Open(%q) error = %v, want %q", tt.root, err, tt.wantErr)
		}
	}
	if _, err := Open(""); !errors.Is(err, ErrNoStateDir) {
		t.Errorf("Open(\"\") = %v, want ErrNoStateDir", err)
	}
}

func TestPathNames(t *testing.T) {
	d := open(t)
	tests := []struct {
		name    string
		wantErr string
	}{
		{"tokens.json", ""},
		{"tokens/github.json", ""},
		{"a/b/c", ""},
		{"", "empty"},
		{"/etc/passwd", "absolute"},
		{"../escape", "reaches outside"},
		{"..", "reaches outside"},
		{"a/../../escape", "not clean"},
		{"a//b", "not clean"},
		{"a/", "not clean"},
		{"./a", "not clean"},
		{".hidden", "starts with a dot"},
		{"tokens/.tmp", "starts with a dot"},
		{`a\b`, "use /"},
		{"a\x00b", "use /"},
	}
	for _, tt := range tests {
		p, err := d.Path(tt.name)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("Path(%q): %v", tt.name, err)
			} else if want := filepath.Join(d.Root(), filepath.FromSlash(tt.name)); p != want {
				t.Errorf("Path(%q) = %q, want %q", tt.name, p, want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Path(%q) error = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestWriteModesAndAtomicity(t *testing.T) {
	d := open(t)
	if err := d.Write("tokens/github.json", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := d.Write("tokens/github.json", []byte("two")); err != nil {
		t.Fatal(err)
	}
	got, err := d.Read("tokens/github.json")
	if err != nil || string(got) != "two" {
		t.Fatalf("Read = %q, %v; want two", got, err)
	}
	for _, c := range []struct {
		path string
		want fs.FileMode
	}{
		{d.Root(), DirMode},
		{filepath.Join(d.Root(), "tokens"), DirMode},
		{filepath.Join(d.Root(), "tokens", "github.json"), FileMode},
	} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != c.want {
			t.Errorf("%s has mode %v, want %v", c.path, st.Mode().Perm(), c.want)
		}
	}
	// No temporary file is left behind.
	entries, err := os.ReadDir(filepath.Join(d.Root(), "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("tokens/ holds %d entries, want only github.json", len(entries))
	}
}

func TestWriteFailsLeavesOldFile(t *testing.T) {
	d := open(t)
	if err := d.Write("x.json", []byte("old")); err != nil {
		t.Fatal(err)
	}
	// x.json is a file, so nothing can be written below it.
	err := d.Write("x.json/y.json", []byte("new"))
	if err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("Write below a file = %v, want an error saying what it was doing", err)
	}
	if got, _ := d.Read("x.json"); string(got) != "old" {
		t.Errorf("after a failed write x.json holds %q, want old", got)
	}
}

func TestReadMissing(t *testing.T) {
	d := open(t)
	if _, err := d.Read("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(missing) = %v, want fs.ErrNotExist", err)
	}
	var v map[string]int
	found, err := d.ReadJSON("nope.json", &v)
	if found || err != nil {
		t.Errorf("ReadJSON(missing) = %v, %v; want false, nil", found, err)
	}
	if err := d.Remove("nope"); err != nil {
		t.Errorf("Remove(missing) = %v", err)
	}
	names, err := d.List("tokens")
	if err != nil || names != nil {
		t.Errorf("List(missing) = %v, %v", names, err)
	}
}

type doc struct {
	N int    `json:"n"`
	S string `json:"s"`
}

func TestReadJSONCorrupt(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantOK  bool
	}{
		{"valid", `{"n": 1, "s": "x"}`, true},
		{"valid with newline", "{\"n\": 1}\n\n", true},
		{"empty", "", false},
		{"truncated", `{"n": 1, "s": "x`, false},
		{"wrong type", `{"n": "one"}`, false},
		{"trailing value", `{"n": 1}{"n": 2}`, false},
		{"trailing bracket", `{"n": 1}]`, false},
		{"not JSON", "n = 1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t)
			if err := d.Write("f.json", []byte(tt.content)); err != nil {
				t.Fatal(err)
			}
			var v doc
			found, err := d.ReadJSON("f.json", &v)
			if !found {
				t.Errorf("found = false for an existing file")
			}
			if tt.wantOK {
				if err != nil {
					t.Errorf("ReadJSON: %v", err)
				}
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("ReadJSON = %v, want a *CorruptError", err)
			}
			p, _ := d.Path("f.json")
			if ce.Path != p || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name %s", err, p)
			}
		})
	}
}

func TestUpdateJSON(t *testing.T) {
	d := open(t)
	inc := func(v *doc) error { v.N++; return nil }
	for range 3 {
		if err := UpdateJSON(d, "counter.json", inc); err != nil {
			t.Fatal(err)
		}
	}
	var v doc
	if _, err := d.ReadJSON("counter.json", &v); err != nil || v.N != 3 {
		t.Fatalf("after three updates: %+v, %v; want n=3", v, err)
	}

	// fn failing writes nothing.
	boom := errors.New("boom")
	if err := UpdateJSON(d, "counter.json", func(v *doc) error { v.N = 99; return boom }); !errors.Is(err, boom) {
		t.Errorf("UpdateJSON with failing fn = %v, want boom", err)
	}
	if _, err := d.ReadJSON("counter.json", &v); err != nil || v.N != 3 {
		t.Errorf("after a failed update: %+v, %v; want n=3", v, err)
	}

	// A corrupt file is reported and left as it is.
	if err := d.Write("counter.json", []byte("{broken")); err != nil {
		t.Fatal(err)
	}
	called := false
	err := UpdateJSON(d, "counter.json", func(v *doc) error { called = true; return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || called {
		t.Errorf("UpdateJSON on a corrupt file = %v (fn called: %v), want a *CorruptError and no call", err, called)
	}
	if got, _ := d.Read("counter.json"); string(got) != "{broken" {
		t.Errorf("corrupt file was overwritten with %q", got)
	}
}

func TestListAndRemove(t *testing.T) {
	d := open(t)
	for _, n := range []string{"tokens/b.json", "tokens/a.json", "tokens/sub/c.json", "top.json"} {
		if err := d.Write(n, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// A stray temporary file is not listed.
	if err := os.WriteFile(filepath.Join(d.Root(), "tokens", ".a.json.tmp-1"), nil, FileMode); err != nil {
		t.Fatal(err)
	}
	names, err := d.List("tokens")
	if err != nil || !slices.Equal(names, []string{"a.json", "b.json"}) {
		t.Errorf("List(tokens) = %v, %v; want [a.json b.json]", names, err)
	}
	if names, _ := d.List(""); !slices.Equal(names, []string{"top.json"}) {
		t.Errorf("List(\"\") = %v, want [top.json]", names)
	}
	if err := d.Remove("tokens/a.json"); err != nil {
		t.Fatal(err)
	}
	if names, _ := d.List("tokens"); !slices.Equal(names, []string{"b.json"}) {
		t.Errorf("after Remove: %v, want [b.json]", names)
	}
}

func TestZeroDir(t *testing.T) {
	var d Dir
	if err := d.Write("x", nil); !errors.Is(err, ErrNoStateDir) {
		t.Errorf("zero Dir Write = %v, want ErrNoStateDir", err)
	}
	if _, err := d.List(""); !errors.Is(err, ErrNoStateDir) {
		t.Errorf("zero Dir List = %v, want ErrNoStateDir", err)
	}
}

// FuzzReadJSON feeds arbitrary file contents and names: reading never
// panics, and a file that does not decode is always a *CorruptError.
func FuzzReadJSON(f *testing.F) {
	for _, seed := range []struct{ name, content string }{
		{"a.json", `{"n":1}`},
		{"tokens/x.json", `{"n":"x"}`},
		{"../x", `{}`},
		{".x", `[]`},
		{"a.json", "{\"n\":1}\x00"},
		{"a.json", `null`},
		{"a.json", "\ufeff{}"},
	} {
		f.Add(seed.name, []byte(seed.content))
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, name string, content []byte) {
		d, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Write(name, content); err != nil {
			if checkName(name) == nil && !strings.Contains(err.Error(), "state") {
				t.Fatalf("Write(%q) error does not say what it was doing: %v", name, err)
			}
			return
		}
		defer func() { _ = d.Remove(name) }()
		var v doc
		found, err := d.ReadJSON(name, &v)
		if !found {
			t.Fatalf("ReadJSON(%q) did not find the file just written", name)
		}
		var ce *CorruptError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("ReadJSON(%q) = %v, want nil or *CorruptError", name, err)
		}
	})
}

func TestLockExcludes(t *testing.T) {
	d := open(t)
	unlock, err := d.Lock("tokens/x.json")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		u2, err := d.Lock("tokens/x.json")
		if err == nil {
			u2()
		}
		close(got)
	}()
	// Give the second Lock time to fail to exclude; a slow machine only
	// makes this check weaker, never wrong.
	time.Sleep(50 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("a second Lock succeeded while the first was held")
	default:
	}
	unlock()
	<-got
	if names, _ := d.List("tokens"); len(names) != 0 {
		t.Errorf("the lock file is listed: %v", names)
	}
	if _, err := d.Lock("../x"); err == nil {
		t.Error("Lock accepted a name outside the directory")
	}
}

func TestDecodeStrict(t *testing.T) {
	type doc struct {
		A int `json:"a"`
	}
	for _, tc := range []struct {
		in, wantErr string
	}{
		{`{"a":1}`, ""},
		{" {\"a\":1}\n", ""},
		{`{"a":1,"b":2}`, "unknown field"},
		{`{"a":1}{"a":2}`, "trailing data"},
		{`{"a":1}]`, "trailing data"},
		{`{"a":`, "unexpected EOF"},
		{``, "EOF"},
	} {
		var d doc
		err := DecodeStrict([]byte(tc.in), &d)
		if tc.wantErr == "" {
			if err != nil || d.A != 1 {
				t.Errorf("DecodeStrict(%q) = %v, %+v; want a=1", tc.in, err, d)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("DecodeStrict(%q) = %v, want an error containing %q", tc.in, err, tc.wantErr)
		}
	}
}
