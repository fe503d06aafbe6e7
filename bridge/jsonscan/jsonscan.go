// Package jsonscan reads JSON documents in place, without a decoder (the
// members of an object as slices of the document, a value's end, a plain
// string), and writes strings as encoding/json does. It is for the gateway's hot paths (a tools/call's envelope and
// arguments, an upstream's answer), where encoding/json's reflection and
// copies were most of what reading a message cost (#25). Every function
// but String expects a document that json.Valid has accepted.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Members calls each with the key and value of every member of obj, a
// JSON object from a valid document, until each returns false; it reports
// false then, or when obj is not an object or has a key with escapes or
// bytes beyond ASCII.
func Members(obj []byte, each func(key, value []byte) bool) bool {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = SkipSpace(obj, i+1)
	if obj[i] == '}' {
		return true
	}
	for {
		key, next, ok := PlainKey(obj, i)
		if !ok {
			return false
		}
		i = SkipSpace(obj, next)
		end := SkipValue(obj, i)
		if !each(key, obj[i:end]) {
			return false
		}
		i = SkipSpace(obj, end)
		if obj[i] == '}' {
			return true
		}
		i = SkipSpace(obj, i+1) // after the comma
	}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// SkipValue returns the index just past the JSON value that starts at i,
// in a document known to be valid.
func SkipValue(raw []byte, i int) int {
	depth := 0
	for ; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			for i++; raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// PlainKey reads the member key starting at raw[i] (its opening quote) of
// a valid document, and returns it (the bytes between its quotes, which
// callers compare as string(key), a conversion that allocates nothing)
// and the index after its colon; ok is false for a key with escapes or
// bytes beyond ASCII.
func PlainKey(raw []byte, i int) (key []byte, next int, ok bool) {
	end := i + 1
	for raw[end] != '"' {
		if raw[end] == '\\' || raw[end] >= 0x80 {
			return nil, 0, false
		}
		end++
	}
	return raw[i+1 : end], SkipSpace(raw, end+1) + 1, true
}

// String decodes a JSON string of a valid document: as is when it has
// no escapes and is valid UTF-8, through json.Unmarshal when it has
// escapes; ok is false for invalid UTF-8, which encoding/json replaces.
func String(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		if !utf8.Valid(inner) {
			return "", false
		}
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", false
	}
	return s, true
}

// AppendString appends s as json.Marshal writes a string (escaping HTML
// characters, U+2028 and U+2029, and writing invalid UTF-8 as U+FFFD), in
// place: the text of an answer nearly always has a newline or a character
// beyond ASCII, and json.Marshal of it allocated a copy of the whole text
// (the answer's largest part) and the quoted string besides (#25).
// FuzzAppendString holds it to json.Marshal.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '\\', '"':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default: // other control characters, and <, > and &
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

const hexDigits = "0123456789abcdef"
