// Package configs holds example toolbridge configuration files; its tests
// check that every example loads with the real config loader.
package configs

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/examples/demo"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var examples = []string{"claude_desktop_config.json", "toolbridge.yaml", "toolbridge.toml"}

func load(t *testing.T, path string) *config.Config {
	t.Helper()
	// An empty environment: the examples must not depend on the caller's.
	cfg, err := config.Load(config.LoadOptions{Path: path, Environ: []string{}})
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg
}

func TestExamplesLoad(t *testing.T) {
	for _, path := range examples {
		t.Run(path, func(t *testing.T) {
			cfg := load(t, path)
			if len(cfg.Servers) < 3 {
				t.Errorf("%s defines %d servers, want at least 3", path, len(cfg.Servers))
			}
		})
	}
}

// demoArg finds the demo server name in a "go run ./examples/servers/demo-server NAME" command.
var demoArg = regexp.MustCompile(`examples/servers/demo-server$`)

// TestDemoServerNames checks every example that runs demo-server names a
// server that exists.
func TestDemoServerNames(t *testing.T) {
	names := demo.Names()
	for _, path := range examples {
		found := 0
		for name, s := range load(t, path).Servers {
			for i, a := range s.Args {
				if !demoArg.MatchString(a) {
					continue
				}
				found++
				if i+1 >= len(s.Args) || !slices.Contains(names, s.Args[i+1]) {
					t.Errorf("%s: server %s runs demo-server with args %q; want one of %v after it", path, name, s.Args, names)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s runs no demo server", path)
		}
	}
}

func TestClaudeDesktopConfig(t *testing.T) {
	cfg := load(t, "claude_desktop_config.json")
	for _, want := range []string{"filesystem", "memory", "everything"} {
		s, ok := cfg.Servers[want]
		if !ok {
			t.Errorf("no %s server", want)
			continue
		}
		if s.Command != "npx" || !slices.Contains(s.Args, "@modelcontextprotocol/server-"+want) {
			t.Errorf("%s runs %s %q, want npx @modelcontextprotocol/server-%s", want, s.Command, s.Args, want)
		}
		if s.UpstreamTransport() != config.TransportStdio {
			t.Errorf("%s transport %s, want stdio", want, s.UpstreamTransport())
		}
	}
}

// TestYAMLShowsDefaults checks the YAML reference's promise: every key not
// marked as an example holds its built-in default.
func TestYAMLShowsDefaults(t *testing.T) {
	got := load(t, "toolbridge.yaml")
	want := config.Default()
	checks := []struct {
		key       string
		got, want any
	}{
		{"mode", got.Mode, want.Mode},
		{"threshold_pct", got.ThresholdPct, want.ThresholdPct},
		{"context_window", got.ContextWindow, want.ContextWindow},
		{"min_tokens", got.MinTokens, want.MinTokens},
		{"tokenizer", got.Tokenizer, want.Tokenizer},
		{"core_tools", got.CoreTools, want.CoreTools},
		{"deferrable_prefixes", got.DeferrablePrefixes, want.DeferrablePrefixes},
		{"disclosure", got.Disclosure, want.Disclosure},
		{"search", got.Search, want.Search},
		{"timeouts", got.Timeouts, want.Timeouts},
		{"restart", got.Restart, want.Restart},
		{"max_result_bytes", got.MaxResultBytes, want.MaxResultBytes},
		{"telemetry", got.Telemetry, want.Telemetry},
		{"audit", got.Audit, want.Audit},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, the default is %#v", c.key, c.got, c.want)
		}
	}
	// allowed_origins: [] loads as an empty list where the default is nil;
	// compare the rest of serve field by field.
	gs, ws := got.Serve, want.Serve
	if len(gs.AllowedOrigins) != 0 {
		t.Errorf("serve.allowed_origins = %q, the default is empty", gs.AllowedOrigins)
	}
	if len(gs.AllowedHosts) != 0 {
		t.Errorf("serve.allowed_hosts = %q, the default is empty", gs.AllowedHosts)
	}
	gs.AllowedOrigins, ws.AllowedOrigins = nil, nil
	gs.AllowedHosts, ws.AllowedHosts = nil, nil
	if !reflect.DeepEqual(gs, ws) {
		t.Errorf("serve = %#v, the default is %#v", gs, ws)
	}
}

// TestYAMLShowsEveryKey checks that the YAML reference mentions every key
// of the Config type (and of the server, tool rule and hook entries).
func TestYAMLShowsEveryKey(t *testing.T) {
	b, err := os.ReadFile("toolbridge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, key := range koanfKeys(reflect.TypeFor[config.Config]()) {
		// A key may be shown commented out ("# access:"): access rules
		// need serve.oauth, which has no working default.
		if !regexp.MustCompile(`(?m)^[\s#-]*` + regexp.QuoteMeta(key) + `:`).MatchString(text) {
			t.Errorf("toolbridge.yaml does not show the key %q", key)
		}
	}
}

// koanfKeys lists the koanf tag names of t's fields, recursing into
// structs, slices and maps of structs (time.Duration is a leaf).
func koanfKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if name == "" || name == "-" {
			continue
		}
		keys = append(keys, name)
		ft := f.Type
		for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			keys = append(keys, koanfKeys(ft)...)
		}
	}
	return keys
}
