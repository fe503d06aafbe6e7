package search

import (
	"slices"
	"testing"
)

func TestResolve(t *testing.T) {
	ix := refIndex(t, Options{})
	// A tool whose name differs from another only by case, and a server
	// whose name contains "__", to exercise the corner cases.
	ix.Upsert("case", []Document{{Name: "Echo"}, {Name: "ECHO_ALL"}})
	ix.Upsert("my__srv", []Document{{Name: "do__thing"}})
	tests := []struct {
		in         string
		id         string
		candidates []string
	}{
		{"github::create_issue", "github::create_issue", nil},
		{"GITHUB::CREATE_ISSUE", "github::create_issue", nil},
		{"  `github::create_issue`  ", "github::create_issue", nil},
		{`"read_file"`, "filesystem::read_file", nil},
		{"'read_file'", "filesystem::read_file", nil},
		{"read_file()", "filesystem::read_file", nil},
		{"READ_FILE", "filesystem::read_file", nil},
		{"github__create_issue", "github::create_issue", nil},
		{"mcp__github__create_issue", "github::create_issue", nil},
		{"MCP__GitHub__Create_Issue", "github::create_issue", nil},
		{"mcp__google-maps__maps_geocode", "google-maps::maps_geocode", nil},
		{"my__srv__do__thing", "my__srv::do__thing", nil},
		{"mcp__my__srv__do__thing", "my__srv::do__thing", nil},
		// Exact case wins over a case-insensitive twin.
		{"echo", "everything::echo", nil},
		{"Echo", "case::Echo", nil},
		// Ambiguous bare names list every candidate, sorted.
		{"create_issue", "", []string{"github::create_issue", "gitlab::create_issue"}},
		{"ECHO", "", []string{"case::Echo", "everything::echo"}},
		// Unknown names get did-you-mean candidates.
		{"creat_isue", "", []string{"github::create_issue", "gitlab::create_issue"}},
		{"github::creat_isue", "", []string{"github::create_issue", "gitlab::create_issue"}},
		{"slack_post_mesage", "", []string{"slack::slack_post_message"}},
		// Nothing similar: neither.
		{"", "", nil},
		{"   ", "", nil},
		{"zzzzzzzzzzzzzz", "", nil},
		{"nosuch::tool", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, cands := ix.Resolve(tt.in)
			if id != tt.id {
				t.Errorf("id = %q, want %q", id, tt.id)
			}
			if len(tt.candidates) == 0 && len(cands) != 0 || len(tt.candidates) > 0 && !hasPrefix(cands, tt.candidates) {
				t.Errorf("candidates = %q, want %q first", cands, tt.candidates)
			}
			if len(cands) > ix.Options().DidYouMeanMax && tt.id == "" && len(tt.candidates) != len(cands) {
				t.Errorf("%d candidates, over the bound", len(cands))
			}
		})
	}
}

func hasPrefix(got, want []string) bool {
	return len(got) >= len(want) && slices.Equal(got[:len(want)], want)
}

func TestOSADistance(t *testing.T) {
	tests := []struct {
		a, b string
		max  int
		want int
	}{
		{"create_issue", "create_issue", 3, 0},
		{"creat_isue", "create_issue", 3, 2},
		{"craete", "create", 2, 1}, // a transposition is one edit
		{"abc", "xyz", 1, 2},       // gives up at max+1
		{"", "abc", 5, 3},
		{"abc", "", 5, 3},
		{"héllo", "hello", 2, 1},
		{"abcdef", "abcxyzdef", 2, 3}, // length gap over the band
		{"ab", "ba", 0, 1},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3},
	}
	for _, tt := range tests {
		var rows [3][]int
		if got := osaDistance([]rune(tt.a), []rune(tt.b), tt.max, &rows); got != tt.want {
			t.Errorf("osaDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.max, got, tt.want)
		}
	}
}

func TestIsIdentifierLike(t *testing.T) {
	tests := map[string]bool{
		"creat_isue":     true,
		"getWeather":     true,
		"`read-file`":    true,
		"gh::tool":       true,
		"weather":        false,
		"read file":      false,
		"":               false,
		"create_issue x": false,
	}
	for in, want := range tests {
		if got := isIdentifierLike(in); got != want {
			t.Errorf("isIdentifierLike(%q) = %v, want %v", in, got, want)
		}
	}
}
