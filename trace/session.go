package trace

import (
	"crypto/sha256"
	"encoding/hex"
)

// SessionRef is the form in which an MCP session id may leave the gateway
// in anything written for others to read: span attributes, audit lines,
// hook input. It is the first 16 hex digits of the id's SHA-256, or "" for
// no session.
//
// A session id is a bearer credential: whoever presents it continues the
// session, and without serve.auth_token nothing else is asked. So the full
// id is never written out; its hash still ties together every line and
// span of one session, and 64 bits keep two live sessions from sharing one.
func SessionRef(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}
