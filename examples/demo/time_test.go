package demo

import (
	"strings"
	"testing"
	"time"
)

func TestTimeTools(t *testing.T) {
	c := connect(t, "time")
	runCases(t, c, []toolCase{
		{name: "now in UTC", tool: "current_time", args: `{}`,
			want: map[string]any{"iso": "2024-03-15T13:30:00Z", "unix": 1710509400, "timezone": "UTC", "utc_offset": "+00:00", "weekday": "Friday", "date": "2024-03-15", "time": "13:30:00"}},
		{name: "now in Kolkata", tool: "current_time", args: `{"timezone":"Asia/Kolkata"}`,
			want: map[string]any{"iso": "2024-03-15T19:00:00+05:30", "abbreviation": "IST", "utc_offset": "+05:30"}},
		{name: "now in New York after DST start", tool: "current_time", args: `{"timezone":"America/New_York"}`,
			want: map[string]any{"iso": "2024-03-15T09:30:00-04:00", "abbreviation": "EDT"}},
		{name: "now at a fixed offset", tool: "current_time", args: `{"timezone":"UTC-03:00"}`,
			want: map[string]any{"iso": "2024-03-15T10:30:00-03:00"}},
		{name: "UTC to Paris in winter", tool: "convert_timezone", args: `{"time":"2024-01-15T12:00:00Z","to_timezone":"Europe/Paris"}`,
			want: map[string]any{"iso": "2024-01-15T13:00:00+01:00", "abbreviation": "CET"}},
		{name: "UTC to Paris in summer", tool: "convert_timezone", args: `{"time":"2024-07-15T12:00:00Z","to_timezone":"Europe/Paris"}`,
			want: map[string]any{"iso": "2024-07-15T14:00:00+02:00", "abbreviation": "CEST"}},
		{name: "Los Angeles wall time to Tokyo", tool: "convert_timezone", args: `{"time":"2024-07-04 09:00","from_timezone":"America/Los_Angeles","to_timezone":"Asia/Tokyo"}`,
			want: map[string]any{"iso": "2024-07-05T01:00:00+09:00", "weekday": "Friday"}},
		{name: "own offset wins over from_timezone", tool: "convert_timezone", args: `{"time":"2024-07-04T09:00:00+02:00","from_timezone":"Asia/Tokyo","to_timezone":"UTC"}`,
			want: map[string]any{"iso": "2024-07-04T07:00:00Z"}},
		{name: "add duration", tool: "add_duration", args: `{"time":"2024-03-15T13:30:00Z","duration":"1h30m"}`, want: map[string]any{"iso": "2024-03-15T15:00:00Z"}},
		{name: "subtract days", tool: "add_duration", args: `{"time":"2024-03-15T13:30:00Z","duration":"-2d"}`, want: map[string]any{"iso": "2024-03-13T13:30:00Z"}},
		{name: "add a week and a half day", tool: "add_duration", args: `{"time":"2024-03-15","duration":"1w12h"}`, want: map[string]any{"iso": "2024-03-22T12:00:00Z"}},
		{name: "month end clamps", tool: "add_duration", args: `{"time":"2024-01-31","months":1}`, want: map[string]any{"date": "2024-02-29"}},
		{name: "leap day plus a year", tool: "add_duration", args: `{"time":"2024-02-29","years":1}`, want: map[string]any{"date": "2025-02-28"}},
		{name: "negative months across a year", tool: "add_duration", args: `{"time":"2024-03-15","months":-15}`, want: map[string]any{"date": "2022-12-15"}},
		{name: "calendar day across DST keeps wall time", tool: "add_duration", args: `{"time":"2024-03-09 12:00","timezone":"America/New_York","days":1}`,
			want: map[string]any{"iso": "2024-03-10T12:00:00-04:00"}},
		{name: "24h across DST moves wall time", tool: "add_duration", args: `{"time":"2024-03-09 12:00","timezone":"America/New_York","duration":"24h"}`,
			want: map[string]any{"iso": "2024-03-10T13:00:00-04:00"}},
		{name: "diff", tool: "diff_times", args: `{"start":"2024-03-15T00:00:00Z","end":"2024-03-17T03:04:05Z"}`,
			want: map[string]any{"seconds": 183845, "human": "2d 3h 4m 5s", "negative": false}},
		{name: "diff negative across zones", tool: "diff_times", args: `{"start":"2024-03-15T12:00:00+01:00","end":"2024-03-15T10:00:00Z"}`,
			want: map[string]any{"seconds": -3600, "hours": -1, "human": "-1h", "negative": true}},
		{name: "diff over millennia", tool: "diff_times", args: `{"start":"0001-01-01","end":"9999-12-31"}`,
			check: func(t *testing.T, got map[string]any) {
				if d := got["days"].(float64); d < 3652058 || d > 3652060 {
					t.Errorf("days = %v, want about 3652059", d)
				}
				if h := got["human"].(string); !strings.HasPrefix(h, "3652058d") {
					t.Errorf("human = %q", h)
				}
			}},
		{name: "parse day month year", tool: "parse_date", args: `{"text":"15 Mar 2024"}`, want: map[string]any{"iso": "2024-03-15T00:00:00Z", "layout": "2 Jan 2006", "weekday": "Friday"}},
		{name: "parse long form", tool: "parse_date", args: `{"text":"march 15,   2024"}`, want: map[string]any{"date": "2024-03-15"}},
		{name: "parse US slashes", tool: "parse_date", args: `{"text":"03/04/2024"}`, want: map[string]any{"date": "2024-03-04"}},
		{name: "parse day first", tool: "parse_date", args: `{"text":"03/04/2024","day_first":true}`, want: map[string]any{"date": "2024-04-03"}},
		{name: "parse dotted European", tool: "parse_date", args: `{"text":"15.03.2024 14:30","timezone":"Europe/Berlin"}`, want: map[string]any{"iso": "2024-03-15T14:30:00+01:00"}},
		{name: "parse RFC 1123", tool: "parse_date", args: `{"text":"Fri, 15 Mar 2024 13:30:00 +0000"}`, want: map[string]any{"unix": 1710509400}},
		{name: "parse keeps offset", tool: "parse_date", args: `{"text":"2024-03-15T14:30:00.5+01:00"}`, want: map[string]any{"iso": "2024-03-15T14:30:00.5+01:00", "unix": 1710509400}},
		{name: "parse unix", tool: "parse_date", args: `{"text":"@1700000000"}`, want: map[string]any{"iso": "2023-11-14T22:13:20Z"}},
		{name: "parse now", tool: "parse_date", args: `{"text":"now"}`, want: map[string]any{"iso": "2024-03-15T13:30:00Z"}},
		{name: "format date", tool: "format_date", args: `{"time":"2024-03-15T13:30:00Z","format":"date"}`, want: map[string]any{"formatted": "2024-03-15"}},
		{name: "format kitchen", tool: "format_date", args: `{"time":"2024-03-15T13:30:00Z","format":"kitchen"}`, want: map[string]any{"formatted": "1:30PM"}},
		{name: "format human in Paris", tool: "format_date", args: `{"time":"2024-03-15T13:30:00Z","format":"human","timezone":"Europe/Paris"}`,
			want: map[string]any{"formatted": "Friday, March 15, 2024 at 2:30 PM CET"}},
		{name: "format custom", tool: "format_date", args: `{"time":"2024-03-15T13:30:00Z","format":"custom","layout":"02/01/2006 15h04"}`, want: map[string]any{"formatted": "15/03/2024 13h30"}},
		{name: "format unix", tool: "format_date", args: `{"time":"2024-03-15T13:30:00Z","format":"unix"}`, want: map[string]any{"formatted": "1710509400"}},
		{name: "format keeps input offset", tool: "format_date", args: `{"time":"2024-03-15T13:30:00+05:30","format":"rfc3339"}`, want: map[string]any{"formatted": "2024-03-15T13:30:00+05:30"}},
		{name: "day of week", tool: "day_of_week", args: `{"date":"2024-03-15"}`,
			want: map[string]any{"weekday": "Friday", "weekday_number": 5, "iso_week": 11, "iso_year": 2024, "day_of_year": 75, "weekend": false}},
		{name: "ISO week of next year", tool: "day_of_week", args: `{"date":"2024-12-29"}`,
			want: map[string]any{"weekday": "Sunday", "weekday_number": 7, "iso_week": 52, "weekend": true}},
		{name: "ISO week 1", tool: "day_of_week", args: `{"date":"2024-12-30"}`, want: map[string]any{"iso_week": 1, "iso_year": 2025}},
		{name: "leap 2024", tool: "is_leap_year", args: `{"year":2024}`, want: map[string]any{"leap": true, "days": 366}},
		{name: "not leap 1900", tool: "is_leap_year", args: `{"year":1900}`, want: map[string]any{"leap": false, "days": 365}},
		{name: "leap 2000", tool: "is_leap_year", args: `{"year":2000}`, want: map[string]any{"leap": true}},
		{name: "epoch", tool: "unix_to_iso", args: `{"timestamp":0}`, want: map[string]any{"iso": "1970-01-01T00:00:00Z", "weekday": "Thursday"}},
		{name: "milliseconds in Tokyo", tool: "unix_to_iso", args: `{"timestamp":1700000000000,"unit":"milliseconds","timezone":"Asia/Tokyo"}`,
			want: map[string]any{"iso": "2023-11-15T07:13:20+09:00"}},
		{name: "fractional seconds", tool: "unix_to_iso", args: `{"timestamp":1.5}`, want: map[string]any{"iso": "1970-01-01T00:00:01.5Z"}},
		{name: "iso to unix", tool: "iso_to_unix", args: `{"time":"2024-03-15T13:30:00Z"}`, want: map[string]any{"unix": 1710509400, "unix_ms": 1710509400000}},
		{name: "local wall time to unix", tool: "iso_to_unix", args: `{"time":"2024-03-15 14:30","timezone":"Europe/Paris"}`,
			want: map[string]any{"unix": 1710509400, "utc": "2024-03-15T13:30:00Z"}},
		{name: "business days in March 2024", tool: "business_days_between", args: `{"start":"2024-03-01","end":"2024-04-01"}`,
			want: map[string]any{"business_days": 21, "calendar_days": 31, "weekend_days": 10, "holidays": 0}},
		{name: "business days minus holidays", tool: "business_days_between", args: `{"start":"2024-03-01","end":"2024-04-01","holidays":["2024-03-29","2024-03-30"]}`,
			want: map[string]any{"business_days": 20, "holidays": 1}},
		{name: "business days reversed", tool: "business_days_between", args: `{"start":"2024-04-01","end":"2024-03-01"}`,
			want: map[string]any{"business_days": -21, "calendar_days": -31}},
		{name: "business days same day", tool: "business_days_between", args: `{"start":"2024-03-15","end":"2024-03-15"}`, want: map[string]any{"business_days": 0}},

		// Broken input.
		{name: "bad timezone", tool: "current_time", args: `{"timezone":"Mars/Olympus"}`, errHas: []string{`unknown timezone "Mars/Olympus"`, `"timezone"`}},
		{name: "path in timezone", tool: "current_time", args: `{"timezone":"../../etc/passwd"}`, errHas: []string{"unknown timezone"}},
		{name: "offset out of range", tool: "current_time", args: `{"timezone":"+15:00"}`, errHas: []string{"out of range"}},
		{name: "bad target timezone", tool: "convert_timezone", args: `{"time":"2024-01-01","to_timezone":"Europe/Atlantis"}`, errHas: []string{`argument "to_timezone": unknown timezone "Europe/Atlantis"`}},
		{name: "unparseable time", tool: "convert_timezone", args: `{"time":"yesterday-ish","to_timezone":"UTC"}`, errHas: []string{`cannot parse "yesterday-ish" as a date`}},
		{name: "impossible date", tool: "parse_date", args: `{"text":"2024-02-30"}`, errHas: []string{"cannot parse"}},
		{name: "nothing to add", tool: "add_duration", args: `{"time":"2024-01-01"}`, errHas: []string{"give at least one of"}},
		{name: "bad duration unit", tool: "add_duration", args: `{"time":"2024-01-01","duration":"5parsecs"}`, errHas: []string{"invalid duration", `unknown unit "parsecs"`}},
		{name: "duration without unit", tool: "add_duration", args: `{"time":"2024-01-01","duration":"90"}`, errHas: []string{"missing unit"}},
		{name: "past year 9999", tool: "add_duration", args: `{"time":"9999-12-31","years":1}`, errHas: []string{"year 10000 is outside"}},
		{name: "custom without layout", tool: "format_date", args: `{"time":"2024-01-01","format":"custom"}`, errHas: []string{`needs a "layout"`}},
		{name: "layout without custom", tool: "format_date", args: `{"time":"2024-01-01","format":"date","layout":"2006"}`, errHas: []string{"only used with format custom"}},
		{name: "layout with no elements", tool: "format_date", args: `{"time":"2024-01-01","format":"custom","layout":"hello"}`, errHas: []string{"no date or time element"}},
		{name: "unknown format", tool: "format_date", args: `{"time":"2024-01-01","format":"iso"}`, errHas: []string{`"format" must be one of`}},
		{name: "year zero", tool: "is_leap_year", args: `{"year":0}`, errHas: []string{`"year" must be between 1 and 9999`}},
		{name: "timestamp too large", tool: "unix_to_iso", args: `{"timestamp":1e20}`, errHas: []string{"outside years 1-9999"}},
		{name: "timestamp as text", tool: "unix_to_iso", args: `{"timestamp":"1700000000"}`, errHas: []string{`"timestamp" must be a number, got string`}},
		{name: "bad holiday", tool: "business_days_between", args: `{"start":"2024-03-01","end":"2024-04-01","holidays":["March 3"]}`, errHas: []string{`item 0 ("March 3") is not a YYYY-MM-DD date`}},
		{name: "span too long", tool: "business_days_between", args: `{"start":"0001-01-01","end":"9999-01-01"}`, errHas: []string{"the limit is"}},
	})
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"90m", 90 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"+1.5h", 90 * time.Minute},
		{"-2d", -48 * time.Hour},
		{"1w2d3h4m5s", (9*24+3)*time.Hour + 4*time.Minute + 5*time.Second},
		{"250ms", 250 * time.Millisecond},
		{" 10us ", 10 * time.Microsecond},
	}
	for _, tt := range tests {
		got, err := parseDuration("d", tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-", "h", "1x", "1.2.3h", "99999999d", "1h 30m"} {
		if _, err := parseDuration("d", bad); err == nil {
			t.Errorf("parseDuration(%q) succeeded", bad)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	tests := map[time.Duration]string{
		0:                                "0s",
		time.Second:                      "1s",
		-90 * time.Minute:                "-1h 30m",
		26*time.Hour + 5*time.Second:     "1d 2h 5s",
		500 * time.Millisecond:           "0s",
		7*24*time.Hour + 59*time.Minute:  "7d 59m",
		-(49*time.Hour + 61*time.Second): "-2d 1h 1m 1s",
	}
	for d, want := range tests {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParseTime checks that no input makes the date parser panic or return
// a time outside the years the tools promise.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2024-03-15", "15 Mar 2024", "@-99999999999999", "now", "03/04/2024 10:00", "Fri, 15 Mar 2024 13:30:00 +0000", "0000-01-01T00:00:00Z"} {
		f.Add(s, false)
	}
	now := func() time.Time { return fixedNow }
	f.Fuzz(func(t *testing.T, s string, dayFirst bool) {
		tm, _, err := parseTime("t", s, time.UTC, now, dayFirst)
		if err != nil {
			return
		}
		if y := tm.UTC().Year(); y < minYear || y > maxYear {
			t.Errorf("parseTime(%q) = %v, outside years %d-%d", s, tm, minYear, maxYear)
		}
	})
}
