package demo

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bounds of the time tools: years outside 1..9999 do not round-trip through
// RFC 3339, and spans are capped to keep business-day counting cheap.
const (
	minYear         = 1
	maxYear         = 9999
	maxZoneBytes    = 64
	maxLayoutBytes  = 100
	maxBusinessSpan = 200 * 366 // days
)

// offsetZone matches fixed offsets such as "+02:00", "-0530", "UTC+2" or
// "GMT-03:30".
var offsetZone = regexp.MustCompile(`^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$`)

// loadZone resolves an IANA timezone name ("Europe/Paris"), "UTC", "Local"
// or a fixed offset. The empty name is UTC.
func loadZone(key, name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.EqualFold(name, "utc") || strings.EqualFold(name, "z") {
		return time.UTC, nil
	}
	if len(name) > maxZoneBytes {
		return nil, fmt.Errorf("argument %q: timezone name is too long", key)
	}
	if m := offsetZone.FindStringSubmatch(strings.ToUpper(name)); m != nil {
		h, _ := strconv.Atoi(m[2])
		mins := 0
		if m[3] != "" {
			mins, _ = strconv.Atoi(m[3])
		}
		if h > 14 || mins > 59 {
			return nil, fmt.Errorf("argument %q: offset %q is out of range (-14:00 to +14:00)", key, name)
		}
		secs := (h*60 + mins) * 60
		if m[1] == "-" {
			secs = -secs
		}
		return time.FixedZone(name, secs), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("argument %q: unknown timezone %q: use an IANA name such as \"Europe/Paris\", \"America/New_York\" or \"UTC\", or an offset such as \"+05:30\"", key, name)
	}
	return loc, nil
}

// timeLayouts are the layouts parseTime tries, in order. Layouts without a
// zone are read in the caller's timezone.
func timeLayouts(dayFirst bool) []string {
	numeric := []string{"01/02/2006", "01/02/2006 15:04", "01/02/2006 15:04:05", "1/2/2006"}
	if dayFirst {
		numeric = []string{"02/01/2006", "02/01/2006 15:04", "02/01/2006 15:04:05", "2/1/2006"}
	}
	layouts := []string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05Z07:00",
		"2006-01-02 15:04:05 Z07:00",
		"2006-01-02 15:04:05.999999999",
		"2006-01-02 15:04",
		"2006-01-02",
		"2006/01/02",
		"2006/01/02 15:04:05",
		"20060102",
		time.RFC1123Z,
		time.RFC1123,
		time.RFC850,
		time.RFC822Z,
		time.RFC822,
		time.ANSIC,
		time.UnixDate,
		"Mon, 2 Jan 2006 15:04:05 -0700",
		"Mon, 2 Jan 2006 15:04:05 MST",
		"2 Jan 2006",
		"2 Jan 2006 15:04",
		"2 January 2006",
		"Jan 2, 2006",
		"Jan 2 2006",
		"January 2, 2006",
		"January 2 2006",
		"Monday, January 2, 2006",
		"Mon Jan 2, 2006",
		"January 2, 2006 15:04",
		"January 2, 2006 3:04 PM",
		"Jan 2, 2006 3:04 PM",
		"02.01.2006",
		"2.1.2006",
		"02.01.2006 15:04",
	}
	return append(layouts, numeric...)
}

// parseTime reads a date or date-time in one of timeLayouts. It also
// accepts "now" and a Unix timestamp in seconds prefixed by "@" ("@1700000000").
func parseTime(key, s string, loc *time.Location, now clock, dayFirst bool) (time.Time, string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, "", fmt.Errorf("argument %q must not be empty", key)
	}
	if len(s) > 100 {
		return time.Time{}, "", fmt.Errorf("argument %q is too long for a date", key)
	}
	if strings.EqualFold(s, "now") {
		return now().In(loc), "now", nil
	}
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		secs, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return time.Time{}, "", fmt.Errorf("argument %q: %q is not a Unix timestamp", key, s)
		}
		t, err := unixTime(key, float64(secs), loc)
		return t, "@unix", err
	}
	// Normalize month and weekday spellings such as "march" or "MARCH":
	// Go's parser matches them case-insensitively already, but not spacing.
	s = strings.Join(strings.Fields(s), " ")
	for _, layout := range timeLayouts(dayFirst) {
		t, err := time.ParseInLocation(layout, s, loc)
		if err != nil {
			continue
		}
		if err := checkYear(key, t); err != nil {
			return time.Time{}, "", err
		}
		return t, layout, nil
	}
	return time.Time{}, "", fmt.Errorf("argument %q: cannot parse %q as a date: use e.g. \"2024-03-15\", \"2024-03-15T14:30:00Z\", \"2024-03-15 14:30\", \"15 Mar 2024\" or \"March 15, 2024\"", key, s)
}

