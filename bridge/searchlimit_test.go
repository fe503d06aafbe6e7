package bridge

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/config"
)

// searchLimitBefore is searchLimit as it was before it read plain numbers
// with strconv: the reference TestSearchLimitReadsAsBefore holds it to.
func searchLimitBefore(raw json.RawMessage, cfg config.Search) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return cfg.DefaultLimit, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(strings.TrimSpace(s))
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f < 1 || f != math.Trunc(f) {
		return 0, fmt.Errorf("limit must be a whole number from 1 to %d (larger ones are capped at %d), got %s",
			cfg.MaxLimit, cfg.MaxLimit, clip(string(raw), 40))
	}
	return int(min(f, float64(cfg.MaxLimit))), nil
}

// TestSearchLimitReadsAsBefore: every limit, valid or not, gives the
// limit or the error it gave before.
func TestSearchLimitReadsAsBefore(t *testing.T) {
	cfg := config.Default().Search
	for _, raw := range []string{"", "null", "5", "1", "0", "-1", "-0", "2.5", "5.0", "1e2", "1E1", "0.5e1", "1e-2", "0e0",
		"100000", "1e999", "-1e999", "123456789012345678901234567890", `"7"`, `" 7 "`, `"7.5"`, `"x"`, `""`, `"0x10"`,
		`"Inf"`, `"1_0"`, "true", "false", "[]", "[5]", "{}", `{"a":1}`} {
		got, gotErr := searchLimit(json.RawMessage(raw), cfg)
		want, wantErr := searchLimitBefore(json.RawMessage(raw), cfg)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("searchLimit(%s) = %d, %v; before: %d, %v", raw, got, gotErr, want, wantErr)
		}
	}
}

func FuzzSearchLimit(f *testing.F) {
	for _, s := range []string{"5", "-1", "2.5", "1e2", `"7"`, "1e999", "true"} {
		f.Add(s)
	}
	cfg := config.Default().Search
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return // args are a decoded document's values
		}
		got, gotErr := searchLimit(json.RawMessage(raw), cfg)
		want, wantErr := searchLimitBefore(json.RawMessage(raw), cfg)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("searchLimit(%s) = %d, %v; before: %d, %v", raw, got, gotErr, want, wantErr)
		}
	})
}
