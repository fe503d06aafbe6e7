package main

import (
	"strings"
	"testing"
)

// TestUsageErrorsOneStyle checks that every command's wrong command line
// is answered alike, whichever engineer wrote the command: exit code 2,
// one "toolbridge: " prefix naming the command as the user typed it after
// "toolbridge", and where to read its usage.
func TestUsageErrorsOneStyle(t *testing.T) {
	tests := []struct {
		args []string
		want string // the message after the prefix
	}{
		{[]string{"auth", "login"}, "auth login takes one SERVER name, got 0 arguments"},
		{[]string{"auth", "logout", "a", "b"}, "auth logout takes one SERVER name, got 2 arguments"},
		{[]string{"auth", "status", "x"}, `auth status takes no arguments, got ["x"]`},
		{[]string{"version", "x"}, `version takes no arguments, got ["x"]`},
		{[]string{"describe"}, "describe takes one or more tool names"},
		{[]string{"call"}, "call takes TOOL and optional JSON arguments, got 0 arguments"},
		{[]string{"auth"}, "auth needs a subcommand: login, logout, status"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runCmd(t, nil, tt.args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			first, rest, _ := strings.Cut(errOut, "\n")
			if first != "toolbridge: "+tt.want {
				t.Errorf("first line %q, want %q", first, "toolbridge: "+tt.want)
			}
			if !strings.Contains(rest, "Run 'toolbridge ") || !strings.Contains(rest, " --help' for usage.") {
				t.Errorf("no pointer to the usage after the error:\n%s", errOut)
			}
		})
	}
}
