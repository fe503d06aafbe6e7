package classify

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolbridge/toolbridge/config"
)

func reportEntries() []Entry {
	return []Entry{
		{Server: "b", Tool: mcp.NewTool("z"), Verdict: vAuto, Tokens: 4_000},
		{Server: "a", Tool: mcp.NewTool("y"), Verdict: vAlways, Tokens: 1_000},
		{Server: "a", Tool: mcp.NewTool("x"), Verdict: vCore, Tokens: 300},
		{Server: "b", Tool: mcp.NewTool("w"), Verdict: vUnk, Tokens: 200},
	}
}

func TestNewReport(t *testing.T) {
	entries := reportEntries()
	tests := []struct {
		name             string
		mode             config.Mode
		deferred         map[string]bool // tool name -> deferred
		bridgeTokens     int
		bridgeVisible    int
		clientTokens     int
		classDeferredTok [3]int
	}{
		{
			// Below the threshold, but a defer: always tool bridges alone.
			name: "auto, always only", mode: config.ModeAuto,
			deferred:     map[string]bool{"y": true},
			bridgeTokens: 4_000 + 300 + 200 + 50, bridgeVisible: 3, clientTokens: 4_550,
			classDeferredTok: [3]int{0, 1_000, 0},
		},
		{
			name: "on", mode: config.ModeOn,
			deferred:     map[string]bool{"y": true, "z": true},
			bridgeTokens: 300 + 200 + 50, bridgeVisible: 2, clientTokens: 550,
			classDeferredTok: [3]int{0, 5_000, 0},
		},
		{
			// Off: bridge mode is still priced, as mode on would give it.
			name: "off", mode: config.ModeOff,
			deferred:     map[string]bool{},
			bridgeTokens: 300 + 200 + 50, bridgeVisible: 2, clientTokens: 5_500,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Mode = tt.mode
			r := NewReport(entries, Decide(&cfg, entries), 50)
			var order []string
			for _, row := range r.Tools {
				order = append(order, row.Server+"::"+row.Name)
				if row.Deferred != tt.deferred[row.Name] {
					t.Errorf("%s deferred = %v, want %v", row.Name, row.Deferred, tt.deferred[row.Name])
				}
			}
			if got := strings.Join(order, " "); got != "a::x a::y b::w b::z" {
				t.Errorf("tool order = %s", got)
			}
			if r.PassThroughTokens != 5_500 || r.BridgeTokens != tt.bridgeTokens ||
				r.BridgeVisibleTools != tt.bridgeVisible || r.ClientTokens != tt.clientTokens || r.MetaTokens != 50 {
				t.Errorf("pass-through %d, bridge %d (%d visible), client %d; want 5500, %d (%d), %d",
					r.PassThroughTokens, r.BridgeTokens, r.BridgeVisibleTools, r.ClientTokens,
					tt.bridgeTokens, tt.bridgeVisible, tt.clientTokens)
			}
			if want := float64(5_500-tt.bridgeTokens) * 100 / 5_500; r.SavingPct != want {
				t.Errorf("saving = %v, want %v", r.SavingPct, want)
			}
			wantClasses := []ClassTotal{
				{Class: config.ClassCore, Tools: 1, Tokens: 300},
				{Class: config.ClassDeferrable, Tools: 2, Tokens: 5_000},
				{Class: config.ClassUnknown, Tools: 1, Tokens: 200},
			}
			for i := range wantClasses {
				wantClasses[i].DeferredTokens = tt.classDeferredTok[i]
				if tt.classDeferredTok[i] > 0 {
					wantClasses[i].DeferredTools = len(tt.deferred)
				}
				if r.Classes[i] != wantClasses[i] {
					t.Errorf("class %d = %+v, want %+v", i, r.Classes[i], wantClasses[i])
				}
			}
			if len(r.Servers) != 2 || r.Servers[0].Server != "a" || r.Servers[1].Server != "b" {
				t.Fatalf("servers = %+v", r.Servers)
			}
			a, b := r.Servers[0], r.Servers[1]
			if a.Tools != 2 || a.Core != 1 || a.Deferrable != 1 || a.Tokens != 1_300 ||
				b.Tools != 2 || b.Unknown != 1 || b.Deferrable != 1 || b.Tokens != 4_200 {
				t.Errorf("server totals = %+v", r.Servers)
			}
		})
	}
}

func TestNewReportEmpty(t *testing.T) {
	r := NewReport(nil, Decide(nil, nil), 700)
	if r.PassThroughTokens != 0 || r.BridgeTokens != 700 || r.SavingPct != 0 || len(r.Classes) != 3 {
		t.Errorf("empty report = %+v", r)
	}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
}

func TestWriteTableQuotesControlCharacters(t *testing.T) {
	entries := []Entry{{Server: "s", Tool: mcp.NewTool("bad\nname"), Verdict: vAuto, Tokens: 1}}
	var buf bytes.Buffer
	if err := NewReport(entries, Decide(nil, entries), 0).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"bad\nname"`) {
		t.Errorf("name not quoted:\n%s", buf.String())
	}
	for line := range strings.Lines(buf.String()) {
		if strings.HasPrefix(line, "name") {
			t.Errorf("a name broke a line: %q", line)
		}
	}
}

// TestWriteTableAligned checks that the numbers of each table end in the
// same column.
func TestWriteTableAligned(t *testing.T) {
	entries := reportEntries()
	var buf bytes.Buffer
	if err := NewReport(entries, Decide(nil, entries), 50).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	header, _, _ := strings.Cut(out, "\n")
	end := strings.Index(header, "TOKENS") + len("TOKENS")
	for _, line := range strings.Split(out, "\n")[1:5] {
		if line[end-1] < '0' || line[end-1] > '9' || line[end] != ' ' {
			t.Errorf("TOKENS column not right-aligned at %d: %q", end, line)
		}
	}
	if !strings.Contains(out, "4,000") || !strings.Contains(out, "5,500") {
		t.Errorf("no thousands separators:\n%s", out)
	}
}

func TestWriteJSONFieldNames(t *testing.T) {
	entries := reportEntries()
	var buf bytes.Buffer
	if err := NewReport(entries, Decide(nil, entries), 50).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "classes", "servers", "pass_through_tokens", "bridge_tokens",
		"bridge_visible_tools", "meta_tokens", "saving_pct", "client_tokens", "decision"} {
		if _, ok := m[k]; !ok {
			t.Errorf("report JSON lacks %q", k)
		}
	}
	tool := m["tools"].([]any)[0].(map[string]any)
	for _, k := range []string{"server", "name", "class", "reason", "always", "tokens", "deferred"} {
		if _, ok := tool[k]; !ok {
			t.Errorf("tool JSON lacks %q", k)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFail }

var errFail = errors.New("disk full")

func TestWriteErrors(t *testing.T) {
	r := NewReport(reportEntries(), Decide(nil, reportEntries()), 0)
	if err := r.WriteTable(failWriter{}); err == nil || !strings.Contains(err.Error(), "writing report table") {
		t.Errorf("WriteTable error = %v", err)
	}
	if err := r.WriteJSON(failWriter{}); err == nil || !strings.Contains(err.Error(), "writing report JSON") {
		t.Errorf("WriteJSON error = %v", err)
	}
}
