package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loadHangLimit is how long a fuzzed Load may take before the input is
// reported as a hang. Go's fuzzer has no per-input timeout: without this,
// an input that makes Load loop stalls the fuzzer silently and is never
// saved. A config file's load takes well under a millisecond; the limit is
// far above anything a slow machine could make of that.
const loadHangLimit = 10 * time.Second

// fuzzEnviron is the environment fuzzed configs see: some variables set, no
// TOOLBRIDGE_* ones, so every error must come from the file.
var fuzzEnviron = []string{"HOME=/home/fuzz", "GITHUB_TOKEN=ghp_fuzz", "EMPTY="}

// fuzzSeq numbers the files fuzz inputs are written to.
var fuzzSeq atomic.Int64

// addFileSeeds adds every testdata file with the given extensions.
func addFileSeeds(f *testing.F, exts ...string) {
	for _, ext := range exts {
		for _, pattern := range []string{"testdata/*" + ext, "testdata/*/*" + ext, "testdata/*/.*" + ext} {
			files, err := filepath.Glob(pattern)
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range files {
				b, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
}

// checkLoad loads data as a config file with extension ext and checks the
// contract: no panic, and either a valid, renderable Config or errors that
// all name the file.
func checkLoad(t *testing.T, dir, ext string, data []byte) {
	// One directory per fuzz target and a fresh name per input: t.TempDir
	// per input would cost more than the Load under test.
	path := filepath.Join(dir, fmt.Sprintf("config-%d%s", fuzzSeq.Add(1), ext))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	type loaded struct {
		c   *Config
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		c, err := Load(LoadOptions{Path: path, Environ: fuzzEnviron})
		done <- loaded{c, err}
	}()
	var c *Config
	var err error
	select {
	case l := <-done:
		c, err = l.c, l.err
	case <-time.After(loadHangLimit):
		t.Fatalf("Load did not return within %s: a config file must not hang the gateway", loadHangLimit)
	}
	if err != nil {
		if c != nil {
			t.Fatalf("Load returned a Config and an error")
		}
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			var ce *Error
			if !errors.As(e, &ce) || ce.Source != path || ce.Msg == "" {
				t.Fatalf("error %q does not name the file %s", e, path)
			}
		}
		return
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Load succeeded but Validate fails: %v", err)
	}
	for _, format := range []string{"yaml", "json"} {
		if _, err := c.Render(format); err != nil {
			t.Fatalf("Render(%s): %v", format, err)
		}
	}
}

func FuzzLoadYAML(f *testing.F) {
	addFileSeeds(f, ".yaml", ".yml")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, dir, ".yaml", data) })
}

func FuzzLoadJSON(f *testing.F) {
	addFileSeeds(f, ".json")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, dir, ".json", data) })
}

func FuzzLoadTOML(f *testing.F) {
	addFileSeeds(f, ".toml")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, dir, ".toml", data) })
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${HOME}", "${MISSING:-x}", "$$", "$${HOME}", "${", "${}", "$", "a$b", "${A:-${B}}", "${EMPTY:-d}"} {
		f.Add(s)
	}
	lookup := environLookup(fuzzEnviron)
	f.Fuzz(func(t *testing.T, s string) {
		out, refs, err := expandRefs(s, lookup, false)
		for _, r := range refs {
			// What a reference put in is in the result, for errors
			// and scrubbing to find.
			if v, _ := lookup(r.name); v != r.value || !strings.Contains(out, r.value) {
				t.Fatalf("expandRefs(%q) = %q with ref %+v, not the variable's value in the result", s, out, r)
			}
		}
		if !strings.Contains(s, "$") && (err != nil || out != s) {
			t.Fatalf("expand(%q) = %q, %v; text without $ must pass through", s, out, err)
		}
		// Escaped text expands back to itself.
		if back, err := expand(escapeDollars(s), lookup, false); err != nil || back != s {
			t.Fatalf("expand(escapeDollars(%q)) = %q, %v", s, back, err)
		}
		// Keeping unset references changes only what would have failed.
		kept, kerr := expand(s, lookup, true)
		if err == nil && (kerr != nil || kept != out) {
			t.Fatalf("keepUnset changed a successful expansion of %q: %q, %v vs %q", s, kept, kerr, out)
		}
		if err != nil && !errors.Is(err, errUnset) && kerr == nil {
			t.Fatalf("keepUnset hid a syntax error in %q: %v", s, err)
		}
	})
}

// FuzzShowURL checks the default form of a shown URL: whatever the input,
// it is Mask or a URL whose path segments are plain endpoint words or
// masked and whose every query and fragment value is masked; and showing
// it again changes nothing.
func FuzzShowURL(f *testing.F) {
	for _, s := range []string{
		"https://actions.example.com/sk-SECRET/mcp", "https://h.example/mcp?hmac=SECRET&ts=1", "http://u:p@127.0.0.1:8080/v1/sse#k=v",
		"https://h.example/mcp?SECRET", "http://[::1]/mcp", "stdio://x", "127.0.0.1:11434", "https://h.example/%zz", "", "mailto:a@b",
		"https://h.example/a%2Fb/mcp", "https://h.example//mcp/", "https://h.example?&&=x", "HTTPS://H.EXAMPLE/MCP",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := ShowURL(raw, false)
		if again := ShowURL(got, false); again != got {
			t.Fatalf("ShowURL(%q) = %q, shown again %q", raw, got, again)
		}
		if got == Mask || got == "" {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("ShowURL(%q) = %q, which does not parse: %v", raw, got, err)
		}
		for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
			if seg != "" && seg != Mask && !plainSegments.MatchString(seg) {
				t.Fatalf("ShowURL(%q) = %q shows the path segment %q", raw, got, seg)
			}
		}
		for _, q := range []string{u.RawQuery, u.EscapedFragment()} {
			for part := range strings.SplitSeq(q, "&") {
				if _, v, ok := strings.Cut(part, "="); (ok && v != Mask) || (!ok && part != "" && part != Mask) {
					t.Fatalf("ShowURL(%q) = %q shows the value %q", raw, got, part)
				}
			}
		}
	})
}
