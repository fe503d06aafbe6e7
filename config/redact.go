package config

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Mask replaces a secret in Redacted's copy. It keeps nothing of the secret,
// not even its length.
const Mask = "****"

// Redacted returns a deep copy of c that is safe to print: every server env
// value and header value, serve.auth_token, the userinfo of URLs and the
// values of URL query parameters whose names look secret (token, key,
// secret, password, auth...) are replaced by Mask. Arguments of servers and
// hooks get the same treatment where they recognisably carry a secret:
// URLs, NAME=value and "Name: value" pairs with a secret-looking name, and
// the value after a secret-looking flag such as --api-key.
func (c *Config) Redacted() *Config {
	if c == nil {
		return nil
	}
	r := c.clone()
	for name, s := range r.Servers {
		for k := range s.Env {
			s.Env[k] = Mask
		}
		for k := range s.Headers {
			s.Headers[k] = Mask
		}
		s.URL = redactURL(s.URL)
		if s.Auth.ClientSecret != "" {
			s.Auth.ClientSecret = Mask
		}
		if s.Auth.PrivateKey != "" {
			s.Auth.PrivateKey = Mask
		}
		redactArgs(s.Args)
		r.Servers[name] = s
	}
	if r.Serve.AuthToken != "" {
		r.Serve.AuthToken = Mask
	}
	r.Search.Embeddings.URL = redactURL(r.Search.Embeddings.URL)
	for i := range r.Hooks {
		redactArgs(r.Hooks[i].Args)
	}
	return r
}

// clone returns a deep copy of c.
func (c *Config) clone() *Config {
	r := *c
	r.Servers = make(map[string]Server, len(c.Servers))
	for name, s := range c.Servers {
		s.Args = slices.Clone(s.Args)
		s.Env = maps.Clone(s.Env)
		s.Headers = maps.Clone(s.Headers)
		s.Auth.Scopes = slices.Clone(s.Auth.Scopes)
		r.Servers[name] = s
	}
	if c.Servers == nil {
		r.Servers = nil
	}
	r.CoreTools = slices.Clone(c.CoreTools)
	r.NeverDefer = slices.Clone(c.NeverDefer)
	r.DeferrablePrefixes = slices.Clone(c.DeferrablePrefixes)
	r.Tools = slices.Clone(c.Tools)
	r.Serve.AllowedOrigins = slices.Clone(c.Serve.AllowedOrigins)
	r.Hooks = slices.Clone(c.Hooks)
	for i := range r.Hooks {
		r.Hooks[i].Args = slices.Clone(r.Hooks[i].Args)
		r.Hooks[i].Events = slices.Clone(r.Hooks[i].Events)
	}
	return &r
}

// secretWords mark a parameter, variable or flag name as holding a secret.
var secretWords = []string{"token", "key", "secret", "password", "passwd", "pwd", "auth", "credential", "signature", "cookie", "session"}

// secretParts are the short names that mark a secret only when they stand
// alone or between separators ("sig", "x-amz-sig"): as substrings they
// would match ordinary words ("signal", "compass").
var secretParts = []string{"sig", "pass", "pw", "jwt"}

// secretName reports whether a name looks like it holds a secret.
func secretName(name string) bool {
	name = strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if slices.Contains(secretParts, part) {
			return true
		}
	}
	return false
}

// RedactURL returns raw with its credentials masked: the userinfo
// (user:password@) and the values of query and fragment parameters whose
// names look secret (key, api_key, apikey, token, access_token, auth, sig,
// signature, secret, password..., in any case). A URL that does not parse
// is masked whole. Every place that shows an upstream's URL (logs,
// /readyz, errors, spans, the audit log, config check) shows this.
func RedactURL(raw string) string { return redactURL(raw) }

