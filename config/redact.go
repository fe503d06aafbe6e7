package config

import (
	"fmt"
	"maps"
	"net"
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
		s.URL = ShowURL(s.URL, c.ShowFullURLs)
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
	if r.Serve.OAuth.IntrospectionClientSecret != "" {
		r.Serve.OAuth.IntrospectionClientSecret = Mask
	}
	r.Search.Embeddings.URL = ShowURL(r.Search.Embeddings.URL, c.ShowFullURLs)
	r.Redis.URL = ShowURL(r.Redis.URL, c.ShowFullURLs)
	for i := range r.Hooks {
		redactArgs(r.Hooks[i].Args)
	}
	for i := range r.Tools {
		// A fixed argument with a secret-looking name (api_key: ${KEY})
		// is masked; strings that are URLs lose their secrets.
		for k, v := range r.Tools[i].Args {
			switch s, isString := v.(string); {
			case secretName(k):
				r.Tools[i].Args[k] = Mask
			case isString && strings.Contains(s, "://"):
				r.Tools[i].Args[k] = redactURL(s)
			}
		}
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
		s.referenced = slices.Clone(s.referenced)
		r.Servers[name] = s
	}
	if c.Servers == nil {
		r.Servers = nil
	}
	r.CoreTools = slices.Clone(c.CoreTools)
	r.NeverDefer = slices.Clone(c.NeverDefer)
	r.DeferrablePrefixes = slices.Clone(c.DeferrablePrefixes)
	r.Tools = slices.Clone(c.Tools)
	for i := range r.Tools {
		r.Tools[i].Keywords = slices.Clone(r.Tools[i].Keywords)
		r.Tools[i].Args = maps.Clone(r.Tools[i].Args)
		if a := r.Tools[i].Annotations; a != nil {
			cp := *a
			r.Tools[i].Annotations = &cp
		}
	}
	r.Serve.AllowedOrigins = slices.Clone(c.Serve.AllowedOrigins)
	r.Serve.AllowedHosts = slices.Clone(c.Serve.AllowedHosts)
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

// RedactURL returns raw as toolbridge shows a URL by default (see
// ShowURL): scheme://host:port, the path with every segment but common
// endpoint words masked, and every query and fragment value masked.
// Every place that shows an upstream's URL (logs, /readyz, errors, spans,
// the audit log, config check) shows this, or ShowURL's full form when
// the user set show_full_urls.
func RedactURL(raw string) string { return ShowURL(raw, false) }

// RedactURLs masks, with RedactURL, every URL in text.
func RedactURLs(text string) string { return ShowURLs(text, false) }

// ShowURL is the one place that decides how a URL is shown.
//
// By default (full false) it shows only where the URL points and its shape:
// the scheme, host and port (the scheme's default port written out), "****@"
// for user info, the path with each segment masked unless it is a common
// endpoint word (mcp, sse, messages, api, v1, ...: see plainSegments), and
// the query and fragment with every value masked and the names kept. Paths
// and unlisted parameters carry secrets too (https://host/sk-SECRET/mcp,
// ?hmac=SECRET), and no list of parameter names can know them all.
//
// With full (the config key show_full_urls) it shows the URL as written,
// except its credentials: user info and the values of parameters whose
// names look secret (key, api_key, token, auth, sig, signature, secret,
// password..., in any case) stay masked.
//
// A URL that does not parse is masked whole: it cannot be told apart from
// a secret.
func ShowURL(raw string, full bool) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Opaque != "" && strings.Contains(u.Opaque, "@")) {
		return Mask
	}
	if full {
		return credentialsMasked(u, strings.HasSuffix(raw, "#"))
	}
	out := showMasked(u, raw)
	// An odd URL ("a://::") may not come out as one that shows the same
	// way again: it is masked whole rather than shown in a form a reader
	// (or the next redaction) takes for something else.
	if again, err := url.Parse(out); out != Mask && (err != nil || showMasked(again, out) != out) {
		return Mask
	}
	return out
}

// showMasked is ShowURL's default form of u, parsed from raw.
func showMasked(u *url.URL, raw string) string {
	if u.Opaque != "" || u.Scheme == "" {
		// Not a URL with a host ("host:port", "a path"): nothing in it
		// can be told apart from a secret.
		return Mask
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(Mask + "@")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" && host != "" {
		port = defaultPorts[strings.ToLower(u.Scheme)]
	}
	switch {
	case port != "":
		b.WriteString(net.JoinHostPort(host, port))
	case strings.Contains(host, ":"):
		b.WriteString("[" + host + "]")
	default:
		b.WriteString(host)
	}
	b.WriteString(maskPath(u.EscapedPath()))
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + maskParams(u.RawQuery, allValues))
	}
	if u.Fragment != "" || u.RawFragment != "" || strings.HasSuffix(raw, "#") {
		b.WriteString("#" + maskParams(u.EscapedFragment(), allValues))
	}
	return b.String()
}

// defaultPorts are the ports ShowURL writes out for a URL that gives none.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}

// plainSegments are the path segments ShowURL shows by default: the words
// MCP and API endpoints are commonly made of, which tell a reader which
// endpoint it is and cannot be anybody's secret. Any other segment is
// masked.
var plainSegments = regexp.MustCompile(`^(?i:mcp|sse|message|messages|stream|events|api|apis|rpc|jsonrpc|http|embeddings|openai|traces|metrics|logs|ui|v[0-9]{1,2})$`)

