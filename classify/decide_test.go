package classify

import (
	"testing"

	"github.com/toolbridge/toolbridge/config"
)

var (
	vCore   = Verdict{Class: config.ClassCore, Reason: "core"}
	vAuto   = Verdict{Class: config.ClassDeferrable, Reason: "auto"}
	vAlways = Verdict{Class: config.ClassDeferrable, Reason: "always", Always: true}
	vUnk    = Verdict{Class: config.ClassUnknown, Reason: "unknown"}
)

func entry(v Verdict, tokens int) Entry { return Entry{Verdict: v, Tokens: tokens} }

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*config.Config)
		entries []Entry
		want    Decision // Mode, Bridge, DeferAuto, DeferrableTokens, TotalTokens, Reason are compared
		// deferred says which of vCore, vAuto, vAlways, vUnk are deferred.
		deferred [4]bool
	}{
		{
			name:    "auto below the threshold",
			entries: []Entry{entry(vAuto, 19_000), entry(vCore, 5_000), entry(vUnk, 1_000)},
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 19_000, TotalTokens: 25_000,
				Reason: "auto: deferrable schemas 19,000 tokens = 9.5% of 200,000 < threshold 10% -> pass-through"},
		},
		{
			name:    "auto exactly at the threshold bridges",
			entries: []Entry{entry(vAuto, 12_000), entry(vAuto, 8_000), entry(vCore, 5_000)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferAuto: true, DeferrableTokens: 20_000, TotalTokens: 25_000,
				Reason: "auto: deferrable schemas 20,000 tokens = 10.0% of 200,000 >= threshold 10% -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "auto: core and unknown tokens do not count",
			entries: []Entry{entry(vAuto, 100), entry(vCore, 50_000), entry(vUnk, 50_000)},
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 100, TotalTokens: 100_100,
				Reason: "auto: deferrable schemas 100 tokens = 0.05% of 200,000 < threshold 10% -> pass-through"},
		},
		{
			name:    "auto: custom threshold and window",
			edit:    func(c *config.Config) { c.ThresholdPct, c.ContextWindow = 5, 100_000 },
			entries: []Entry{entry(vAuto, 5_000)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferAuto: true, DeferrableTokens: 5_000, TotalTokens: 5_000,
				Reason: "auto: deferrable schemas 5,000 tokens = 5.0% of 100,000 >= threshold 5% -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "auto: fractional threshold",
			edit:    func(c *config.Config) { c.ThresholdPct = 2.5 },
			entries: []Entry{entry(vAuto, 4_999)},
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 4_999, TotalTokens: 4_999,
				Reason: "auto: deferrable schemas 4,999 tokens = 2.499% of 200,000 < threshold 2.5% -> pass-through"},
		},
		{
			name:    "auto: just under the threshold shows two decimals, not every digit",
			entries: []Entry{entry(vAuto, 19_955)},
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 19_955, TotalTokens: 19_955,
				Reason: "auto: deferrable schemas 19,955 tokens = 9.98% of 200,000 < threshold 10% -> pass-through"},
		},
		{
			name:    "auto: a hair under the threshold",
			entries: []Entry{entry(vAuto, 199_999)},
			edit:    func(c *config.Config) { c.ContextWindow = 2_000_000 },
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 199_999, TotalTokens: 199_999,
				Reason: "auto: deferrable schemas 199,999 tokens = 9.99995% of 2,000,000 < threshold 10% -> pass-through"},
		},
		{
			name:    "auto: rounding never reads as reaching the threshold",
			entries: []Entry{entry(vAuto, 19_999)},
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 19_999, TotalTokens: 19_999,
				Reason: "auto: deferrable schemas 19,999 tokens = 9.999% of 200,000 < threshold 10% -> pass-through"},
		},
		{
			name:    "auto: min_tokens reached below the percentage",
			edit:    func(c *config.Config) { c.MinTokens = 3_000 },
			entries: []Entry{entry(vAuto, 3_000)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferAuto: true, DeferrableTokens: 3_000, TotalTokens: 3_000,
				Reason: "auto: deferrable schemas 3,000 tokens = 1.5% of 200,000 < threshold 10%, >= min_tokens 3,000 -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "auto: neither percentage nor min_tokens",
			edit:    func(c *config.Config) { c.MinTokens = 3_001 },
			entries: []Entry{entry(vAuto, 3_000)},
			want: Decision{Mode: config.ModeAuto, DeferrableTokens: 3_000, TotalTokens: 3_000,
				Reason: "auto: deferrable schemas 3,000 tokens = 1.5% of 200,000 < threshold 10%, < min_tokens 3,001 -> pass-through"},
		},
		{
			name:    "auto: percentage reached, min_tokens not: either is enough",
			edit:    func(c *config.Config) { c.MinTokens = 1_000_000 },
			entries: []Entry{entry(vAuto, 30_000)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferAuto: true, DeferrableTokens: 30_000, TotalTokens: 30_000,
				Reason: "auto: deferrable schemas 30,000 tokens = 15.0% of 200,000 >= threshold 10% -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "auto: threshold 0 always bridges",
			edit:    func(c *config.Config) { c.ThresholdPct = 0 },
			entries: []Entry{entry(vAuto, 1)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferAuto: true, DeferrableTokens: 1, TotalTokens: 1,
				Reason: "auto: deferrable schemas 1 token = <0.01% of 200,000 >= threshold 0% -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "auto: threshold 0 without a deferrable tool",
			edit:    func(c *config.Config) { c.ThresholdPct = 0 },
			entries: []Entry{entry(vCore, 100), entry(vUnk, 100)},
			want:    Decision{Mode: config.ModeAuto, TotalTokens: 200, Reason: "auto: no deferrable tool -> pass-through"},
		},
		{
			name:    "auto: defer always tools bridge below the threshold, alone",
			entries: []Entry{entry(vAlways, 1_000), entry(vAuto, 2_000), entry(vCore, 10)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferrableTokens: 3_000, TotalTokens: 3_010,
				Reason: "auto: deferrable schemas 3,000 tokens = 1.5% of 200,000 < threshold 10% -> bridge for 1 defer: always tool only"},
			deferred: [4]bool{false, false, true, false},
		},
		{
			name:    "auto: defer always tokens count toward the threshold",
			entries: []Entry{entry(vAlways, 15_000), entry(vAuto, 5_000)},
			want: Decision{Mode: config.ModeAuto, Bridge: true, DeferAuto: true, DeferrableTokens: 20_000, TotalTokens: 20_000,
				Reason: "auto: deferrable schemas 20,000 tokens = 10.0% of 200,000 >= threshold 10% -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "on bridges with one small deferrable tool",
			edit:    func(c *config.Config) { c.Mode = config.ModeOn },
			entries: []Entry{entry(vAuto, 10), entry(vCore, 10_000)},
			want: Decision{Mode: config.ModeOn, Bridge: true, DeferAuto: true, DeferrableTokens: 10, TotalTokens: 10_010,
				Reason: "on: 1 deferrable tool, 10 tokens -> bridge"},
			deferred: [4]bool{false, true, true, false},
		},
		{
			name:    "on without a deferrable tool",
			edit:    func(c *config.Config) { c.Mode = config.ModeOn },
			entries: []Entry{entry(vCore, 10), entry(vUnk, 10)},
			want:    Decision{Mode: config.ModeOn, TotalTokens: 20, Reason: "on: no deferrable tool -> pass-through"},
		},
		{
			name:    "off never bridges",
			edit:    func(c *config.Config) { c.Mode = config.ModeOff },
			entries: []Entry{entry(vAuto, 150_000), entry(vAlways, 1_000)},
			want: Decision{Mode: config.ModeOff, DeferrableTokens: 151_000, TotalTokens: 151_000,
				Reason: "off: pass-through (2 deferrable tools, 151,000 tokens, all visible)"},
		},
		{
			name: "empty catalog",
			want: Decision{Mode: config.ModeAuto, Reason: "auto: no deferrable tool -> pass-through"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			d := Decide(&cfg, tt.entries)
			got := Decision{Mode: d.Mode, Bridge: d.Bridge, DeferAuto: d.DeferAuto,
				DeferrableTokens: d.DeferrableTokens, TotalTokens: d.TotalTokens, Reason: d.Reason}
			if got != tt.want {
				t.Errorf("Decide =\n  %+v\nwant\n  %+v", got, tt.want)
			}
			for i, v := range []Verdict{vCore, vAuto, vAlways, vUnk} {
				if d.Deferred(v) != tt.deferred[i] {
					t.Errorf("Deferred(%s) = %v, want %v", v.Reason, d.Deferred(v), tt.deferred[i])
				}
			}
		})
	}
}

func TestDecideNumbers(t *testing.T) {
	cfg := config.Default()
	cfg.ThresholdPct, cfg.ContextWindow, cfg.MinTokens, cfg.Tokenizer = 5, 100_000, 7, config.TokenizerEstimate
	d := Decide(&cfg, []Entry{entry(vAlways, 1_000), entry(vAuto, 2_000), entry(vCore, 10)})
	want := Decision{
		Tokenizer: "estimate", Mode: config.ModeAuto, Bridge: true, DeferAuto: true,
		DeferrableTools: 2, AlwaysTools: 1, DeferrableTokens: 3_000, TotalTokens: 3_010,
		ContextWindow: 100_000, MinTokens: 7, ThresholdPct: 5, Pct: 3,
		Reason: "auto: deferrable schemas 3,000 tokens = 3.0% of 100,000 < threshold 5%, >= min_tokens 7 -> bridge",
	}
	if d != want {
		t.Errorf("Decide =\n  %+v\nwant\n  %+v", d, want)
	}
}

func TestDecideNilConfig(t *testing.T) {
	d := Decide(nil, []Entry{entry(vAuto, 20_000)})
	if !d.Bridge || d.ContextWindow != 200_000 || d.ThresholdPct != 10 || d.Tokenizer != config.TokenizerO200k {
		t.Errorf("Decide(nil) = %+v, want the defaults and a bridge", d)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 17312: "17,312",
		200000: "200,000", 1234567: "1,234,567", -1234: "-1,234", -12: "-12"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPct(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 0.001: "<0.01", 0.05: "0.05", 0.994: "0.99", 6.8935: "6.9",
		10: "10.0", 84.93: "84.9", -5.26: "-5.3", 100: "100.0"} {
		if got := pct(f); got != want {
			t.Errorf("pct(%v) = %q, want %q", f, got, want)
		}
	}
}
