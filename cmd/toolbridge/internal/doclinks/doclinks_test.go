package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../../../.."

// TestRepositoryDocs holds README.md and every Markdown file under docs/
// to their links: each relative link names a file that exists, and each
// #fragment a heading of that file.
func TestRepositoryDocs(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found no Markdown file under docs/: %v", files)
	}
	broken, err := Check(files...)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("broken link %s", b)
	}
	// The check must have seen links at all, or it proves nothing.
	n := 0
	for _, f := range files {
		n += len(Links(readFile(t, f)))
	}
	if n < 20 {
		t.Errorf("only %d links in %d files: is the link parser still finding them?", n, len(files))
	}
}

// TestCheckFindsBrokenLinks runs the checker on a fixture with good and
// broken links of every kind it handles.
func TestCheckFindsBrokenLinks(t *testing.T) {
	broken, err := Check("testdata/a.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.Target)
	}
	want := []string{"nope.md", "b.md#no-such-heading", "b.md#not-there"}
	if !slices.Equal(got, want) {
		t.Errorf("broken links = %q, want %q (all: %v)", got, want, broken)
	}
	for _, b := range broken {
		if b.Line == 0 || b.Reason == "" {
			t.Errorf("%+v: no line or reason", b)
		}
	}
	if broken[0].Line != 8 {
		t.Errorf("nope.md reported on line %d, want 8", broken[0].Line)
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Servers that need a login", "servers-that-need-a-login"},
		{"Semantic rerank (optional)", "semantic-rerank-optional"},
		{"Trust: pinned tools and annotations", "trust-pinned-tools-and-annotations"},
		{"`tool_search` and `tool_call`", "tool_search-and-tool_call"},
		{"Claude Code's tool search", "claude-codes-tool-search"},
		{"3. What you see", "3-what-you-see"},
		{"A [link](x.md) in a heading", "a-link-in-a-heading"},
		{"Closing hashes ##", "closing-hashes"},
		{"Anthropic API / OpenAI API", "anthropic-api--openai-api"},
	}
	for _, tc := range tests {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	a := Anchors("# Top\n\n## Same\n\n## Same\n\n```\n# not a heading\n```\n\n<a name=\"custom\"></a>\n#nospace\n")
	for _, want := range []string{"top", "same", "same-1", "custom"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
	for _, not := range []string{"not-a-heading", "nospace"} {
		if a[not] {
			t.Errorf("anchor %q should not exist", not)
		}
	}
}

func TestLinksIgnoresCodeAndExternal(t *testing.T) {
	md := "See [x](x.md) and `[y](y.md)` and [web](https://example.com).\n\n```\n[z](z.md)\n```\n"
	var got []string
	for _, l := range Links(md) {
		got = append(got, l.Target)
	}
	if want := []string{"x.md", "https://example.com"}; !slices.Equal(got, want) {
		t.Errorf("Links = %q, want %q", got, want)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// FuzzLinks holds Links and Anchors to any input: no panic, and every
// link on a line of the text.
func FuzzLinks(f *testing.F) {
	for _, seed := range []string{
		"[a](b.md#c)", "# T\n\n[x\ny](z.md)", "```\n[n](n.md)\n```", "`[c](c.md)`",
		"[r]: ref.md", "## A\n## A\n", "<a name=\"q\"></a>", "[](", "](x)", "\n\n\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, md string) {
		lines := strings.Count(md, "\n") + 1
		for _, l := range Links(md) {
			if l.Line < 1 || l.Line > lines {
				t.Errorf("link %q on line %d of %d", l.Target, l.Line, lines)
			}
		}
		Anchors(md)
	})
}
