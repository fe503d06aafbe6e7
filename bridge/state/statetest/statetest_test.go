package statetest

import (
	"strings"
	"testing"
)

// recordingTB is a testing.TB whose Fatal and Skip record the message and
// stop the helper (by panicking, recovered by run) instead of ending the
// real test.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

type stopped struct{}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Fatal(args ...any)     { r.fatal = strings.TrimSpace(sprint(args)); panic(stopped{}) }
func (r *recordingTB) Skip(args ...any)      { r.skip = strings.TrimSpace(sprint(args)); panic(stopped{}) }
func (r *recordingTB) TempDir() string       { return r.TB.TempDir() }
func (r *recordingTB) Cleanup(f func())      { r.TB.Cleanup(f) }
func (r *recordingTB) Fatalf(string, ...any) { panic("unexpected Fatalf") }

func sprint(args []any) string {
	var b strings.Builder
	for _, a := range args {
		if s, ok := a.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// run calls StartServer(program) on a recordingTB and returns it.
func run(t *testing.T, program string) *recordingTB {
	r := &recordingTB{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(stopped); !ok {
					panic(p)
				}
			}
		}()
		StartServer(r, program)
		t.Fatalf("StartServer(%s) returned with no %s on PATH", program, program)
	}()
	return r
}

// TestStartServerMissingProgram: with neither server on PATH, a missing
// valkey-server fails the test under CI and skips it elsewhere, and a
// missing redis-server always fails it; each message names the program
// and how to install it.
func TestStartServerMissingProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		program, ci string
		fail        bool
		want        string
	}{
		{"valkey-server", "true", true, "bookworm-backports valkey-server"},
		{"valkey-server", "", false, "CI runs this test"},
		{"redis-server", "true", true, "apt-get install redis-server"},
		{"redis-server", "", true, "apt-get install redis-server"},
	} {
		t.Run(tc.program+" CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := run(t, tc.program)
			got := r.skip
			if tc.fail {
				got = r.fatal
				if r.skip != "" {
					t.Errorf("skipped (%q), want a failure", r.skip)
				}
			} else if r.fatal != "" {
				t.Errorf("failed (%q), want a skip", r.fatal)
			}
			if !strings.Contains(got, "no "+tc.program+" on PATH") || !strings.Contains(got, tc.want) {
				t.Errorf("message %q, want it to name %s and %q", got, tc.program, tc.want)
			}
		})
	}
}
