package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestMetricsKeys: telemetry.metrics_listen is a host:port that needs
// serve.allow_remote beyond loopback, like serve.listen; serve.replica_id
// takes what a label value and a Redis key carry unquoted.
func TestMetricsKeys(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"loopback", "telemetry: {metrics_listen: \"127.0.0.1:9464\"}\nserve: {replica_id: gw-1.eu_west:a}\n", nil},
		{"remote allowed", "serve: {allow_remote: true}\ntelemetry: {metrics_listen: \":9464\"}\n", nil},
		{"off", "telemetry: {prometheus: false}\n", nil},
		{"remote", "telemetry: {metrics_listen: \"0.0.0.0:9464\"}\n", []string{`: telemetry.metrics_listen: "0.0.0.0" is not a loopback address: set serve.allow_remote: true (or --allow-remote) to accept connections from the network, or listen on 127.0.0.1`}},
		{"no port", "telemetry: {metrics_listen: \"127.0.0.1\"}\n", []string{`: telemetry.metrics_listen: invalid address "127.0.0.1": want host:port, such as "127.0.0.1:8080"`}},
		{"replica with space", "serve: {replica_id: \"gw 1\"}\n", []string{`: serve.replica_id: invalid replica id "gw 1": want letters, digits, '.', '_', ':' or '-', at most 128, such as "gw-1" (empty: the host name)`}},
		{"replica with quote", "serve: {replica_id: 'a\"b'}\n", []string{`: serve.replica_id: invalid replica id "a\"b": want letters, digits, '.', '_', ':' or '-', at most 128, such as "gw-1" (empty: the host name)`}},
		{"replica too long", "serve: {replica_id: " + strings.Repeat("a", 129) + "}\n", []string{`: serve.replica_id: invalid replica id "` + strings.Repeat("a", 60) + `"...: want letters, digits, '.', '_', ':' or '-', at most 128, such as "gw-1" (empty: the host name)`}},
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

func TestEffectiveReplicaID(t *testing.T) {
	if got := (Serve{ReplicaID: "gw-2"}).EffectiveReplicaID(); got != "gw-2" {
		t.Errorf("set: %q, want gw-2", got)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	if got := (Serve{}).EffectiveReplicaID(); got != host {
		t.Errorf("default: %q, want the host name %q", got, host)
	}
	if !Default().Telemetry.Prometheus {
		t.Error("telemetry.prometheus is off by default; want on")
	}
}
