package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/config"
)

// TestConnectTimeoutNamesAServerStillStarting: a stdio server whose process
// runs but never answers initialize is reported as still starting, with
// what to do, and the error is still a deadline; one whose process ended
// is reported by how it ended instead.
func TestConnectTimeoutNamesAServerStillStarting(t *testing.T) {
	cfg := config.Default()
	p := NewPool(&cfg, PoolOptions{}, NewRelay(nil, nil))
	t.Cleanup(func() { _ = p.Close() })
	tests := []struct {
		name, script string
		want         string
		starting     bool
	}{
		{"hung", "exec sleep 600", "still starting after 300ms; raise connect_timeout", true},
		{"exits", "exit 3", "the process exited with status 3", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Name: tc.name, Config: config.Server{Command: "sh", Args: []string{"-c", tc.script}, ConnectTimeout: 300 * time.Millisecond}}
			_, _, err := p.dial(context.Background(), spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("dial error = %v, want one containing %q", err, tc.want)
			}
			if got := strings.Contains(err.Error(), "still starting"); got != tc.starting {
				t.Errorf("still starting reported = %v, want %v: %v", got, tc.starting, err)
			}
			if tc.starting && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v is not a context.DeadlineExceeded", err)
			}
		})
	}
}

func TestStartingErrorHint(t *testing.T) {
	for command, want := range map[string]string{
		"npx":           "still starting after 30s (npx may still be downloading the package); raise connect_timeout",
		"/usr/bin/uvx":  "still starting after 30s (uvx may still be downloading the package); raise connect_timeout",
		"node":          "still starting after 30s; raise connect_timeout",
		"":              "still starting after 30s; raise connect_timeout",
		"/opt/npx-tool": "still starting after 30s; raise connect_timeout",
	} {
		if got := (&startingError{after: 30 * time.Second, command: command}).Error(); got != want {
			t.Errorf("command %q: %q, want %q", command, got, want)
		}
	}
}
