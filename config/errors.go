package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is one problem found while loading or validating a config. Load
// returns every problem it finds at once, joined with errors.Join, so a user
// can fix a file in one go; errors.As finds the first *Error.
type Error struct {
	// Source is where the bad value came from: the config file's path, an
	// environment variable name ("TOOLBRIDGE_MODE") or a flag ("flag
	// --mode"). It is empty for problems found by Validate on a Config that
	// was not loaded from any source.
	Source string
	// Line and Column locate a syntax error in the file (1-based; 0 when the
	// parser does not say).
	Line, Column int
	// Key is the key path, such as "mcpServers.github.env.GITHUB_TOKEN" or
	// "tools[2].match"; empty for problems of the whole file.
	Key string
	// Msg says what is wrong and, where it can, how to fix it.
	Msg string

	// err is the underlying cause, if any, for errors.Is (fs.ErrNotExist
	// for a missing file).
	err error
}

// Unwrap returns the underlying cause, such as fs.ErrNotExist.
func (e *Error) Unwrap() error { return e.err }

// Error formats the problem as "source:line:col: key: msg", leaving out the
// parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// pathElem is one step of a key path: a map key or, when index >= 0, a list
// index.
type pathElem struct {
	key   string
	index int
}

// keyPath locates a value in the config tree. It is kept as elements rather
// than a dotted string because server names and env keys may contain dots.
type keyPath []pathElem

// key returns a new path one map key deeper; p itself is never modified, so
// sibling paths can share a prefix safely.
func (p keyPath) key(k string) keyPath {
	return append(p[:len(p):len(p)], pathElem{key: k, index: -1})
}

// at returns a new path one list index deeper.
func (p keyPath) at(i int) keyPath {
	return append(p[:len(p):len(p)], pathElem{index: i})
}

// String renders the path as users write it: dots between keys, [i] for list
// indexes, and ["a.b"] for keys that would be ambiguous with dots.
func (p keyPath) String() string {
	var b strings.Builder
	for i, e := range p {
		switch {
		case e.index >= 0:
			fmt.Fprintf(&b, "[%d]", e.index)
		case plainKey(e.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.key)
		default:
			fmt.Fprintf(&b, "[%s]", strconv.Quote(e.key))
		}
	}
	return b.String()
}

// plainKey reports whether k can be shown unquoted in a dotted path.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r == '.' || r == '[' || r == ']' || r == '"' || r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// maxShown bounds how much of a user's value an error message repeats: enough
// to recognise it, not enough to flood a terminal or spill a long secret.
const maxShown = 60

// describe names a raw config value for an error message: quoted strings,
// numbers and booleans as written, and only the kind of lists and objects.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return quoteShort(v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "an object"
	}
	if f, ok := toFloat(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	// YAML timestamps and TOML dates and times are the only other values
	// the parsers produce.
	if s, ok := v.(fmt.Stringer); ok {
		return fmt.Sprintf("the date/time %s (quote it to make it text)", s)
	}
	return fmt.Sprintf("a value of type %T", v)
}

// quoteShort quotes s for an error message, cut to maxShown runes.
func quoteShort(s string) string {
	if utf8.RuneCountInString(s) > maxShown {
		r := []rune(s)
		return strconv.Quote(string(r[:maxShown])) + "..."
	}
	return strconv.Quote(s)
}
