package demo

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// timeInfo describes one instant in one timezone.
type timeInfo struct {
	ISO          string `json:"iso" jsonschema:"the time in RFC 3339 with its UTC offset"`
	Unix         int64  `json:"unix" jsonschema:"seconds since 1970-01-01T00:00:00Z"`
	Timezone     string `json:"timezone" jsonschema:"the timezone name"`
	Abbreviation string `json:"abbreviation" jsonschema:"the zone abbreviation in effect, e.g. CET or EDT"`
	UTCOffset    string `json:"utc_offset" jsonschema:"offset from UTC, e.g. +01:00"`
	Date         string `json:"date" jsonschema:"the local date, YYYY-MM-DD"`
	Time         string `json:"time" jsonschema:"the local time of day, HH:MM:SS"`
	Weekday      string `json:"weekday" jsonschema:"the local day of the week, e.g. Monday"`
}

func describeTime(t time.Time) timeInfo {
	abbr, _ := t.Zone()
	return timeInfo{
		ISO:          t.Format(time.RFC3339Nano),
		Unix:         t.Unix(),
		Timezone:     t.Location().String(),
		Abbreviation: abbr,
		UTCOffset:    t.Format("-07:00"),
		Date:         t.Format(time.DateOnly),
		Time:         t.Format(time.TimeOnly),
		Weekday:      t.Weekday().String(),
	}
}

// timeOut returns t as a timeInfo result.
func timeOut(t time.Time) (*mcp.CallToolResult, error) {
	if y := t.UTC().Year(); y < minYear || y > maxYear {
		return nil, fmt.Errorf("the resulting year %d is outside %d-%d", y, minYear, maxYear)
	}
	info := describeTime(t)
	return structured(info, info.ISO+" ("+info.Timezone+", "+info.Weekday+")")
}

type parsedDate struct {
	ISO      string `json:"iso" jsonschema:"the parsed time in RFC 3339"`
	Unix     int64  `json:"unix" jsonschema:"seconds since the Unix epoch"`
	Date     string `json:"date" jsonschema:"the date, YYYY-MM-DD"`
	Time     string `json:"time" jsonschema:"the time of day, HH:MM:SS"`
	Weekday  string `json:"weekday" jsonschema:"the day of the week"`
	Timezone string `json:"timezone" jsonschema:"the timezone the text was read in (or its own offset)"`
	Layout   string `json:"layout" jsonschema:"the Go reference layout that matched"`
}

type timeDiff struct {
	Seconds  float64 `json:"seconds" jsonschema:"end minus start in seconds (negative when end is earlier)"`
	Minutes  float64 `json:"minutes" jsonschema:"the same in minutes"`
	Hours    float64 `json:"hours" jsonschema:"the same in hours"`
	Days     float64 `json:"days" jsonschema:"the same in 24-hour days"`
	Human    string  `json:"human" jsonschema:"the span as e.g. 2d 3h 4m 5s"`
	Negative bool    `json:"negative" jsonschema:"true when end is before start"`
}

type formattedDate struct {
	Formatted string `json:"formatted" jsonschema:"the formatted time"`
	Layout    string `json:"layout" jsonschema:"the Go reference layout used (empty for unix)"`
}

type weekdayInfo struct {
	Date          string `json:"date" jsonschema:"the date, YYYY-MM-DD"`
	Weekday       string `json:"weekday" jsonschema:"the day of the week, e.g. Friday"`
	WeekdayNumber int    `json:"weekday_number" jsonschema:"ISO day number: 1 = Monday ... 7 = Sunday"`
	ISOWeek       int    `json:"iso_week" jsonschema:"ISO 8601 week number"`
	ISOYear       int    `json:"iso_year" jsonschema:"ISO 8601 week-numbering year"`
	DayOfYear     int    `json:"day_of_year" jsonschema:"1 for January 1st"`
	Weekend       bool   `json:"weekend" jsonschema:"true on Saturday and Sunday"`
}

type leapYear struct {
	Year int64 `json:"year" jsonschema:"the year"`
	Leap bool  `json:"leap" jsonschema:"whether it is a leap year in the Gregorian calendar"`
	Days int   `json:"days" jsonschema:"365 or 366"`
}

