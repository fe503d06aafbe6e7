package config

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// expansion is the value ${VAR} references put at one key path of the
// config file.
type expansion struct {
	path keyPath
	refs []varRef
}

// expansions are every expansion of one Load. They serve two ends: an error
// about a key names the variable instead of repeating its value (the value
// may be a secret that happens to land in the wrong key), and a server
// remembers the values its entry took from the environment, which error
// scrubbing masks (see Server.Scrub).
type expansions []expansion

// hideValues rewrites, in place, the message of every *Error in errs about
// a key in the same entry as a key whose value came from a variable (the
// same server, or the same top-level key: an error about a server's type
// may quote its transport) so that it names the variable, ${NAME}, where
// it would show the value.
func (ex expansions) hideValues(errs []error) {
	if len(ex) == 0 {
		return
	}
	for _, err := range errs {
		var e *Error
		if !errors.As(err, &e) || e.Key == "" {
			continue
		}
		for _, x := range ex {
			p, entry := x.path.String(), x.entry()
			if entry != e.Key && !isUnder(e.Key, entry) && !isUnder(entry, e.Key) {
				continue
			}
			var names []string
			for _, r := range x.refs {
				name := "${" + r.name + "}"
				e.Msg = hideValue(e.Msg, r.value, name)
				if !strings.Contains(e.Msg, name) && !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
			if len(names) > 0 && p == e.Key {
				// Shown masked, or not at all: say where it came from.
				e.Msg += " (the value comes from " + strings.Join(names, ", ") + ")"
			}
		}
	}
}

// hideValue replaces in msg the forms in which an error message shows value
// (as is, trimmed, lowercased, quoted with escapes, URL-escaped, cut to
// maxShown runes)
// by name. A form shorter than 4 bytes is replaced only where it stands
// quoted on its own ("x"), so that a one-letter value does not mangle the
// words around it.
func hideValue(msg, value, name string) string {
	var forms []string
	for _, v := range []string{value, strings.TrimSpace(value)} {
		if utf8.RuneCountInString(v) > maxShown {
			v = string([]rune(v)[:maxShown])
		}
		q := strconv.Quote(v)
		forms = append(forms, v, q[1:len(q)-1], url.PathEscape(v), url.QueryEscape(v))
	}
	// Longest first: a form inside a longer one must not cut it apart.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range slices.Compact(forms) {
		switch {
		case f == "":
		case len(f) >= 4:
			msg = replaceFold(msg, f, name)
		default:
			msg = replaceFold(msg, `"`+f+`"`, `"`+name+`"`)
		}
	}
	return msg
}

// replaceFold replaces every occurrence of old in s, compared without
// regard to case (validation lowercases some values before it shows them),
// by repl.
func replaceFold(s, old, repl string) string {
	if len(old) == 0 || len(old) > len(s) {
		return s
	}
	var b strings.Builder
	i := 0
	for j := 0; j+len(old) <= len(s); {
		if strings.EqualFold(s[j:j+len(old)], old) {
			b.WriteString(s[i:j])
			b.WriteString(repl)
			j += len(old)
			i = j
			continue
		}
		j++
	}
	if i == 0 {
		return s
	}
	b.WriteString(s[i:])
	return b.String()
}

// entry is the path of the config entry x lies in: mcpServers.NAME for a
// server's keys, else the top-level key.
func (x expansion) entry() string {
	if len(x.path) >= 2 && x.path[0].key == "mcpServers" {
		return x.path[:2].String()
	}
	return x.path[:min(len(x.path), 1)].String()
}

// attach records in each server the values its entry took from the
// environment, for Server.Scrub.
func (ex expansions) attach(c *Config) {
	for _, x := range ex {
		if len(x.path) < 2 || x.path[0].key != "mcpServers" || x.path[1].index >= 0 {
			continue
		}
		name := x.path[1].key
		s, ok := c.Servers[name]
		if !ok {
			continue
		}
		for _, r := range x.refs {
			if !slices.Contains(s.referenced, r.value) {
				s.referenced = append(s.referenced, r.value)
			}
		}
		c.Servers[name] = s
	}
}
