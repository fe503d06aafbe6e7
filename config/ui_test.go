package config

import (
	"slices"
	"strings"
	"testing"
)

// TestStatusPageKeys: ui.listen takes loopback addresses only (its
// listener has no token), and telemetry.ui_url a plain http(s) base URL.
func TestStatusPageKeys(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"loopback", "ui: {listen: \"127.0.0.1:7777\"}\ntelemetry: {ui_url: \"http://127.0.0.1:16686\"}\n", nil},
		{"localhost v6", "ui: {listen: \"[::1]:0\"}\n", nil},
		{"remote", "ui: {listen: \"0.0.0.0:7777\"}\n", []string{`: ui.listen: "0.0.0.0" is not a loopback address: the status page's own listener serves this machine only; listen on 127.0.0.1 (to share the page, serve over HTTP, where it is at /ui/ behind serve.auth_token)`}},
		{"remote even when allowed", "serve: {allow_remote: true}\nui: {listen: \"10.0.0.1:7777\"}\n", []string{`: ui.listen: "10.0.0.1" is not a loopback address: the status page's own listener serves this machine only; listen on 127.0.0.1 (to share the page, serve over HTTP, where it is at /ui/ behind serve.auth_token)`}},
		{"every interface", "ui: {listen: \":7777\"}\n", []string{`: ui.listen: an empty host (every interface) is not a loopback address: the status page's own listener serves this machine only; listen on 127.0.0.1 (to share the page, serve over HTTP, where it is at /ui/ behind serve.auth_token)`}},
		{"no port", "ui: {listen: \"127.0.0.1\"}\n", []string{`: ui.listen: invalid address "127.0.0.1": want a loopback host:port, such as "127.0.0.1:7777"`}},
		{"bad port", "ui: {listen: \"127.0.0.1:web\"}\n", []string{`: ui.listen: invalid port "web" in "127.0.0.1:web": want a number from 0 to 65535`}},
		{"unknown key", "ui: {listne: \"127.0.0.1:1\"}\n", []string{`: ui.listne: unknown key (did you mean listen?)`}},
		{"trace ui scheme", "telemetry: {ui_url: \"javascript:alert(1)\"}\n", []string{`: telemetry.ui_url: invalid URL "****": want the trace viewer's base URL with http:// or https:// and a host, such as "http://127.0.0.1:16686" (Jaeger)`}},
		{"trace ui credentials", "telemetry: {ui_url: \"https://u:pw@jaeger.example\"}\n", []string{`: telemetry.ui_url: invalid URL "https://****@jaeger.example:443": credentials in the URL would show on the status page`}},
		{"trace ui query", "telemetry: {ui_url: \"https://jaeger.example/?x=1\"}\n", []string{`: telemetry.ui_url: invalid URL "https://jaeger.example:443/?x=****": want a base URL without a query or fragment (links go to URL + "/trace/ID")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "c.yaml", tt.content)
			_, err := Load(LoadOptions{Path: path})
			var want []string
			for _, w := range tt.want {
				want = append(want, path+w)
			}
			if got := errLines(err); !slices.Equal(got, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