type unixInfo struct {
	Unix   int64  `json:"unix" jsonschema:"seconds since 1970-01-01T00:00:00Z"`
	UnixMS int64  `json:"unix_ms" jsonschema:"milliseconds since the epoch"`
	UTC    string `json:"utc" jsonschema:"the same instant in UTC, RFC 3339"`
}

type businessDays struct {
	BusinessDays int `json:"business_days" jsonschema:"Monday-Friday dates in [start, end) that are not holidays (negative when end is before start)"`
	CalendarDays int `json:"calendar_days" jsonschema:"all dates in [start, end)"`
	WeekendDays  int `json:"weekend_days" jsonschema:"Saturdays and Sundays in the span"`
	Holidays     int `json:"holidays" jsonschema:"weekday holidays excluded"`
}

// Parameter descriptions shared by several time tools.
const (
	descTimeIn = "A date or date-time: RFC 3339 (\"2024-03-15T14:30:00Z\", \"2024-03-15T14:30:00+01:00\"), \"2024-03-15 14:30\", \"2024-03-15\", \"15 Mar 2024\", \"March 15, 2024\", \"@<unix seconds>\" or \"now\"."
	descZone   = "IANA timezone name such as \"Europe/Paris\", \"America/New_York\", \"Asia/Kolkata\" or \"UTC\" (default), or an offset such as \"+05:30\"."
	descZoneIn = "Timezone for input times that carry no offset; " + descZone
)

// formatLayout returns the Go layout of a named format_date style.
func formatLayout(format string) string {
	switch format {
	case "rfc3339":
		return time.RFC3339
	case "rfc1123":
		return time.RFC1123Z
	case "date":
		return time.DateOnly
	case "time":
		return time.TimeOnly
	case "datetime":
		return time.DateTime
	case "kitchen":
		return time.Kitchen
	case "human":
		return "Monday, January 2, 2006 at 3:04 PM MST"
	}
	return ""
}

func formatNames() []string {
	return []string{"rfc3339", "rfc1123", "date", "time", "datetime", "kitchen", "human", "unix", "custom"}
}