// unixTime converts Unix seconds (with a fraction) to a time in loc.
func unixTime(key string, secs float64, loc *time.Location) (time.Time, error) {
	// 253402300799 is 9999-12-31T23:59:59Z; -62135596800 is 0001-01-01.
	if secs < -62135596800 || secs > 253402300799 {
		return time.Time{}, fmt.Errorf("argument %q: timestamp %v is outside years %d-%d", key, secs, minYear, maxYear)
	}
	whole := int64(secs)
	frac := int64((secs - float64(whole)) * 1e9)
	return time.Unix(whole, frac).In(loc), nil
}

// checkYear keeps times in the range RFC 3339 can express.
func checkYear(key string, t time.Time) error {
	if y := t.UTC().Year(); y < minYear || y > maxYear {
		return fmt.Errorf("argument %q: year %d is outside %d-%d", key, y, minYear, maxYear)
	}
	return nil
}

// parseDuration reads Go-style durations extended with days and weeks:
// "90m", "1h30m", "-2d", "1w2d3h4m5s", "1.5h", "250ms". A day here is exactly
// 24 hours; use the days argument of add_duration for calendar days.
func parseDuration(key, s string) (time.Duration, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("argument %q must not be empty", key)
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	bad := func(why string) error {
		return fmt.Errorf("argument %q: invalid duration %q: %s (examples: \"90m\", \"1h30m\", \"2d\", \"1w3d\", \"-45s\")", key, orig, why)
	}
	if s == "" {
		return 0, bad("no number")
	}
	var total float64 // seconds
	for s != "" {
		i := 0
		for i < len(s) && (s[i] == '.' || (s[i] >= '0' && s[i] <= '9')) {
			i++
		}
		if i == 0 {
			return 0, bad("expected a number at " + strconv.Quote(s))
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, bad("bad number " + strconv.Quote(s[:i]))
		}
		s = s[i:]
		j := 0
		for j < len(s) && (s[j] < '0' || s[j] > '9') && s[j] != '.' {
			j++
		}
		unit := s[:j]
		s = s[j:]
		var size float64
		switch unit {
		case "w":
			size = 7 * 86400
		case "d":
			size = 86400
		case "h":
			size = 3600
		case "m":
			size = 60
		case "s":
			size = 1
		case "ms":
			size = 1e-3
		case "us", "µs":
			size = 1e-6
		case "ns":
			size = 1e-9
		case "":
			return 0, bad("missing unit after " + strconv.FormatFloat(n, 'g', -1, 64))
		default:
			return 0, bad("unknown unit " + strconv.Quote(unit) + " (use w, d, h, m, s, ms, us, ns)")
		}
		total += n * size
	}
	// time.Duration spans about ±292 years.
	if total > 9e9 {
		return 0, bad("longer than 285 years")
	}
	d := time.Duration(total * 1e9)
	if neg {
		d = -d
	}
	return d, nil
}

// humanDuration renders d as "3d 4h 5m 6s" (the largest units first, zero
// units left out); sub-second remainders are dropped.
func humanDuration(d time.Duration) string {
	if d < 0 {
		return "-" + humanDuration(-d)
	}
	secs := int64(d / time.Second)
	if secs == 0 {
		return "0s"
	}
	var parts []string
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if n := secs / u.size; n > 0 {
			parts = append(parts, strconv.FormatInt(n, 10)+u.suffix)
			secs %= u.size
		}
	}
	return strings.Join(parts, " ")
}
