package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestBoundedLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":7,"method":"x","params":"` + strings.Repeat("p", 100) + `"}`
	tests := []struct {
		name, in string
		limit    int64
		want     string // what passes through
		dropped  int
	}{
		{"short lines pass", "a\nbb\n", 10, "a\nbb\n", 0},
		{"a line at the limit passes", "12345678\n", 9, "12345678\n", 0},
		{"one byte over is dropped", "123456789\nok\n", 9, "ok\n", 1},
		{"long line between short ones", "a\n" + long + "\nb\n", 50, "a\nb\n", 1},
		{"long line at EOF without newline", "a\n" + long, 50, "a\n", 1},
		{"last line without newline passes", "a\nb", 5, "a\nb", 0},
		{"several long lines", long + "\n" + long + "\nc\n", 50, "c\n", 2},
	}
	for _, tt := range tests {
		for _, name := range []string{"whole", "one byte at a time"} {
			var r io.Reader = strings.NewReader(tt.in)
			if name != "whole" {
				r = iotest.OneByteReader(r)
			}
			dropped := 0
			got, err := io.ReadAll(NewBoundedLines(r, tt.limit, func([]byte) ([]byte, error) { dropped++; return nil, nil }))
			if err != nil || string(got) != tt.want || dropped != tt.dropped {
				t.Errorf("%s (%s): got %q, %d dropped, err %v; want %q, %d dropped", tt.name, name, got, dropped, err, tt.want, tt.dropped)
			}
		}
	}
}

func TestBoundedLinesKeepsTheID(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":"req-9","method":"tools/call","params":{"pad":"` + strings.Repeat("x", 1<<20) + "\"}}\n"
	var prefix []byte
	out, err := io.ReadAll(NewBoundedLines(strings.NewReader(in+"next\n"), 1000, func(p []byte) ([]byte, error) {
		prefix = p
		return ErrorLine(LeadingID(p), -1, "too long"), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(prefix) > 2*PrefixBytes {
		t.Errorf("kept %d bytes of the dropped line", len(prefix))
	}
	if id := LeadingID(prefix); id != "req-9" {
		t.Errorf("id %v, want req-9", id)
	}
	// The replacement comes in the dropped line's place.
	first, rest, _ := strings.Cut(string(out), "\n")
	var msg map[string]any
	if err := json.Unmarshal([]byte(first), &msg); err != nil || msg["id"] != "req-9" || rest != "next\n" {
		t.Errorf("got %q, want the replacement with id req-9, then the next line", out)
	}

	// An error from TooLongFunc stops the reading at once.
	stop := errors.New("stop")
	r := NewBoundedLines(strings.NewReader(in), 1000, func([]byte) ([]byte, error) { return nil, stop })
	if _, err := io.ReadAll(r); !errors.Is(err, stop) {
		t.Errorf("err %v, want %v", err, stop)
	}
}

func TestLeadingID(t *testing.T) {
	tests := []struct {
		prefix string
		want   any
	}{
		{`{"jsonrpc":"2.0","id":12345678901234567890,"method":"x","params":{"a":"xxxx`, "12345678901234567890"},
		{`{"id":"a","params":`, "a"},
		{`{"params":{"a":"xxxx`, nil},
		{`{"id":{"x":1}}`, nil},
		{`{"id":null}`, nil},
		{`[1,2`, nil},
		{``, nil},
		{`garbage`, nil},
	}
	for _, tt := range tests {
		got := LeadingID([]byte(tt.prefix))
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("LeadingID(%q) = %v, want %v", tt.prefix, got, tt.want)
		}
	}
}

func FuzzLeadingID(f *testing.F) {
	for _, s := range []string{`{"id":1,"method":"x"`, `{"id":"a"}`, `{"params":{`, `[`, `{"id":{"a":[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, prefix []byte) {
		switch LeadingID(prefix).(type) {
		case nil, string, json.Number:
		default:
			t.Fatalf("LeadingID(%q) gave a %T", prefix, LeadingID(prefix))
		}
	})
}

// A line handed out whole is let go of: the reader of a server that
// answered tools/list with a long line and then went quiet must not keep
// that line's buffer until the server writes again (#25: 25 servers of
// 400 tools kept 8 MB so).
func TestBoundedLinesLetsGoOfAHandedOutLine(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Repeat(`{"name":"t"},`, 20000) + `{"name":"u"}]}}` + "\n"
	pr, pw := io.Pipe()
	go func() { _, _ = io.WriteString(pw, line) }() // then quiet, not closed
	defer pw.Close()
	b := NewBoundedLines(pr, 1<<20, func([]byte) ([]byte, error) { return nil, errors.New("too long") })
	got := make([]byte, 0, len(line))
	buf := make([]byte, 4096)
	for len(got) < len(line) {
		n, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != line {
		t.Fatalf("read %d bytes, not the line", len(got))
	}
	if b.line != nil {
		t.Errorf("the reader keeps the handed-out line's buffer (cap %d) while the server is quiet", cap(b.line))
	}
}
