package config

import (
	"errors"
	"testing"
)

func TestExpand(t *testing.T) {
	lookup := environLookup([]string{"HOME=/home/a", "EMPTY=", "TOKEN=t0k", "WITH_EQ=a=b"})
	tests := []struct {
		in, want string
		keep     bool
		wantErr  string
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${HOME}/x", want: "/home/a/x"},
		{in: "Bearer ${TOKEN}", want: "Bearer t0k"},
		{in: "${HOME}${TOKEN}", want: "/home/at0k"},
		{in: "${WITH_EQ}", want: "a=b"},
		{in: "${EMPTY}", want: ""},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${TOKEN:-fallback}", want: "t0k"},
		{in: "${MISSING:-}", want: ""},
		{in: "${MISSING:-a:-b}", want: "a:-b"},
		{in: "$$", want: "$"},
		{in: "$${HOME}", want: "${HOME}"},
		{in: "$$$${HOME}", want: "$${HOME}"},
		{in: "$$${HOME}", want: "$/home/a"},
		{in: "$HOME", want: "$HOME"},
		{in: "cost: 5$", want: "cost: 5$"},
		{in: "$", want: "$"},
		{in: "a$b$", want: "a$b$"},
		{in: "${MISSING}", keep: true, want: "${MISSING}"},
		{in: "x${MISSING}y${HOME}", keep: true, want: "x${MISSING}y/home/a"},
		{in: "${MISSING}", wantErr: "environment variable MISSING is not set"},
		{in: "${HOME", wantErr: `unterminated variable reference "${HOME": missing "}" (write $$ for a literal $)`},
		{in: "${}", wantErr: `invalid variable reference "${}": want ${NAME} or ${NAME:-default} (write $$ for a literal $)`},
		{in: "${A B}", wantErr: `invalid variable reference "${A B}": want ${NAME} or ${NAME:-default} (write $$ for a literal $)`},
		{in: "${1A}", wantErr: `invalid variable reference "${1A}": want ${NAME} or ${NAME:-default} (write $$ for a literal $)`},
		{in: "${A:-${B}}", wantErr: `invalid variable reference "${A:-${B}": a default cannot contain another reference`},
		{in: "${HOME", keep: true, wantErr: `unterminated variable reference "${HOME": missing "}" (write $$ for a literal $)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := expand(tt.in, lookup, tt.keep)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("expand(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if _, err := expand("${NOPE}", lookup, false); !errors.Is(err, errUnset) {
		t.Errorf("unset variable error %v does not wrap errUnset", err)
	}
}

func TestEscapeDollarsRoundTrip(t *testing.T) {
	lookup := environLookup(nil)
	for _, s := range []string{"", "$", "$$", "${X}", "a$b${c}$$d", "${X:-y}"} {
		got, err := expand(escapeDollars(s), lookup, false)
		if err != nil || got != s {
			t.Errorf("expand(escapeDollars(%q)) = %q, %v", s, got, err)
		}
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"threshold_pct", "mode", "mcpServers", "context_window", "min_tokens"}
	tests := []struct{ in, want string }{
		{"thresold_pct", "threshold_pct"},
		{"mdoe", "mode"},
		{"MODE", "mode"},
		{"mcpservers", "mcpServers"},
		{"thresh", "threshold_pct"},
		{"zzzzzz", ""},
		{"x", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, cands); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLookupEnv(t *testing.T) {
	environ := []string{"A=1", "EMPTY=", "WITH_EQ=a=b", "NOEQUALS", "A=2"}
	for _, tc := range []struct {
		name, want string
		found      bool
	}{
		{"A", "2", true}, // a later entry wins, as with os/exec
		{"EMPTY", "", true},
		{"WITH_EQ", "a=b", true},
		{"NOEQUALS", "", false},
		{"MISSING", "", false},
		{"", "", false},
	} {
		if got, found := LookupEnv(environ, tc.name); got != tc.want || found != tc.found {
			t.Errorf("LookupEnv(%q) = %q, %v; want %q, %v", tc.name, got, found, tc.want, tc.found)
		}
	}
}
