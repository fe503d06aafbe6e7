package demo

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxStringBytes bounds every string argument, so no tool does unbounded
// work on a huge input. Individual tools may bound tighter.
const maxStringBytes = 1 << 20

// maxListItems bounds every array argument.
const maxListItems = 10000

// maxSafeInteger is the largest integer a JSON number (an IEEE double)
// carries exactly: 2^53.
const maxSafeInteger = 1 << 53

// args is a tool call's arguments with strict, typed accessors whose errors
// name the argument and say what was wrong.
type args struct {
	m map[string]any
}

// newArgs checks that raw is a JSON object (or absent) whose keys are all
// declared properties.
func newArgs(raw any, known []string) (args, error) {
	var m map[string]any
	switch v := raw.(type) {
	case nil:
		m = map[string]any{}
	case map[string]any:
		m = v
	case json.RawMessage:
		if err := json.Unmarshal(v, &m); err != nil || m == nil {
			return args{}, fmt.Errorf("arguments must be a JSON object")
		}
	default:
		return args{}, fmt.Errorf("arguments must be a JSON object, got %s", jsonType(raw))
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(known) == 0 {
			return args{}, fmt.Errorf("unknown argument %q: this tool takes no arguments", unknown[0])
		}
		return args{}, fmt.Errorf("unknown argument %q (valid arguments: %s)", unknown[0], strings.Join(known, ", "))
	}
	return args{m: m}, nil
}

// has reports whether key was given (a JSON null counts as not given).
func (a args) has(key string) bool {
	v, ok := a.m[key]
	return ok && v != nil
}

// str returns the required string argument key.
func (a args) str(key string) (string, error) {
	if !a.has(key) {
		return "", missing(key)
	}
	return a.toStr(key)
}

// optStr returns the string argument key, or def when it is absent.
func (a args) optStr(key, def string) (string, error) {
	if !a.has(key) {
		return def, nil
	}
	return a.toStr(key)
}

func (a args) toStr(key string) (string, error) {
	s, ok := a.m[key].(string)
	if !ok {
		return "", wrongType(key, "a string", a.m[key])
	}
	if len(s) > maxStringBytes {
		return "", fmt.Errorf("argument %q is too long: %d bytes, the limit is %d", key, len(s), maxStringBytes)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("argument %q is not valid UTF-8", key)
	}
	return s, nil
}

// nonEmpty returns the required string argument key, which must contain
// something besides whitespace.
func (a args) nonEmpty(key string) (string, error) {
	s, err := a.str(key)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("argument %q must not be empty", key)
	}
	return s, nil
}

// enum returns the string argument key, which must be one of allowed. When
// def is empty the argument is required; otherwise def is the default.
func (a args) enum(key, def string, allowed ...string) (string, error) {
	var (
		s   string
		err error
	)
	if def == "" {
		s, err = a.str(key)
	} else {
		s, err = a.optStr(key, def)
	}
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", fmt.Errorf("argument %q must be one of %s, got %q", key, strings.Join(allowed, ", "), s)
	}
	return s, nil
}

// number returns the required finite number argument key.
func (a args) number(key string) (float64, error) {
	if !a.has(key) {
		return 0, missing(key)
	}
	return a.toNumber(key)
}

// optNumber returns the number argument key, or def when it is absent.
func (a args) optNumber(key string, def float64) (float64, error) {
	if !a.has(key) {
		return def, nil
	}
	return a.toNumber(key)
}

func (a args) toNumber(key string) (float64, error) {
	f, ok := asFloat(a.m[key])
	if !ok {
		return 0, wrongType(key, "a number", a.m[key])
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("argument %q must be a finite number", key)
	}
	return f, nil
}

// integer returns the required integer argument key, within [lo, hi].
func (a args) integer(key string, lo, hi int64) (int64, error) {
	if !a.has(key) {
		return 0, missing(key)
	}
	return a.toInteger(key, lo, hi)
}

// optInteger returns the integer argument key within [lo, hi], or def when
// it is absent.
func (a args) optInteger(key string, def, lo, hi int64) (int64, error) {
	if !a.has(key) {
		return def, nil
	}
	return a.toInteger(key, lo, hi)
}

func (a args) toInteger(key string, lo, hi int64) (int64, error) {
	f, ok := asFloat(a.m[key])
	if !ok {
		return 0, wrongType(key, "an integer", a.m[key])
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("argument %q must be an integer, got %v", key, f)
	}
	if f < float64(lo) || f > float64(hi) {
		return 0, fmt.Errorf("argument %q must be between %d and %d, got %v", key, lo, hi, f)
	}
	return int64(f), nil
}

// optBool returns the boolean argument key, or def when it is absent.
func (a args) optBool(key string, def bool) (bool, error) {
	if !a.has(key) {
		return def, nil
	}
	b, ok := a.m[key].(bool)
	if !ok {
		return false, wrongType(key, "a boolean", a.m[key])
	}
	return b, nil
}

// list returns the array argument key with at most maxItems elements, or nil
// when it is absent and not required.
func (a args) list(key string, required bool, maxItems int) ([]any, error) {
	if !a.has(key) {
		if required {
			return nil, missing(key)
		}
		return nil, nil
	}
	l, ok := a.m[key].([]any)
	if !ok {
		return nil, wrongType(key, "an array", a.m[key])
	}
	if len(l) > maxItems {
		return nil, fmt.Errorf("argument %q has %d items, the limit is %d", key, len(l), maxItems)
	}
	return l, nil
}

// strList returns the array-of-strings argument key.
func (a args) strList(key string, required bool, maxItems int) ([]string, error) {
	l, err := a.list(key, required, maxItems)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l))
	for i, v := range l {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("argument %q: item %d must be a string, got %s", key, i, jsonType(v))
		}
		out = append(out, s)
	}
	return out, nil
}

// numList returns the array-of-numbers argument key.
func (a args) numList(key string, required bool, maxItems int) ([]float64, error) {
	l, err := a.list(key, required, maxItems)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, len(l))
	for i, v := range l {
		f, ok := asFloat(v)
		if !ok {
			return nil, fmt.Errorf("argument %q: item %d must be a number, got %s", key, i, jsonType(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("argument %q: item %d must be a finite number", key, i)
		}
		out = append(out, f)
	}
	return out, nil
}

// asFloat accepts the number types a decoded or in-process argument may
// have. Numeric strings are not numbers: a schema-following client never
// sends them, and accepting them would hide client bugs.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func missing(key string) error {
	return fmt.Errorf("missing required argument %q", key)
}

func wrongType(key, want string, got any) error {
	return fmt.Errorf("argument %q must be %s, got %s", key, want, jsonType(got))
}

// jsonType names v's JSON type for error messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if _, ok := asFloat(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
