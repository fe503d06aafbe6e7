package upstream

import "testing"

// TestFirstLineOfMarkdownInstructions: the catalog hint described the
// everything server as "# Everything Server – Server Instructions", the
// markdown heading its instructions start with.
func TestFirstLineOfMarkdownInstructions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# Everything Server – Server Instructions\n\nAudience: These instructions are written for an LLM.", "Everything Server"},
		{"# Instructions\n\n**Query** the `weather` service for forecasts.", "Query the weather service for forecasts."},
		{"## Overview\n- Manage GitHub issues and pull requests", "Manage GitHub issues and pull requests"},
		{"\n\n  Plain first line.\nSecond.", "Plain first line."},
		{"# Memory: usage instructions\nx", "Memory"},
		{"#\n# \nreal text", "real text"},
		{"", ""},
		{"# Server Instructions", ""},
	} {
		if got := firstLine(tc.in, 120); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := firstLine("# "+string(make([]rune, 0))+"Long server name that goes on and on", 10); got != "Long serv…" {
		t.Errorf("cut: %q", got)
	}
}
