package toolid

import (
	"strings"
	"testing"
)

func TestJoinSplit(t *testing.T) {
	tests := []struct {
		id           string
		server, tool string
		ok           bool
	}{
		{"github::create_issue", "github", "create_issue", true},
		{"fs::a::b", "fs", "a::b", true}, // the first separator splits: tool names may hold it
		{"::x", "", "x", true},
		{"create_issue", "create_issue", "", false},
		{"", "", "", false},
	}
	for _, tc := range tests {
		server, tool, ok := Split(tc.id)
		if server != tc.server || tool != tc.tool || ok != tc.ok {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, %v", tc.id, server, tool, ok, tc.server, tc.tool, tc.ok)
		}
		if ok && Join(server, tool) != tc.id {
			t.Errorf("Join(Split(%q)) = %q", tc.id, Join(server, tool))
		}
	}
}

func TestClean(t *testing.T) {
	tests := map[string]string{
		"x":          "x",
		" `x` ":      "x",
		"\"'x'\"":    "x",
		"``x``":      "x",
		"x()":        "x",
		"`x()`":      "x",
		"\"x\"()":    "x", // the old bridge copy kept these quotes: it cut "()" last
		"x ()":       "x", // ... and this space
		"' x '":      "x",
		"'x":         "'x",
		"'x\"":       "'x\"",
		"\"":         "\"",
		"()":         "",
		"":           "",
		"` spaced `": "spaced",
		"a::b":       "a::b",
		"f(x)":       "f(x)",
	}
	for in, want := range tests {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"x", " `x()` ", "\"'x'\"()", "(((", "\"\"", "'", "a::b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Clean(s)
		if Clean(got) != got {
			t.Fatalf("Clean(%q) = %q is not clean: Clean of it gives %q", s, got, Clean(got))
		}
		if !strings.Contains(s, got) {
			t.Fatalf("Clean(%q) = %q is not a part of its input", s, got)
		}
		if strings.TrimSpace(got) != got {
			t.Fatalf("Clean(%q) = %q has white space around it", s, got)
		}
	})
}
