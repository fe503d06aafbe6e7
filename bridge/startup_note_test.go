package bridge

import (
	"strings"
	"testing"
	"time"
)

// TestStartupSummaryCountsHeldTools: tools trust holds are not listed, so
// without a count a start whose tools are all held reads as servers with
// no tools ("1 of 3 servers up, 0 tools" while 9 were held).
func TestStartupSummaryCountsHeldTools(t *testing.T) {
	held := func(n int, kind string) []*Removed {
		out := make([]*Removed, n)
		for i := range out {
			out[i] = &Removed{Kind: kind}
		}
		return out
	}
	tests := []struct {
		name    string
		cat     *Catalog
		servers int
		want    string
	}{
		{"held tools counted", &Catalog{Servers: make([]ServerInfo, 1), Removed: held(9, RemovedQuarantined)}, 3,
			"toolbridge: 1 of 3 servers up, 0 tools, 9 held (toolbridge trust list); bridge mode off"},
		{"disabled tools are not held", &Catalog{Servers: make([]ServerInfo, 2), Tools: make([]*Tool, 1), Removed: held(2, RemovedDisabled)}, 2,
			"toolbridge: 2 of 2 servers up, 1 tool; bridge mode off"},
		{"nothing held", &Catalog{Servers: make([]ServerInfo, 2), Tools: make([]*Tool, 5)}, 2,
			"toolbridge: 2 of 2 servers up, 5 tools; bridge mode off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := startupSummary(tt.cat, tt.servers); !strings.HasPrefix(got, tt.want) {
				t.Errorf("startupSummary = %q, want it to start %q", got, tt.want)
			}
		})
	}
}

// TestStartupNote: the note names how many servers the answer lacks, the
// wait that passed, and the flag, setting and variable that wait longer.
func TestStartupNote(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{[]string{"a"}, "1 server still connecting after startup_wait (5s): answered without it;"},
		{[]string{"a", "b"}, "2 servers still connecting after startup_wait (5s): answered without them;"},
	} {
		got := startupNote(tt.names, 5*time.Second)
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("startupNote(%v) = %q, want it to start %q", tt.names, got, tt.want)
		}
		for _, setting := range []string{"--startup-wait 30s", "TOOLBRIDGE_STARTUP_WAIT", "list_changed"} {
			if !strings.Contains(got, setting) {
				t.Errorf("startupNote(%v) = %q lacks %q", tt.names, got, setting)
			}
		}
	}
}
