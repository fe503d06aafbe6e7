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

func TestSplitAlias(t *testing.T) {
	tests := []struct {
		in   string
		want []Alias
	}{
		{"h__echo", []Alias{{"h", "echo"}}},
		{"mcp__h__echo", []Alias{{"h", "echo"}, {"mcp", "h__echo"}, {"mcp__h", "echo"}}},
		{"MCP__h__echo", []Alias{{"h", "echo"}, {"MCP", "h__echo"}, {"MCP__h", "echo"}}},
		{"a__b__c", []Alias{{"a", "b__c"}, {"a__b", "c"}}},
		{"a___b", []Alias{{"a", "_b"}, {"a_", "b"}}},
		{"echo", nil},
		{"__echo", nil},
		{"echo__", nil},
		{"mcp__", nil},
		{"mcp__x", []Alias{{"mcp", "x"}}},
		{"", nil},
	}
	for _, tc := range tests {
		got := SplitAlias(tc.in)
		if len(got) != len(tc.want) {
			t.Errorf("SplitAlias(%q) = %v, want %v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("SplitAlias(%q) = %v, want %v", tc.in, got, tc.want)
				break
			}
		}
	}
	if got := Aliases("h", "echo"); len(got) != 2 || got[0] != "h__echo" || got[1] != "mcp__h__echo" {
		t.Errorf("Aliases(h, echo) = %v", got)
	}
}

// FuzzSplitAlias: every reading of an alias names a non-empty server and
// tool that spell the input again, with or without the mcp__ prefix.
func FuzzSplitAlias(f *testing.F) {
	for _, seed := range []string{"h__echo", "mcp__h__echo", "MCP__H__ECHO", "a__b__c", "a___b", "mcp__", "mcp____x", "____", "_", "mcp__mcp__x__y", "h::echo", "日本__語", "\x00__\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, a := range SplitAlias(s) {
			if a.Server == "" || a.Tool == "" {
				t.Fatalf("SplitAlias(%q) gave an empty part: %+v", s, a)
			}
			joined := a.Server + "__" + a.Tool
			if joined != s && !(strings.EqualFold(s[:min(len(s), len(AliasPrefix))], AliasPrefix) && s[len(AliasPrefix):] == joined) {
				t.Fatalf("SplitAlias(%q) = %+v, which does not spell it", s, a)
			}
		}
	})
}
