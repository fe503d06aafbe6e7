package config

import (
	"strings"
	"testing"
)

func TestStateDir(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    string
		wantErr string
	}{
		{"XDG wins", []string{"XDG_STATE_HOME=/xdg", "HOME=/home/u"}, "/xdg/toolbridge", ""},
		{"HOME fallback", []string{"HOME=/home/u"}, "/home/u/.local/state/toolbridge", ""},
		{"relative XDG ignored", []string{"XDG_STATE_HOME=rel", "HOME=/home/u"}, "/home/u/.local/state/toolbridge", ""},
		{"nothing set", []string{}, "", ""},
		{"env sets it", []string{"TOOLBRIDGE_STATE_DIR=/srv/tb/", "HOME=/home/u"}, "/srv/tb", ""},
		{"env tilde", []string{"TOOLBRIDGE_STATE_DIR=~/tb", "HOME=/home/u"}, "/home/u/tb", ""},
		{"env tilde alone", []string{"TOOLBRIDGE_STATE_DIR=~", "HOME=/home/u"}, "/home/u", ""},
		{"tilde without HOME", []string{"TOOLBRIDGE_STATE_DIR=~/tb"}, "", `state_dir: must be an absolute path or start with ~/, got "~/tb" ("~/" needs HOME to be set)`},
		{"relative", []string{"TOOLBRIDGE_STATE_DIR=state", "HOME=/home/u"}, "", `state_dir: must be an absolute path or start with ~/, got "state"`},
		{"other user's tilde", []string{"TOOLBRIDGE_STATE_DIR=~bob/x", "HOME=/home/u"}, "", "must be an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(LoadOptions{Environ: tt.environ})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "TOOLBRIDGE_STATE_DIR") {
					t.Errorf("error %q does not name the variable that set the key", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.StateDir != tt.want {
				t.Errorf("state_dir = %q, want %q", cfg.StateDir, tt.want)
			}
		})
	}
}
