package ui

import (
	"encoding/json"
	"time"
)

// Snapshot is what the page shows besides the live activity. The gateway
// builds one per request of the page (every few seconds while it is open).
type Snapshot struct {
	Version   string    `json:"version"`
	Transport string    `json:"transport"`
	At        time.Time `json:"at"`
	Servers   []Server  `json:"servers"`
	Decision  Decision  `json:"decision"`
	Tools     []Tool    `json:"tools"`
	Held      []Held    `json:"held"`
	// TraceUI is the base URL of the trace viewer (Jaeger), from
	// telemetry.ui_url; empty when none is configured.
	TraceUI string `json:"trace_ui,omitempty"`
}

// Server states, as the page shows them.
const (
	StateConnected  = "connected"
	StateConnecting = "connecting"
	StateNeedsLogin = "needs login"
	StateDown       = "down"
)

// Server is one upstream server.
type Server struct {
	Name string `json:"name"`
	// State is one of the State constants; Why says why it is not
	// connected (or why it needs a login).
	State     string `json:"state"`
	Why       string `json:"why,omitempty"`
	Transport string `json:"transport"`
	Tools     int    `json:"tools"`
	Tokens    int    `json:"tokens"`
	// Held counts the server's quarantined tools.
	Held       int    `json:"held,omitempty"`
	LastError  string `json:"last_error,omitempty"`
	Reconnects int    `json:"reconnects"`
}

// Decision is the bridge decision with the numbers behind it.
type Decision struct {
	Bridge bool   `json:"bridge"`
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// FullTokens is what listing every tool would cost; ClientTokens what
	// the client is sent (the visible tools, plus the meta-tools when
	// bridging); ThresholdTokens the deferrable tokens at which auto mode
	// bridges.
	FullTokens      int     `json:"full_tokens"`
	ClientTokens    int     `json:"client_tokens"`
	ThresholdTokens int     `json:"threshold_tokens"`
	ThresholdPct    float64 `json:"threshold_pct"`
	ContextWindow   int     `json:"context_window"`
	DeferrableTools int     `json:"deferrable_tools"`
	VisibleTools    int     `json:"visible_tools"`
	Tokenizer       string  `json:"tokenizer"`
}

// Tool is one upstream tool, listed, deferred or removed.
type Tool struct {
	ID          string `json:"id"`
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Class is core, deferrable, unknown or disabled; Rule the rule that
	// gave it.
	Class string `json:"class"`
	Rule  string `json:"rule,omitempty"`
	// Status is listed, deferred, quarantined or disabled.
	Status      string   `json:"status"`
	Tokens      int      `json:"tokens"`
	Annotations []string `json:"annotations,omitempty"`
	// Trust is the tool's standing against its pin: pinned, new, changed
	// or unchecked.
	Trust   string          `json:"trust,omitempty"`
	Flags   []string        `json:"flags,omitempty"`
	Warning string          `json:"warning,omitempty"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// Held is a quarantined tool, with what changed and how to release it.
type Held struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	// Diff is what `toolbridge trust diff` shows; empty when nothing is
	// pinned to compare with.
	Diff    string `json:"diff,omitempty"`
	Approve string `json:"approve"`
}
