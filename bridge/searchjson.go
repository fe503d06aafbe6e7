package bridge

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/toolbridge/toolbridge/bridge/jsonscan"
	"github.com/toolbridge/toolbridge/bridge/trust"
)

// tool_search's structuredContent, written by hand.
//
// Why: json.Marshal of a SearchResult walks it by reflection, and mcp-go's
// CallToolResult.MarshalJSON puts it in a map first and copies the encoding
// again; with the answer's other copies that was about 8 KB allocated a
// search, a third of what the gateway allocated for one over stdio, where
// what a search allocates decides how often the collector runs (#25,
// docs/performance.md, "tool_search over stdio"). appendJSON writes the same
// bytes straight into the answer (appendPlainAnswer takes structured content
// that has it). TestSearchResultAppendMatchesMarshal and
// FuzzSearchResultAppend hold it to json.Marshal: a field added to
// SearchResult, SearchHit or the types below must be added here too, or
// those tests fail.

// structuredAppender is structured content that writes its own encoding,
// byte for byte what json.Marshal writes for it, or the error json.Marshal
// returns.
// sizeHint is about the length of that encoding (more rather than
// less), so the answer is allocated once.
type structuredAppender interface {
	appendJSON(buf []byte) ([]byte, error)
	sizeHint() int
}

// sizeHint is about len(appendJSON): each field's key and punctuation,
// counted at their longest, plus its text, which rarely needs escapes.
func (r SearchResult) sizeHint() int {
	n := 80 + len(r.Ranking) + len(r.RankingNote)
	for i := range r.Tools {
		h := &r.Tools[i]
		// {"id":"","server":"","name":"","description":"","parameters":[],"score":-0.000}
		n += 96 + len(h.ID) + len(h.Server) + len(h.Name) + len(h.Description)
		for _, p := range h.Parameters {
			n += 36 + len(p.Name) + len(p.Type)
		}
		if h.AlreadyListed || h.Weak || h.Deprecated {
			n += 56
		}
		if h.Instead != "" {
			n += 16 + len(h.Instead)
		}
		if len(h.Annotations) > 0 {
			n += 16
		}
		for _, a := range h.Annotations {
			n += 3 + len(a)
		}
		if len(h.Flags) > 0 {
			n += 12
		}
		for _, f := range h.Flags {
			n += 32 + len(f.Rule) + len(f.Where) + len(f.Why)
		}
	}
	if len(r.DidYouMean) > 0 {
		n += 18
	}
	for _, s := range r.DidYouMean {
		n += 3 + len(s)
	}
	for _, s := range r.Catalog {
		n += 48 + len(s.Server)
		for _, t := range s.Tools {
			n += 3 + len(t)
		}
	}
	if r.Held != nil {
		n += 64 + len(r.Held.Review)
		for _, s := range r.Held.Servers {
			n += 3 + len(s)
		}
	}
	// Escapes: a character beyond ASCII is written as is; a newline or a
	// quote takes a byte more, an HTML character five.
	return n + n/16
}

// appendJSON appends json.Marshal(r).
func (r SearchResult) appendJSON(buf []byte) ([]byte, error) {
	var err error
	buf = append(buf, `{"tools":`...)
	if r.Tools == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i := range r.Tools {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = r.Tools[i].appendJSON(buf); err != nil {
				return nil, err
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"total_deferred":`...)
	buf = strconv.AppendInt(buf, int64(r.TotalDeferred), 10)
	if len(r.DidYouMean) > 0 {
		buf = append(buf, `,"did_you_mean":`...)
		buf = appendStrings(buf, r.DidYouMean)
	}
	if r.FilteredOut != 0 {
		buf = append(buf, `,"filtered_out":`...)
		buf = strconv.AppendInt(buf, int64(r.FilteredOut), 10)
	}
	if len(r.Catalog) > 0 {
		buf = append(buf, `,"catalog":[`...)
		for i, s := range r.Catalog {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"server":`...)
			buf = jsonscan.AppendString(buf, s.Server)
			buf = append(buf, `,"tools":`...)
			buf = appendStrings(buf, s.Tools)
			buf = append(buf, `,"total":`...)
			buf = strconv.AppendInt(buf, int64(s.Total), 10)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	if r.Partial {
		buf = append(buf, `,"partial":true`...)
	}
	if h := r.Held; h != nil {
		buf = append(buf, `,"held":{"tools":`...)
		buf = strconv.AppendInt(buf, int64(h.Tools), 10)
		if len(h.Servers) > 0 {
			buf = append(buf, `,"servers":`...)
			buf = appendStrings(buf, h.Servers)
		}
		buf = append(buf, `,"review":`...)
		buf = jsonscan.AppendString(buf, h.Review)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"ranking":`...)
	buf = jsonscan.AppendString(buf, r.Ranking)
	if r.RankingNote != "" {
		buf = append(buf, `,"ranking_note":`...)
		buf = jsonscan.AppendString(buf, r.RankingNote)
	}
	return append(buf, '}'), nil
}

// appendJSON appends json.Marshal(h).
func (h *SearchHit) appendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"id":`...)
	buf = jsonscan.AppendString(buf, h.ID)
	buf = append(buf, `,"server":`...)
	buf = jsonscan.AppendString(buf, h.Server)
	buf = append(buf, `,"name":`...)
	buf = jsonscan.AppendString(buf, h.Name)
	if h.Description != "" {
		buf = append(buf, `,"description":`...)
		buf = jsonscan.AppendString(buf, h.Description)
	}
	if h.Parameters != nil { // omitzero: [] is written, nil is not
		buf = append(buf, `,"parameters":[`...)
		for i, p := range h.Parameters {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"name":`...)
			buf = jsonscan.AppendString(buf, p.Name)
			buf = append(buf, `,"type":`...)
			buf = jsonscan.AppendString(buf, p.Type)
			if p.Required {
				buf = append(buf, `,"required":true`...)
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"score":`...)
	var err error
	if buf, err = appendFloat(buf, h.Score); err != nil {
		return nil, err
	}
	if h.AlreadyListed {
		buf = append(buf, `,"already_listed":true`...)
	}
	if h.Weak {
		buf = append(buf, `,"weak":true`...)
	}
	if h.Deprecated {
		buf = append(buf, `,"deprecated":true`...)
	}
	if h.Instead != "" {
		buf = append(buf, `,"instead":`...)
		buf = jsonscan.AppendString(buf, h.Instead)
	}
	if len(h.Annotations) > 0 {
		buf = append(buf, `,"annotations":`...)
		buf = appendStrings(buf, h.Annotations)
	}
	if len(h.Flags) > 0 {
		buf = append(buf, `,"flags":`...)
		buf = appendFlags(buf, h.Flags)
	}
	return append(buf, '}'), nil
}

// appendFlags appends json.Marshal(flags) of a non-nil slice.
func appendFlags(buf []byte, flags []trust.Flag) []byte {
	buf = append(buf, '[')
	for i, f := range flags {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"rule":`...)
		buf = jsonscan.AppendString(buf, f.Rule)
		buf = append(buf, `,"where":`...)
		buf = jsonscan.AppendString(buf, f.Where)
		buf = append(buf, `,"why":`...)
		buf = jsonscan.AppendString(buf, f.Why)
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// appendStrings appends json.Marshal(ss): null for nil.
func appendStrings(buf []byte, ss []string) []byte {
	if ss == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonscan.AppendString(buf, s)
	}
	return append(buf, ']')
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// on, with a one-digit negative exponent written without its leading
// zero. NaN and the infinities are json.Marshal's error.
func appendFloat(buf []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9
		if n := len(buf); n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf, nil
}