// timeTools returns the time server's tools, reading the clock through now.
func timeTools(now clock) []toolDef {
	tt := timeToolset{now: now}
	infoOut := mcp.WithOutputSchema[timeInfo]()
	return []toolDef{
		{newTool("current_time",
			"The current date and time in a timezone (UTC by default), with its UTC offset, zone abbreviation and weekday.",
			mcp.WithString("timezone", mcp.Description(descZone), mcp.DefaultString("UTC")),
			infoOut, readOnlyVolatile(),
		), tt.currentTime},
		{newTool("convert_timezone",
			"Convert a date-time to another timezone: the same instant, shown as local time there. Handles daylight saving time.",
			mcp.WithString("time", mcp.Required(), mcp.Description(descTimeIn)),
			mcp.WithString("to_timezone", mcp.Required(), mcp.Description("Target timezone. "+descZone)),
			mcp.WithString("from_timezone", mcp.Description(descZoneIn), mcp.DefaultString("UTC")),
			infoOut, readOnly(),
		), tt.convertTimezone},
		{newTool("add_duration",
			"Add (or, with negative values, subtract) a span to a date-time: a duration such as \"1h30m\", \"2d\" or \"1w\" (a day is exactly 24 hours) and/or calendar years, months and days, which keep the wall-clock time across daylight saving changes and clamp to the month's last day (Jan 31 + 1 month = Feb 29 in 2024).",
			mcp.WithString("time", mcp.Required(), mcp.Description(descTimeIn)),
			mcp.WithString("duration", mcp.Description("Exact duration to add: numbers with units w, d, h, m, s, ms, e.g. \"90m\", \"1h30m\", \"-2d\".")),
			mcp.WithInteger("years", mcp.Description("Calendar years to add (may be negative), -1000 to 1000."), mcp.Min(-1000), mcp.Max(1000)),
			mcp.WithInteger("months", mcp.Description("Calendar months to add (may be negative), -12000 to 12000."), mcp.Min(-12000), mcp.Max(12000)),
			mcp.WithInteger("days", mcp.Description("Calendar days to add (may be negative), -365000 to 365000."), mcp.Min(-365000), mcp.Max(365000)),
			mcp.WithString("timezone", mcp.Description(descZoneIn), mcp.DefaultString("UTC")),
			infoOut, readOnly(),
		), tt.addDuration},
		{newTool("diff_times",
			"The time between two date-times (end minus start) in seconds, minutes, hours and days, and as text like \"2d 3h 4m 5s\".",
			mcp.WithString("start", mcp.Required(), mcp.Description("Start. "+descTimeIn)),
			mcp.WithString("end", mcp.Required(), mcp.Description("End. "+descTimeIn)),
			mcp.WithString("timezone", mcp.Description(descZoneIn), mcp.DefaultString("UTC")),
			mcp.WithOutputSchema[timeDiff](), readOnly(),
		), tt.diffTimes},
		{newTool("parse_date",
			"Parse a date or date-time written in many common formats (ISO 8601 / RFC 3339, RFC 1123, \"15 Mar 2024\", \"March 15, 2024\", \"03/15/2024\", \"15.03.2024\", ...) into a normalized RFC 3339 time.",
			mcp.WithString("text", mcp.Required(), mcp.Description("The date text to parse.")),
			mcp.WithString("timezone", mcp.Description(descZoneIn), mcp.DefaultString("UTC")),
			mcp.WithBoolean("day_first", mcp.Description("Read slashed dates as DD/MM/YYYY instead of MM/DD/YYYY (default false)."), mcp.DefaultBool(false)),
			mcp.WithOutputSchema[parsedDate](), readOnly(),
		), tt.parseDate},
		{newTool("format_date",
			"Format a date-time in a named style (rfc3339, rfc1123, date, time, datetime, kitchen, human, unix) or a custom Go reference layout such as \"02 Jan 2006 15:04\", optionally in another timezone.",
			mcp.WithString("time", mcp.Required(), mcp.Description(descTimeIn)),
			mcp.WithString("format", mcp.Required(), mcp.Description("Output style; custom needs layout."), mcp.Enum(formatNames()...)),
			mcp.WithString("layout", mcp.Description("For format custom: a Go reference layout built from 2006 01 02 15 04 05 Mon Jan MST -07:00, up to 100 characters.")),
			mcp.WithString("timezone", mcp.Description("Timezone to show the time in (default: the input's own). "+descZone)),
			mcp.WithOutputSchema[formattedDate](), readOnly(),
		), tt.formatDate},
		{newTool("day_of_week",
			"The day of the week of a date, with its ISO weekday number, ISO week, day of the year and whether it is a weekend.",
			mcp.WithString("date", mcp.Required(), mcp.Description(descTimeIn)),
			mcp.WithOutputSchema[weekdayInfo](), readOnly(),
		), tt.dayOfWeek},
		{newTool("is_leap_year",
			"Whether a year is a leap year in the Gregorian calendar (divisible by 4, except centuries not divisible by 400).",
			mcp.WithInteger("year", mcp.Required(), mcp.Description("The year, 1 to 9999."), mcp.Min(minYear), mcp.Max(maxYear)),
			mcp.WithOutputSchema[leapYear](), readOnly(),
		), isLeapYear},
		{newTool("unix_to_iso",
			"Convert a Unix timestamp (seconds or milliseconds since 1970-01-01 UTC) to an RFC 3339 date-time in a timezone.",
			mcp.WithNumber("timestamp", mcp.Required(), mcp.Description("The timestamp; may have a fraction.")),
			mcp.WithString("unit", mcp.Description("seconds (default) or milliseconds."), mcp.Enum("seconds", "milliseconds"), mcp.DefaultString("seconds")),
			mcp.WithString("timezone", mcp.Description("Timezone to show the time in. "+descZone), mcp.DefaultString("UTC")),
			infoOut, readOnly(),
		), unixToISO},
		{newTool("iso_to_unix",
			"Convert a date-time to a Unix timestamp in seconds and milliseconds.",
			mcp.WithString("time", mcp.Required(), mcp.Description(descTimeIn)),
			mcp.WithString("timezone", mcp.Description(descZoneIn), mcp.DefaultString("UTC")),
			mcp.WithOutputSchema[unixInfo](), readOnly(),
		), tt.isoToUnix},
		{newTool("business_days_between",
			"Count the business days (Monday to Friday, minus the given holidays) from start up to but not including end, like a payment-terms calculator.",
			mcp.WithString("start", mcp.Required(), mcp.Description("First date counted, e.g. \"2024-03-01\".")),
			mcp.WithString("end", mcp.Required(), mcp.Description("The date after the last one counted, e.g. \"2024-04-01\".")),
			mcp.WithArray("holidays", mcp.Description("Dates (YYYY-MM-DD) that are not business days, up to 1000."), mcp.WithStringItems(), mcp.MaxItems(1000)),
			mcp.WithOutputSchema[businessDays](), readOnly(),
		), tt.businessDaysBetween},
	}
}