// maskPath masks every segment of an escaped path but the plain ones.
func maskPath(p string) string {
	if p == "" {
		return ""
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if seg != "" && !plainSegments.MatchString(seg) {
			segs[i] = Mask
		}
	}
	return strings.Join(segs, "/")
}

// ShowURLs shows, with ShowURL, every URL in text.
func ShowURLs(text string, full bool) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlInText.ReplaceAllStringFunc(text, func(m string) string {
		// A log line that quotes an error quoting a URL escapes the
		// closing quote (Post \"http://...\"): the backslash belongs to
		// the line, not to the URL, which would show it as %5C or mask it
		// away and leave the line's quotes unbalanced.
		//
		// Punctuation that ends a sentence or a clause ("at
		// http://host/mcp; connecting") belongs to the line too: kept in
		// the URL it made "mcp;" a segment to mask and ate the ";".
		u := strings.TrimRight(m, `\.,;:!?)]}`)
		return ShowURL(u, full) + m[len(u):]
	})
}

// urlInText finds URLs in free text, such as a transport error that quotes
// the URL it failed on ("Post \"https://...\": dial tcp ...").
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>\x60]+`)

// redactURL is RedactURL, for this package's messages.
func redactURL(raw string) string { return ShowURL(raw, false) }

// credentialsMasked is the show_full_urls form of u: its user info and its
// secret-looking query and fragment values masked, the rest as written.
func credentialsMasked(u *url.URL, emptyFrag bool) string {
	hasUser := u.User != nil
	u.User = nil
	u.RawQuery = maskParams(u.RawQuery, secretName)
	frag := maskParams(u.EscapedFragment(), secretName)
	hasFrag := u.Fragment != "" || u.RawFragment != "" || emptyFrag
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

// allValues masks the value of every parameter.
func allValues(string) bool { return true }

// maskParams masks the values of the parameters whose names secret
// reports, in a "k=v&k2=v2" string, keeping the order and encoding of
// everything else. A part without "=" is a value alone: it is masked
// whenever secret says every value is.
func maskParams(q string, secret func(name string) bool) string {
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
		switch {
		case ok && secret(name):
			parts[i] = k + "=" + Mask
		case !ok && part != "" && secret(""):
			parts[i] = Mask
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
// server s carries: the values of its env and headers whose names look
// secret (TOKEN, KEY, SECRET, PASSWORD, AUTH...), every value its entry
// took from a ${VAR} reference, its auth client secret and private key,
// and the secrets of its URL (user info, query values, path segments that
// ShowURL masks). Errors from transports quote URLs and sometimes echo
// headers; they must not carry secrets to logs or to the model. Other
// values are left alone: masking every env value would mangle ordinary
// text (a server named like one of its env values would show as ****).
//
// Every URL in text is shown with ShowURL, whatever server it names and
// however the transport rewrote it (Go's errors print "user:***@"); the
// secrets of s's own URL are also masked wherever they appear on their own,
// so that an echo in another encoding does not carry them out either.
func (s Server) Scrub(text string) string {
	return s.maskValues(ShowURLs(text, s.fullURLs))
}

// ScrubResult is Scrub for the text of a tool's error result, which the
// upstream wrote: it masks the same secrets of s, but shows the URLs in
// the text with only their credentials masked (ShowURL's full form). A
// URL a fetch tool failed on is the model's business, not an upstream
// URL; s's own URL still loses its path and query secrets, which are
// masked wherever they appear.
func (s Server) ScrubResult(text string) string {
	return s.maskValues(ShowURLs(text, true))
}

// maskValues masks s's secret values in text.
func (s Server) maskValues(text string) string {
	var values []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for k, v := range m {
			if secretName(k) {
				values = append(values, v)
			}
		}
	}
	values = append(values, s.referenced...)
	values = append(values, s.Auth.ClientSecret, s.Auth.PrivateKey)
	for _, v := range urlSecrets(s.URL, s.fullURLs) {
		values = append(values, v)
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		// Very short values ("1", "true") are not secrets worth masking,
		// and masking them would mangle ordinary text.
		if len(v) >= 6 {
			text = strings.ReplaceAll(text, v, Mask)
		}
	}
	return text
}

// urlSecrets returns the secrets in raw, as written and decoded: its
// userinfo's user and password, and the values of its secret-looking query
// and fragment parameters; unless full, also every other query and
// fragment value and the path segments ShowURL masks.
func urlSecrets(raw string, full bool) map[string]string {
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
			if !ok && !full && part != "" {
				k, v, ok = "bare "+part, part, true
			}
			if name, err := url.QueryUnescape(k); ok && err == nil && (!full || secretName(name)) {
				out["raw "+k] = v
				if dec, err := url.QueryUnescape(v); err == nil {
					out["decoded "+k] = dec
				}
			}
		}
	}
	if !full {
		for i, seg := range strings.Split(u.EscapedPath(), "/") {
			// Short segments are words, not secrets; masking them would
			// mangle text.
			if len(seg) >= 8 && !plainSegments.MatchString(seg) {
				out[fmt.Sprintf("raw path %d", i)] = seg
				if dec, err := url.PathUnescape(seg); err == nil {
					out[fmt.Sprintf("decoded path %d", i)] = dec
				}
			}
		}
	}
	return out
}
