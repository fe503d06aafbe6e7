package classify

import (
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
)

// Entry is one catalog tool with its verdict and token count, the input of
// Decide and NewReport.
type Entry struct {
	// Server is the upstream server's name.
	Server string
	// Tool is the tool as the upstream listed it. Decide does not read
	// it (the gateway leaves it out there); Report does.
	Tool mcp.Tool
	// Verdict is Classify's answer for the tool.
	Verdict Verdict
	// Tokens is Counter.Count of the tool.
	Tokens int
	// Hints are the tool's annotation hints as the gateway renders them
	// (read-only, destructive, idempotent, open-world, closed-world).
	Hints []string
}

// Decision says whether the gateway bridges and which deferrable tools it
// defers. It is a value: the gateway swaps in a new one whenever the
// catalog changes.
type Decision struct {
	// Tokenizer is the config's tokenizer, the one Entry.Tokens are
	// expected to be counted with (o200k_base or estimate).
	Tokenizer string `json:"tokenizer"`
	// Mode is the config's mode: on, off or auto.
	Mode config.Mode `json:"mode"`
	// Bridge is true when the meta-tools are served and some tools deferred.
	Bridge bool `json:"bridge"`
	// DeferAuto is true when every deferrable tool is deferred, not only
	// those of `defer: always` servers.
	DeferAuto bool `json:"defer_auto"`

	// DeferrableTools and AlwaysTools count the deferrable tools, and those
	// of them whose server has `defer: always`.
	DeferrableTools int `json:"deferrable_tools"`
	AlwaysTools     int `json:"always_tools"`
	// DeferrableTokens is the sum of the deferrable tools' tokens (always
	// ones included); TotalTokens that of every tool.
	DeferrableTokens int `json:"deferrable_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// ContextWindow, MinTokens and ThresholdPct are the settings used.
	ContextWindow int     `json:"context_window"`
	MinTokens     int     `json:"min_tokens"`
	ThresholdPct  float64 `json:"threshold_pct"`
	// Pct is DeferrableTokens as a percentage of ContextWindow.
	Pct float64 `json:"pct"`

	// Reason explains the decision with its numbers.
	Reason string `json:"reason"`
}

// Decide makes the activation decision for a catalog. It is pure and does
// no tokenizing (Entry carries the counts), so the gateway can call it on
// every catalog change. cfg is taken as config.Load or Config.Validate
// leave it: defaults applied, mode and tokenizer normalized, the numbers in
// range. Decide does not fill them in again; a nil cfg means
// config.Default().
//
// Modes:
//   - off: never bridge.
//   - on: bridge whenever at least one tool is deferrable; defer them all.
//   - auto: bridge when the deferrable tools' tokens reach ThresholdPct
//     percent of ContextWindow, or reach MinTokens when that is above 0
//     (either is enough); ThresholdPct 0 means always, given one deferrable
//     tool. Then every deferrable tool is deferred (DeferAuto).
//
// `defer: always` servers are deferred "whenever bridge mode is on, even if
// the threshold is not reached". In auto mode this is read as: their tools
// count toward the threshold like any other deferrable tool, and their mere
// presence turns bridge mode on, so the meta-tools appear and those tools are
// deferred; the other deferrable tools (`defer: auto`, markers, rules) are
// deferred only when the threshold is reached (DeferAuto).
func Decide(cfg *config.Config, entries []Entry) Decision {
	if cfg == nil {
		def := config.Default()
		cfg = &def
	}
	d := Decision{
		Tokenizer:     cfg.Tokenizer,
		Mode:          cfg.Mode,
		ContextWindow: cfg.ContextWindow,
		MinTokens:     cfg.MinTokens,
		ThresholdPct:  cfg.ThresholdPct,
	}
	for _, e := range entries {
		d.TotalTokens += e.Tokens
		if e.Verdict.Class != config.ClassDeferrable {
			continue
		}
		d.DeferrableTools++
		d.DeferrableTokens += e.Tokens
		if e.Verdict.Always {
			d.AlwaysTools++
		}
	}
	d.Pct = float64(d.DeferrableTokens) * 100 / float64(d.ContextWindow)

	summary := plural(d.DeferrableTools, "deferrable tool") + ", " + plural(d.DeferrableTokens, "token")
	switch {
	case d.Mode == config.ModeOff:
		d.Reason = "off: pass-through (" + summary + ", all visible)"
		return d
	case d.DeferrableTools == 0:
		d.Reason = string(d.Mode) + ": no deferrable tool -> pass-through"
		return d
	case d.Mode == config.ModeOn:
		d.Bridge, d.DeferAuto = true, true
		d.Reason = "on: " + summary + " -> bridge"
		return d
	}

	byPct := d.ThresholdPct == 0 || d.Pct >= d.ThresholdPct
	shown := pct(d.Pct)
	if !byPct {
		shown = belowThreshold(d.Pct, d.ThresholdPct, shown)
	}
	head := fmt.Sprintf("auto: deferrable schemas %s = %s%% of %s",
		plural(d.DeferrableTokens, "token"), shown, commas(d.ContextWindow))
	byMin := d.MinTokens > 0 && d.DeferrableTokens >= d.MinTokens
	var cmp string
	switch {
	case byPct:
		cmp = " >= threshold " + num(d.ThresholdPct) + "%"
	case byMin:
		cmp = " < threshold " + num(d.ThresholdPct) + "%, >= min_tokens " + commas(d.MinTokens)
	default:
		cmp = " < threshold " + num(d.ThresholdPct) + "%"
		if d.MinTokens > 0 {
			cmp += ", < min_tokens " + commas(d.MinTokens)
		}
	}
	switch {
	case byPct || byMin:
		d.Bridge, d.DeferAuto = true, true
		d.Reason = head + cmp + " -> bridge"
	case d.AlwaysTools > 0:
		d.Bridge = true
		d.Reason = head + cmp + " -> bridge for " + plural(d.AlwaysTools, "defer: always tool") + " only"
	default:
		d.Reason = head + cmp + " -> pass-through"
	}
	return d
}

// Deferred reports whether a tool with verdict v is hidden behind the
// meta-tools under this decision.
func (d Decision) Deferred(v Verdict) bool {
	return d.Bridge && v.Class == config.ClassDeferrable && (d.DeferAuto || v.Always)
}

// num formats a setting like a threshold without trailing zeros: 10, 2.5.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// belowThreshold returns shown, a percentage under threshold as pct
// formats it, unless rounding made it read as the threshold or more
// ("10.0% < threshold 10%"): then it takes the fewest decimals, from two,
// that keep it under ("9.98%" for 9.9775), and every digit only when four
// do not. Every digit ("9.9775%") reads as false precision.
func belowThreshold(f, threshold float64, shown string) string {
	if v, err := strconv.ParseFloat(shown, 64); err != nil || v < threshold {
		return shown
	}
	for prec := 2; prec <= 4; prec++ {
		s := strconv.FormatFloat(f, 'f', prec, 64)
		if v, _ := strconv.ParseFloat(s, 64); v < threshold {
			return s
		}
	}
	return num(f)
}

// pct formats a measured percentage: one decimal, two between 0 and 1%, so
// a small catalog does not read as 0.0% or get rounded up to 0.1%.
func pct(f float64) string {
	switch {
	case f == 0:
		return "0"
	case f > 0 && f < 0.01:
		return "<0.01"
	case f > 0 && f < 1:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}