// urlInText finds URLs in free text, such as a transport error that quotes
// the URL it failed on ("Post \"https://...\": dial tcp ...").
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>\x60]+`)

// RedactURLs masks, with RedactURL, every URL in text.
func RedactURLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlInText.ReplaceAllStringFunc(text, func(m string) string {
		// A log line that quotes an error quoting a URL escapes the
		// closing quote (Post \"http://...\"): the backslash belongs to
		// the line, not to the URL, which would show it as %5C or mask it
		// away and leave the line's quotes unbalanced.
		u := strings.TrimRight(m, `\`)
		return redactURL(u) + m[len(u):]
	})
}

// redactURL masks a URL's userinfo and its secret-looking query and
// fragment parameters. A URL that does not parse is masked whole: it cannot
// be told apart from a secret.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Opaque != "" && strings.Contains(u.Opaque, "@")) {
		return Mask
	}
	hasUser := u.User != nil
	u.User = nil
	u.RawQuery = redactParams(u.RawQuery)
	frag := redactParams(u.EscapedFragment())
	hasFrag := u.Fragment != "" || u.RawFragment != "" || strings.HasSuffix(raw, "#")
	u.Fragment, u.RawFragment = "", ""
	s := u.String()
	if hasUser {
		if i := strings.Index(s, "//"); i >= 0 {
			s = s[:i+2] + Mask + "@" + s[i+2:]
		} else {
			return Mask
		}
	}
	if hasFrag {
		s += "#" + frag
	}
	return s
}

// redactParams masks the values of secret-looking parameters in a
// "k=v&k2=v2" string, keeping the order and encoding of everything else.
func redactParams(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, part := range parts {
		k, _, ok := strings.Cut(part, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if ok && secretName(name) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// redactArgs masks, in place, the secrets command-line arguments
// recognisably carry.
func redactArgs(args []string) {
	secretNext := false
	for i, a := range args {
		if secretNext {
			args[i] = Mask
			secretNext = false
			continue
		}
		args[i] = redactArg(a)
		// "--api-key VALUE": the flag's value is the next argument.
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && secretName(strings.TrimLeft(a, "-")) {
			secretNext = true
		}
	}
}

// redactArg masks the secret in one argument, if it recognisably has one.
func redactArg(a string) string {
	// NAME=value, --name=value: masked by name, or a URL value is redacted.
	if k, v, ok := strings.Cut(a, "="); ok && !strings.ContainsAny(k, "/?&#:") {
		if secretName(strings.TrimLeft(k, "-")) {
			return k + "=" + Mask
		}
		if strings.Contains(v, "://") {
			return k + "=" + redactURL(v)
		}
		return a
	}
	// "Authorization: Bearer ...", as passed to mcp-remote --header.
	if k, _, ok := strings.Cut(a, ": "); ok && validHeaderName(k) && secretName(k) {
		return k + ": " + Mask
	}
	if strings.Contains(a, "://") {
		return redactURL(a)
	}
	return a
}

// Scrub masks in text (an error message, a log line) every secret that
// server s carries: the values of its env and headers, its auth client
// secret and private key, and its URL's user info and secret-looking query
// parameters. Errors from transports quote
// URLs and sometimes echo headers; they must not carry secrets to logs or
// to the model.
//
// Every URL in text is redacted (RedactURLs), whatever server it names and
// however the transport rewrote it (Go's errors print "user:***@"); the
// secrets of s's own URL are also masked wherever they appear on their own,
// so that an echo in another encoding does not carry them out either.
func (s Server) Scrub(text string) string {
	text = RedactURLs(text)
	auth := map[string]string{"client_secret": s.Auth.ClientSecret, "private_key": s.Auth.PrivateKey}
	for _, values := range []map[string]string{s.Env, s.Headers, urlSecrets(s.URL), auth} {
		for _, v := range values {
			// Very short values ("1", "true") are not secrets worth masking,
			// and masking them would mangle ordinary text.
			if len(v) >= 6 {
				text = strings.ReplaceAll(text, v, Mask)
			}
		}
	}
	return text
}

// urlSecrets returns the credentials in raw: its userinfo's user and
// password, and the values of its secret-looking query and fragment
// parameters, as written and decoded.
func urlSecrets(raw string) map[string]string {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	if u.User != nil {
		// A user alone is a token (https://TOKEN@host); beside a password
		// it is a name, which would mangle text wherever it appears.
		if p, ok := u.User.Password(); ok {
			out["password"] = p
		} else {
			out["user"] = u.User.Username()
		}
	}
	for _, q := range []string{u.RawQuery, u.EscapedFragment()} {
		for part := range strings.SplitSeq(q, "&") {
			k, v, ok := strings.Cut(part, "=")
			if name, err := url.QueryUnescape(k); ok && err == nil && secretName(name) {
				out["raw "+k] = v
				if dec, err := url.QueryUnescape(v); err == nil {
					out["decoded "+k] = dec
				}
			}
		}
	}
	return out
}
