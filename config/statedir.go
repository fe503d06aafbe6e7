package config

import (
	"path/filepath"
	"strings"
)

// stateDirName is toolbridge's directory below the XDG state home.
const stateDirName = "toolbridge"

// DefaultStateDir is the state directory when state_dir is not set:
// $XDG_STATE_HOME/toolbridge, else $HOME/.local/state/toolbridge, else ""
// (no state directory; features that need one then say so). A relative
// XDG_STATE_HOME is ignored, as the XDG base directory spec asks. lookup
// reads the environment, as os.LookupEnv does.
func DefaultStateDir(lookup func(string) (string, bool)) string {
	if x, _ := lookup("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, stateDirName)
	}
	if home, _ := lookup("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", stateDirName)
	}
	return ""
}

// resolveStateDir fills in the default state directory and expands a
// leading "~/" with HOME. A path that is still relative is left for
// validation to report.
func resolveStateDir(dir string, lookup lookupFunc) string {
	dir = strings.TrimSpace(dir)
	if dir == "" {
		return DefaultStateDir(lookup)
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		if home, _ := lookup("HOME"); filepath.IsAbs(home) {
			return filepath.Join(home, strings.TrimPrefix(dir, "~"))
		}
		return dir
	}
	return filepath.Clean(dir)
}
