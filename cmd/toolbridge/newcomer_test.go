package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionFlag: toolbridge --version, what people try first, prints
// what toolbridge version prints.
func TestVersionFlag(t *testing.T) {
	_, want, _ := runCmd(t, nil, "version")
	if !strings.HasPrefix(want, "toolbridge ") {
		t.Fatalf("toolbridge version printed %q", want)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errOut := runCmd(t, nil, args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0, %q and nothing on stderr", args, code, out, errOut, want)
		}
	}
}

// TestServeWithoutServers: serve with no config says that no server is
// configured and how to give one, instead of "connecting 0 servers" and,
// once stdin closes, "stopped while connecting".
func TestServeWithoutServers(t *testing.T) {
	env := []string{"TOOLBRIDGE_STATE_DIR=" + t.TempDir()}
	code, _, errOut := runCmd(t, env, "serve")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"with no servers: none configured", "-c FILE", "toolbridge demo"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, not := range []string{"connecting 0 servers", "stopped while connecting"} {
		if strings.Contains(errOut, not) {
			t.Errorf("stderr has %q:\n%s", not, errOut)
		}
	}
}

// TestConfigCheckSaysWhetherAFileWasLoaded: without a file, config check
// still prints the defaults, but says on stderr that no file was loaded;
// with one it says nothing of the kind.
func TestConfigCheckSaysWhetherAFileWasLoaded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte("mode: on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    []string
		args   []string
		noFile bool
	}{
		{"no file", nil, []string{"config", "check"}, true},
		{"no file, a flag", nil, []string{"config", "check", "--mode", "on"}, true},
		{"file argument", nil, []string{"config", "check", file}, false},
		{"-c", nil, []string{"config", "check", "-c", file}, false},
		{"$TOOLBRIDGE_CONFIG", []string{"TOOLBRIDGE_CONFIG=" + file}, []string{"config", "check"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.env, tt.args...)
			if code != 0 || !strings.Contains(out, "mode:") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			said := strings.Contains(errOut, "no config file loaded")
			if said != tt.noFile {
				t.Errorf("stderr %q: says no file was loaded = %v, want %v", errOut, said, tt.noFile)
			}
			if strings.Contains(out, "no config file") {
				t.Errorf("the note went to stdout, which may be piped to a file:\n%s", out)
			}
		})
	}
}
