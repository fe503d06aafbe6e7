package classify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/toolbridge/toolbridge/config"
)

// Report is the content of `toolbridge tools`: every tool with its class and
// cost, totals per class and per server, what the client receives with and
// without the bridge, and the decision.
type Report struct {
	// Tools are sorted by server, then name.
	Tools []ToolRow `json:"tools"`
	// Classes has one row per class, always in the order core, deferrable,
	// unknown.
	Classes []ClassTotal `json:"classes"`
	// Servers are sorted by name.
	Servers []ServerTotal `json:"servers"`

	// PassThroughTokens is what the client receives in pass-through: every
	// tool's schema.
	PassThroughTokens int `json:"pass_through_tokens"`
	// BridgeTokens is what it receives in bridge mode: the tools left
	// visible plus the meta-tools (MetaTokens). When the decision does not
	// bridge, it is what mode on would give, so the two can be compared.
	BridgeTokens int `json:"bridge_tokens"`
	// BridgeVisibleTools counts the tools left visible in bridge mode.
	BridgeVisibleTools int `json:"bridge_visible_tools"`
	// MetaTokens is the meta-tools' cost, as given by the gateway.
	MetaTokens int `json:"meta_tokens"`
	// SavingPct is how much smaller BridgeTokens is than
	// PassThroughTokens, in percent (negative when the bridge costs more).
	SavingPct float64 `json:"saving_pct"`
	// ClientTokens is what the client receives under the decision: one of
	// the two figures above.
	ClientTokens int `json:"client_tokens"`

	// Decision is the activation decision the report describes.
	Decision Decision `json:"decision"`

	// Notes are what the gateway has to say about single tools: those it
	// holds back (quarantined, disabled), which are not in Tools, and
	// warnings and suspicious descriptions. Sorted by server, then name.
	Notes []ToolNote `json:"notes,omitempty"`
}

// Kinds of ToolNote.
const (
	// NoteQuarantined: trust holds the tool until it is approved.
	NoteQuarantined = "quarantined"
	// NoteDisabled: a rule removes the tool.
	NoteDisabled = "disabled"
	// NoteWarning: trust mode warn serves a tool that mode pin would hold.
	NoteWarning = "warning"
	// NoteSuspicious: the tool's description looks like instructions to
	// the model.
	NoteSuspicious = "suspicious"
)

// ToolNote is one remark about one tool.
type ToolNote struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	// Kind is one of the Note* kinds.
	Kind string `json:"kind"`
	// Detail names the rule or change, and how to act on it.
	Detail string `json:"detail"`
}

// ToolRow is one tool in a Report.
type ToolRow struct {
	Server string       `json:"server"`
	Name   string       `json:"name"`
	Class  config.Class `json:"class"`
	Reason string       `json:"reason"`
	// Always is set for tools of `defer: always` servers.
	Always bool `json:"always"`
	Tokens int  `json:"tokens"`
	// Deferred is true when the decision hides the tool behind the
	// meta-tools.
	Deferred bool `json:"deferred"`
	// Hints are the tool's annotation hints (see Entry.Hints).
	Hints []string `json:"hints,omitempty"`
}

// ClassTotal sums the tools of one class.
type ClassTotal struct {
	Class          config.Class `json:"class"`
	Tools          int          `json:"tools"`
	Tokens         int          `json:"tokens"`
	DeferredTools  int          `json:"deferred_tools"`
	DeferredTokens int          `json:"deferred_tokens"`
}

// ServerTotal sums the tools of one server.
type ServerTotal struct {
	Server         string `json:"server"`
	Tools          int    `json:"tools"`
	Core           int    `json:"core"`
	Deferrable     int    `json:"deferrable"`
	Unknown        int    `json:"unknown"`
	Tokens         int    `json:"tokens"`
	DeferredTools  int    `json:"deferred_tools"`
	DeferredTokens int    `json:"deferred_tokens"`
}

// NewReport builds the report of a catalog under decision d. metaTokens is
// the meta-tools' schema cost, which the gateway owns and counts.
func NewReport(entries []Entry, d Decision, metaTokens int) Report {
	r := Report{
		Tools:      make([]ToolRow, 0, len(entries)),
		Classes:    []ClassTotal{{Class: config.ClassCore}, {Class: config.ClassDeferrable}, {Class: config.ClassUnknown}},
		MetaTokens: metaTokens,
		Decision:   d,
	}
	// In bridge mode as it would be if on: the decision's own when it
	// bridges, mode on's otherwise.
	bridged := d
	if !bridged.Bridge {
		bridged.Bridge, bridged.DeferAuto = true, true
	}
	servers := map[string]*ServerTotal{}
	for _, e := range entries {
		deferred := d.Deferred(e.Verdict)
		r.Tools = append(r.Tools, ToolRow{
			Server: e.Server, Name: e.Tool.Name, Class: e.Verdict.Class, Reason: e.Verdict.Reason,
			Always: e.Verdict.Always, Tokens: e.Tokens, Deferred: deferred, Hints: e.Hints,
		})
		r.PassThroughTokens += e.Tokens
		if !bridged.Deferred(e.Verdict) {
			r.BridgeTokens += e.Tokens
			r.BridgeVisibleTools++
		}

		ct := &r.Classes[classIndex(e.Verdict.Class)]
		st := servers[e.Server]
		if st == nil {
			st = &ServerTotal{Server: e.Server}
			servers[e.Server] = st
		}
		ct.Tools++
		ct.Tokens += e.Tokens
		st.Tools++
		st.Tokens += e.Tokens
		switch e.Verdict.Class {
		case config.ClassCore:
			st.Core++
		case config.ClassDeferrable:
			st.Deferrable++
		default:
			st.Unknown++
		}
		if deferred {
			ct.DeferredTools++
			ct.DeferredTokens += e.Tokens
			st.DeferredTools++
			st.DeferredTokens += e.Tokens
		}
	}
	r.BridgeTokens += metaTokens
	if r.PassThroughTokens > 0 {
		r.SavingPct = float64(r.PassThroughTokens-r.BridgeTokens) * 100 / float64(r.PassThroughTokens)
	}
	r.ClientTokens = r.PassThroughTokens
	if d.Bridge {
		r.ClientTokens = r.BridgeTokens
	}
	slices.SortStableFunc(r.Tools, func(a, b ToolRow) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Name, b.Name))
	})
	r.Servers = make([]ServerTotal, 0, len(servers))
	for _, st := range servers {
		r.Servers = append(r.Servers, *st)
	}
	slices.SortFunc(r.Servers, func(a, b ServerTotal) int { return cmp.Compare(a.Server, b.Server) })
	return r
}

// classIndex is the position of a class in Report.Classes; a class outside
// the three (which Classify never returns) counts as unknown.
func classIndex(c config.Class) int {
	switch c {
	case config.ClassCore:
		return 0
	case config.ClassDeferrable:
		return 1
	}
	return 2
}

// WriteJSON writes the report as indented JSON with the field names of the
// json tags above, which are stable.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing report JSON: %w", err)
	}
	return nil
}
