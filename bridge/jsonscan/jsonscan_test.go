package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// appendStringCases are strings that take each of AppendString's ways:
// plain ASCII, each escape encoding/json writes, HTML characters,
// characters beyond ASCII, U+2028 and U+2029, and invalid UTF-8.
var appendStringCases = []string{
	"",
	"plain text",
	"3 tools for \"create issue\" (9997 not listed).\n1. github::create_issue — Create a new issue…",
	"tab\tcr\rnl\nbs\bff\fnul\x00esc\x1bus\x1fdel\x7f",
	`back\slash and "quotes"`,
	"<IMPORTANT> a & b > c </IMPORTANT>",
	"line\u2028separator\u2029paragraph",
	"日本語のテキスト, émoji 🚀",
	"bad utf-8: \xff\xfe, cut rune: \xe2\x80, lone continuation \x80",
	"\xed\xa0\x80 (a surrogate half)",
	strings.Repeat("long text with\nnewlines ", 200),
}

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range appendStringCases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte(`{"k":`)
		got := AppendString(bytes.Clone(prefix), s)
		if !bytes.Equal(got, append(prefix, want...)) {
			t.Errorf("AppendString(%q) = %s, json.Marshal writes %s", s, got[len(prefix):], want)
		}
	}
}

// TestAppendStringAllocations: the string is written into buf, with no
// copy of it made on the way (the old AppendString marshalled any string
// that needed an escape).
func TestAppendStringAllocations(t *testing.T) {
	s := "a hit\nwith — an em dash and <html>\n"
	buf := make([]byte, 0, 4*len(s))
	if n := testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], s) }); n != 0 {
		t.Errorf("AppendString allocated %v times, want 0", n)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range appendStringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal writes %s", s, got, want)
		}
	})
}