type timeToolset struct {
	now clock
}

// zoneArg reads an optional timezone argument (default UTC).
func zoneArg(a args, key string) (*time.Location, error) {
	name, err := a.optStr(key, "UTC")
	if err != nil {
		return nil, err
	}
	return loadZone(key, name)
}

// timeArg reads and parses the required date-time argument key, reading
// zone-less input in loc.
func (tt timeToolset) timeArg(a args, key string, loc *time.Location) (time.Time, error) {
	s, err := a.str(key)
	if err != nil {
		return time.Time{}, err
	}
	t, _, err := parseTime(key, s, loc, tt.now, false)
	return t, err
}

func (tt timeToolset) currentTime(_ context.Context, a args) (*mcp.CallToolResult, error) {
	loc, err := zoneArg(a, "timezone")
	if err != nil {
		return nil, err
	}
	return timeOut(tt.now().In(loc))
}

func (tt timeToolset) convertTimezone(_ context.Context, a args) (*mcp.CallToolResult, error) {
	from, err := zoneArg(a, "from_timezone")
	if err != nil {
		return nil, err
	}
	toName, err := a.nonEmpty("to_timezone")
	if err != nil {
		return nil, err
	}
	to, err := loadZone("to_timezone", toName)
	if err != nil {
		return nil, err
	}
	t, err := tt.timeArg(a, "time", from)
	if err != nil {
		return nil, err
	}
	return timeOut(t.In(to))
}

func (tt timeToolset) addDuration(_ context.Context, a args) (*mcp.CallToolResult, error) {
	loc, err := zoneArg(a, "timezone")
	if err != nil {
		return nil, err
	}
	t, err := tt.timeArg(a, "time", loc)
	if err != nil {
		return nil, err
	}
	if !a.has("duration") && !a.has("years") && !a.has("months") && !a.has("days") {
		return nil, fmt.Errorf("give at least one of \"duration\", \"years\", \"months\" and \"days\"")
	}
	years, err := a.optInteger("years", 0, -1000, 1000)
	if err != nil {
		return nil, err
	}
	months, err := a.optInteger("months", 0, -12000, 12000)
	if err != nil {
		return nil, err
	}
	days, err := a.optInteger("days", 0, -365000, 365000)
	if err != nil {
		return nil, err
	}
	var d time.Duration
	if a.has("duration") {
		s, err := a.str("duration")
		if err != nil {
			return nil, err
		}
		if d, err = parseDuration("duration", s); err != nil {
			return nil, err
		}
	}
	return timeOut(addCalendar(t, int(years), int(months), int(days)).Add(d))
}

// addCalendar adds years and months, clamping the day to the target month's
// length (Jan 31 + 1 month = Feb 29 in 2024, where time.AddDate would give
// Mar 2), then adds days. Wall-clock time is kept across DST changes.
func addCalendar(t time.Time, years, months, days int) time.Time {
	y, m, d := t.Date()
	total := int(m) - 1 + months + 12*years
	ny, nm := y+total/12, total%12
	if nm < 0 {
		nm += 12
		ny--
	}
	// Day 0 of the next month is the last day of this one.
	last := time.Date(ny, time.Month(nm+2), 0, 0, 0, 0, 0, time.UTC).Day()
	hh, mm, ss := t.Clock()
	out := time.Date(ny, time.Month(nm+1), min(d, last), hh, mm, ss, t.Nanosecond(), t.Location())
	return out.AddDate(0, 0, days)
}

