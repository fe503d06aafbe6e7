package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
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
