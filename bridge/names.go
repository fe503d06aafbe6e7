package bridge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf16"

	"github.com/toolbridge/toolbridge/bridge/trust"
)

// maxExposedName is the longest tool name Claude (and most clients) accept.
const maxExposedName = 64

// validExposedName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func validExposedName(name string) bool {
	if len(name) == 0 || len(name) > maxExposedName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// sanitizeName maps every byte outside [a-zA-Z0-9_-] to '_' and shortens the
// result to 64 bytes. A name that had to change gets a short hash of the
// original, so two different originals never sanitize to the same name.
func sanitizeName(name string) string {
	if validExposedName(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if isNameByte(name[i]) {
			b.WriteByte(name[i])
		} else {
			b.WriteByte('_')
		}
	}
	return withHashSuffix(b.String(), name)
}

// withHashSuffix keeps as much of name as fits in 64 bytes together with
// "_" and 8 hex digits of sha256(original). Deterministic: the same original
// always gets the same name, so clients' cached lists stay valid.
func withHashSuffix(name, original string) string {
	sum := sha256.Sum256([]byte(original))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if keep := maxExposedName - len(suffix); len(name) > keep {
		name = name[:keep]
	}
	return name + suffix
}

// exposedName is the downstream name of a tool: the bare name when no other
// server has a tool of that name, else "server__tool"; either form is
// sanitized and shortened to match ^[a-zA-Z0-9_-]{1,64}$.
func exposedName(server, tool string, collides bool) string {
	if !collides {
		return sanitizeName(tool)
	}
	qualified := server + "__" + tool
	if validExposedName(qualified) {
		return qualified
	}
	return withHashSuffix(sanitizeName(server)+"__"+strings.Map(func(r rune) rune {
		if r < 128 && isNameByte(byte(r)) {
			return r
		}
		return '_'
	}, tool), qualified)
}

// visibleSchema returns raw with invisible characters (trust.StripInvisible)
// removed from every string and key, so a schema cannot whisper to the
// model what a person reviewing it cannot see. A schema without any is
// returned as is, byte for byte; one that changes is re-encoded.
func visibleSchema(raw json.RawMessage) json.RawMessage {
	// JSON holds the characters themselves or \u escapes of them. Most
	// schemas have neither (Go's encoder escapes < and > as \u003c, so the
	// escapes are decoded, not just looked for): they cost one scan.
	if len(raw) == 0 || bytes.IndexFunc(raw, trust.IsInvisible) < 0 && !hasInvisibleEscape(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	changed := false
	v = stripValue(v, &changed)
	if !changed {
		return raw
	}
	return compactJSON(v)
}

// stripValue strips invisible characters from the strings and keys of v.
func stripValue(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		s := trust.StripInvisible(x)
		*changed = *changed || s != x
		return s
	case []any:
		for i := range x {
			x[i] = stripValue(x[i], changed)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			sk := trust.StripInvisible(k)
			*changed = *changed || sk != k
			out[sk] = stripValue(e, changed)
		}
		return out
	}
	return v
}

// hasInvisibleEscape reports whether raw, JSON text, holds a \u escape (or
// a surrogate pair of them) of an invisible character. An escaped
// backslash before the u may give a false yes, never a false no: the caller
// then decodes and finds nothing to strip.
func hasInvisibleEscape(raw []byte) bool {
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		r, ok := hex4(raw[i:])
		if !ok {
			continue
		}
		if utf16.IsSurrogate(r) && len(raw) >= i+10 && raw[i+4] == '\\' && raw[i+5] == 'u' {
			if lo, ok := hex4(raw[i+6:]); ok {
				r = utf16.DecodeRune(r, lo)
			}
		}
		if trust.IsInvisible(r) {
			return true
		}
	}
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