func (tt timeToolset) diffTimes(_ context.Context, a args) (*mcp.CallToolResult, error) {
	loc, err := zoneArg(a, "timezone")
	if err != nil {
		return nil, err
	}
	start, err := tt.timeArg(a, "start", loc)
	if err != nil {
		return nil, err
	}
	end, err := tt.timeArg(a, "end", loc)
	if err != nil {
		return nil, err
	}
	// Sub saturates beyond ±292 years; compute in seconds to stay exact
	// over the whole 1..9999 range.
	secs := float64(end.Unix()-start.Unix()) + float64(end.Nanosecond()-start.Nanosecond())/1e9
	human := humanSeconds(secs)
	return structured(timeDiff{
		Seconds: secs, Minutes: secs / 60, Hours: secs / 3600, Days: secs / 86400,
		Human: human, Negative: secs < 0,
	}, human)
}

// humanSeconds renders a span of seconds like humanDuration, for spans too
// long for time.Duration.
func humanSeconds(secs float64) string {
	if math.Abs(secs) < float64(math.MaxInt64/int64(time.Second)) {
		return humanDuration(time.Duration(secs * float64(time.Second)))
	}
	days := math.Trunc(secs / 86400)
	rest := time.Duration((secs - days*86400) * float64(time.Second))
	h := humanDuration(rest)
	if rest < 0 {
		h = h[1:]
	}
	return fmt.Sprintf("%.0fd %s", days, h)
}

func (tt timeToolset) parseDate(_ context.Context, a args) (*mcp.CallToolResult, error) {
	s, err := a.str("text")
	if err != nil {
		return nil, err
	}
	loc, err := zoneArg(a, "timezone")
	if err != nil {
		return nil, err
	}
	dayFirst, err := a.optBool("day_first", false)
	if err != nil {
		return nil, err
	}
	t, layout, err := parseTime("text", s, loc, tt.now, dayFirst)
	if err != nil {
		return nil, err
	}
	out := parsedDate{
		ISO: t.Format(time.RFC3339Nano), Unix: t.Unix(),
		Date: t.Format(time.DateOnly), Time: t.Format(time.TimeOnly), Weekday: t.Weekday().String(),
		Timezone: t.Location().String(), Layout: layout,
	}
	return structured(out, out.ISO)
}

func (tt timeToolset) formatDate(_ context.Context, a args) (*mcp.CallToolResult, error) {
	format, err := a.enum("format", "", formatNames()...)
	if err != nil {
		return nil, err
	}
	layout, err := a.optStr("layout", "")
	if err != nil {
		return nil, err
	}
	if format == "custom" {
		if strings.TrimSpace(layout) == "" {
			return nil, fmt.Errorf("format custom needs a \"layout\", e.g. \"02 Jan 2006 15:04\"")
		}
		if len(layout) > maxLayoutBytes {
			return nil, fmt.Errorf("argument \"layout\" is too long: %d bytes, the limit is %d", len(layout), maxLayoutBytes)
		}
	} else if layout != "" {
		return nil, fmt.Errorf("argument \"layout\" is only used with format custom, not %q", format)
	} else {
		layout = formatLayout(format)
	}
	in := time.UTC
	var out *time.Location
	if a.has("timezone") {
		if out, err = zoneArg(a, "timezone"); err != nil {
			return nil, err
		}
		in = out
	}
	t, err := tt.timeArg(a, "time", in)
	if err != nil {
		return nil, err
	}
	if out != nil {
		t = t.In(out)
	}
	if format == "unix" {
		s := fmt.Sprint(t.Unix())
		return structured(formattedDate{Formatted: s, Layout: ""}, s)
	}
	s := t.Format(layout)
	if format == "custom" && s == layout {
		return nil, fmt.Errorf("layout %q has no date or time element: build it from 2006 01 02 15 04 05 Mon Jan MST -07:00", layout)
	}
	return structured(formattedDate{Formatted: s, Layout: layout}, s)
}

