package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Variable references in config string values.
//
//	${NAME}            the variable's value; an error if it is not set
//	${NAME:-default}   the value, or default when the variable is unset or empty
//	$$                 a literal "$"
//
// Any other "$" is kept as is, so "$HOME" and "price: 5$" are literal text
// (Claude Desktop does not expand them either). NAME is a letter or "_"
// followed by letters, digits or "_". The default is literal text: it cannot
// contain "}" or another reference.

// lookupFunc returns an environment variable's value and whether it is set.
type lookupFunc func(name string) (string, bool)

// errUnset is wrapped by expand's error for a reference to an unset variable.
var errUnset = errors.New("not set")

// varRef is one variable reference that expand replaced by the variable's
// value (not by a default, which is text from the file).
type varRef struct {
	name, value string
}

// expand resolves the variable references in s. With keepUnset, a reference
// to an unset variable stays in the result as written instead of failing;
// syntax errors still fail.
func expand(s string, lookup lookupFunc, keepUnset bool) (string, error) {
	out, _, err := expandRefs(s, lookup, keepUnset)
	return out, err
}

// expandRefs is expand that also returns the references it replaced by a
// variable's value: the values error messages must not repeat and that
// error scrubbing masks.
func expandRefs(s string, lookup lookupFunc, keepUnset bool) (string, []varRef, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var refs []varRef
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
			continue
		case '{':
		default:
			b.WriteByte('$')
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf(`unterminated variable reference %s: missing "}" (write $$ for a literal $)`, quoteShort(s[i:]))
		}
		ref := s[i : i+2+end+1]
		body := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(body, ":-")
		if !validVarName(name) {
			return "", nil, fmt.Errorf("invalid variable reference %s: want ${NAME} or ${NAME:-default} (write $$ for a literal $)", quoteShort(ref))
		}
		if hasDef && strings.Contains(def, "${") {
			return "", nil, fmt.Errorf("invalid variable reference %s: a default cannot contain another reference", quoteShort(ref))
		}
		val, ok := lookup(name)
		switch {
		case hasDef && (!ok || val == ""):
			b.WriteString(def)
		case ok:
			b.WriteString(val)
			refs = append(refs, varRef{name: name, value: val})
		case keepUnset:
			b.WriteString(ref)
		default:
			return "", nil, fmt.Errorf("environment variable %s is %w", name, errUnset)
		}
		i += len(ref)
	}
	return b.String(), refs, nil
}

// escapeDollars is expand's inverse for literal text: expanding its result
// gives s back.
func escapeDollars(s string) string {
	return strings.ReplaceAll(s, "$", "$$")
}

// validVarName reports whether name is a portable environment variable name.
func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// LookupEnv returns the value of name in environ (os.Environ's form) and
// whether it is there. A later entry for the same name wins, as with
// os/exec. Commands and the gateway take the environment as a value (no
// global state), so this is their os.LookupEnv.
func LookupEnv(environ []string, name string) (string, bool) {
	for _, kv := range slices.Backward(environ) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// environLookup indexes an environment in os.Environ form. A later entry
// for the same name wins, as with os/exec.
func environLookup(environ []string) lookupFunc {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
