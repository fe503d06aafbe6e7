package oauth

import (
	"net/http"
	"strings"
)

// Challenge is what a protected resource says in the WWW-Authenticate
// header of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1).
type Challenge struct {
	// ResourceMetadata is the URL of the protected resource metadata.
	ResourceMetadata string
	// Scope is the space-separated scope the resource asks for.
	Scope string
	// Error is the OAuth error code, such as invalid_token or
	// insufficient_scope.
	Error string
}

// Scopes splits Scope.
func (c Challenge) Scopes() []string { return strings.Fields(c.Scope) }

// ParseChallenges reads the Bearer challenge of every WWW-Authenticate
// header in h; the first Bearer challenge's parameters win. It never fails:
// a malformed header gives what could be read.
func ParseChallenges(h http.Header) Challenge {
	var out Challenge
	found := false
	for _, line := range h.Values("WWW-Authenticate") {
		for _, ch := range parseAuthHeader(line) {
			if !strings.EqualFold(ch.scheme, "bearer") || found {
				continue
			}
			found = true
			out = Challenge{
				ResourceMetadata: ch.params["resource_metadata"],
				Scope:            ch.params["scope"],
				Error:            ch.params["error"],
			}
		}
	}
	return out
}

type authChallenge struct {
	scheme string
	params map[string]string
}

// parseAuthHeader parses one WWW-Authenticate value (RFC 9110 §11.6.1):
// challenges are "scheme param=value, param="quoted", ..." and a new
// challenge begins where a token is followed by a space rather than "=".
func parseAuthHeader(s string) []authChallenge {
	var out []authChallenge
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ',') {
			i++
		}
	}
	token := func() string {
		start := i
		for i < len(s) && !strings.ContainsRune(" \t,=\"", rune(s[i])) {
			i++
		}
		return s[start:i]
	}
	for {
		skip()
		if i >= len(s) {
			return out
		}
		name := token()
		if name == "" {
			i++ // a stray character; move on
			continue
		}
		if i < len(s) && s[i] == '=' {
			// A parameter (or token68) with no scheme before it: attach it
			// to the current challenge if there is one.
			val := value(s, &i)
			if len(out) > 0 {
				out[len(out)-1].params[strings.ToLower(name)] = val
			}
			continue
		}
		out = append(out, authChallenge{scheme: name, params: map[string]string{}})
	}
}

// value reads "=value" or "=\"quoted\"" at s[*i] (which is '=').
func value(s string, i *int) string {
	*i++ // '='
	for *i < len(s) && (s[*i] == ' ' || s[*i] == '\t') {
		*i++
	}
	if *i < len(s) && s[*i] == '"' {
		*i++
		var b strings.Builder
		for *i < len(s) && s[*i] != '"' {
			if s[*i] == '\\' && *i+1 < len(s) {
				*i++
			}
			b.WriteByte(s[*i])
			*i++
		}
		if *i < len(s) {
			*i++ // closing quote
		}
		return b.String()
	}
	start := *i
	for *i < len(s) && s[*i] != ',' && s[*i] != ' ' && s[*i] != '\t' {
		*i++
	}
	// token68 may end with '=' padding, which the loop above keeps.
	return s[start:*i]
}