func (tt timeToolset) dayOfWeek(_ context.Context, a args) (*mcp.CallToolResult, error) {
	t, err := tt.timeArg(a, "date", time.UTC)
	if err != nil {
		return nil, err
	}
	y, w := t.ISOWeek()
	n := int(t.Weekday())
	if n == 0 {
		n = 7
	}
	out := weekdayInfo{
		Date: t.Format(time.DateOnly), Weekday: t.Weekday().String(), WeekdayNumber: n,
		ISOWeek: w, ISOYear: y, DayOfYear: t.YearDay(), Weekend: n >= 6,
	}
	return structured(out, out.Date+" is a "+out.Weekday)
}

func isLeapYear(_ context.Context, a args) (*mcp.CallToolResult, error) {
	y, err := a.integer("year", minYear, maxYear)
	if err != nil {
		return nil, err
	}
	leap := y%4 == 0 && (y%100 != 0 || y%400 == 0)
	days := 365
	text := fmt.Sprintf("%d is not a leap year", y)
	if leap {
		days = 366
		text = fmt.Sprintf("%d is a leap year", y)
	}
	return structured(leapYear{Year: y, Leap: leap, Days: days}, text)
}

func unixToISO(_ context.Context, a args) (*mcp.CallToolResult, error) {
	ts, err := a.number("timestamp")
	if err != nil {
		return nil, err
	}
	unit, err := a.enum("unit", "seconds", "seconds", "milliseconds")
	if err != nil {
		return nil, err
	}
	loc, err := zoneArg(a, "timezone")
	if err != nil {
		return nil, err
	}
	if unit == "milliseconds" {
		ts /= 1000
	}
	t, err := unixTime("timestamp", ts, loc)
	if err != nil {
		return nil, err
	}
	return timeOut(t)
}

func (tt timeToolset) isoToUnix(_ context.Context, a args) (*mcp.CallToolResult, error) {
	loc, err := zoneArg(a, "timezone")
	if err != nil {
		return nil, err
	}
	t, err := tt.timeArg(a, "time", loc)
	if err != nil {
		return nil, err
	}
	out := unixInfo{Unix: t.Unix(), UnixMS: t.UnixMilli(), UTC: t.UTC().Format(time.RFC3339Nano)}
	return structured(out, fmt.Sprint(out.Unix))
}

// dateArg parses a date argument and truncates it to its calendar day.
func (tt timeToolset) dateArg(a args, key string) (time.Time, error) {
	t, err := tt.timeArg(a, key, time.UTC)
	if err != nil {
		return time.Time{}, err
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), nil
}

func (tt timeToolset) businessDaysBetween(_ context.Context, a args) (*mcp.CallToolResult, error) {
	start, err := tt.dateArg(a, "start")
	if err != nil {
		return nil, err
	}
	end, err := tt.dateArg(a, "end")
	if err != nil {
		return nil, err
	}
	rawHolidays, err := a.strList("holidays", false, 1000)
	if err != nil {
		return nil, err
	}
	holidays := make(map[string]bool, len(rawHolidays))
	for i, h := range rawHolidays {
		d, err := time.Parse(time.DateOnly, strings.TrimSpace(h))
		if err != nil {
			return nil, fmt.Errorf("argument \"holidays\": item %d (%q) is not a YYYY-MM-DD date", i, h)
		}
		holidays[d.Format(time.DateOnly)] = true
	}
	sign := 1
	if end.Before(start) {
		start, end, sign = end, start, -1
	}
	span := int(end.Sub(start).Hours() / 24)
	if span > maxBusinessSpan {
		return nil, fmt.Errorf("the span is %d days, the limit is %d (about 200 years)", span, maxBusinessSpan)
	}
	var out businessDays
	for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
		out.CalendarDays++
		switch {
		case d.Weekday() == time.Saturday || d.Weekday() == time.Sunday:
			out.WeekendDays++
		case holidays[d.Format(time.DateOnly)]:
			out.Holidays++
		default:
			out.BusinessDays++
		}
	}
	out.BusinessDays *= sign
	out.CalendarDays *= sign
	return structured(out, fmt.Sprint(out.BusinessDays))
}
