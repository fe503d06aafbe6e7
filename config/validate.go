package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// DefaultHookTimeout bounds one hook run when the hook gives no timeout.
const DefaultHookTimeout = 5 * time.Second

// Hook events.
const (
	HookBefore = "before"
	HookAfter  = "after"
)

// serverName is what a server may be called: its name becomes part of tool
// names exposed to clients, which accept only these characters.
var serverName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Validate checks c as Load does after merging its sources, and returns
// every problem found, joined. Use it on a Config built or changed in code.
func (c *Config) Validate() error {
	return errors.Join(validate(c, nil)...)
}

// normalize lowercases the enum values (users write "SSE" or "On") and fills
// the per-entry defaults the doc comments promise, so every consumer sees
// the same resolved values.
func normalize(c *Config) {
	lower := func(s *string) { *s = strings.ToLower(strings.TrimSpace(*s)) }
	c.Mode = Mode(normalizeMode(string(c.Mode)))
	lower(&c.Tokenizer)
	lower(&c.Disclosure)
	lower(&c.Serve.Transport)
	lower(&c.Telemetry.Exporter)
	lower(&c.TokenStore)
	for name, s := range c.Servers {
		lower(&s.Transport)
		lower(&s.Type)
		lower(&s.Auth.Type)
		d := string(s.Defer)
		lower(&d)
		s.Defer = Defer(d)
		if s.Defer == "" {
			s.Defer = DeferAuto
		}
		c.Servers[name] = s
	}
	for i := range c.Tools {
		cl := string(c.Tools[i].Class)
		lower(&cl)
		c.Tools[i].Class = Class(cl)
	}
	tm := string(c.Trust.Mode)
	lower(&tm)
	c.Trust.Mode = TrustMode(tm)
	lower(&c.Trust.NewServers)
	lower(&c.Policy.Destructive)
	c.Serve.OAuth.Issuer = strings.TrimSpace(c.Serve.OAuth.Issuer)
	c.Serve.OAuth.Audience = strings.TrimSpace(c.Serve.OAuth.Audience)
	c.Serve.OAuth.IntrospectionURL = strings.TrimSpace(c.Serve.OAuth.IntrospectionURL)
	for i := range c.Hooks {
		h := &c.Hooks[i]
		if h.Match == "" {
			h.Match = "*"
		}
		if len(h.Events) == 0 {
			h.Events = []string{HookBefore}
		}
		for j := range h.Events {
			lower(&h.Events[j])
		}
		if h.Timeout == 0 {
			h.Timeout = DefaultHookTimeout
		}
	}
}

// validator collects problems, naming each with the source that set the key.
type validator struct {
	prov provenance
	errs []error
}

func (v *validator) fail(p keyPath, format string, args ...any) {
	v.errs = append(v.errs, &Error{Source: v.prov.sourceOf(p), Key: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// oneOf checks an enum value.
func (v *validator) oneOf(p keyPath, got string, want ...string) {
	if slices.Contains(want, got) {
		return
	}
	hint := ""
	if s := suggest(got, want); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	v.fail(p, "invalid value %s: want %s%s", quoteShort(got), orList(want), hint)
}

func (v *validator) nonNegative(p keyPath, n int64) {
	if n < 0 {
		v.fail(p, "must not be negative, got %d", n)
	}
}

func (v *validator) positive(p keyPath, n int64) {
	if n <= 0 {
		v.fail(p, "must be greater than 0, got %d", n)
	}
}

func (v *validator) positiveDuration(p keyPath, d time.Duration) {
	if d <= 0 {
		v.fail(p, "must be a positive duration such as \"30s\", got %s", d)
	}
}

func (v *validator) nonNegativeDuration(p keyPath, d time.Duration) {
	if d < 0 {
		v.fail(p, "must not be negative, got %s", d)
	}
}

// validate checks a merged, normalized config.
func validate(c *Config, prov provenance) []error {
	v := &validator{prov: prov}
	root := keyPath{}

	v.oneOf(root.key("mode"), string(c.Mode), string(ModeOn), string(ModeAuto), string(ModeOff))
	if !(c.ThresholdPct >= 0 && c.ThresholdPct <= 100) { // NaN too: classify.Decide trusts this
		v.fail(root.key("threshold_pct"), "must be between 0 and 100, got %g", c.ThresholdPct)
	}
	v.positive(root.key("context_window"), int64(c.ContextWindow))
	v.nonNegative(root.key("min_tokens"), int64(c.MinTokens))
	v.oneOf(root.key("tokenizer"), c.Tokenizer, TokenizerO200k, TokenizerEstimate)

	v.names(root.key("core_tools"), c.CoreTools)
	v.names(root.key("never_defer"), c.NeverDefer)
	v.names(root.key("deferrable_prefixes"), c.DeferrablePrefixes)
	renamed := map[string]int{}
	for i, r := range c.Tools {
		p := root.key("tools").at(i)
		v.glob(p.key("match"), r.Match)
		switch {
		case r.Class != "":
			v.oneOf(p.key("class"), string(r.Class), string(ClassCore), string(ClassDeferrable), string(ClassUnknown), string(ClassDisabled))
		case !r.Overrides():
			v.fail(p.key("class"), "missing: want core, deferrable, unknown or disabled, or an override (name, description, description_append, keywords, args, annotations)")
		}
		v.toolOverride(p, i, r, c.Servers, renamed)
	}
	tr := root.key("trust")
	v.oneOf(tr.key("mode"), string(c.Trust.Mode), string(TrustPin), string(TrustWarn), string(TrustOff))
	v.oneOf(tr.key("new_servers"), c.Trust.NewServers, NewServersTrust, NewServersQuarantine)
	v.oneOf(root.key("policy").key("destructive"), c.Policy.Destructive, DestructiveAllow, DestructiveConfirm, DestructiveDeny)

	v.oneOf(root.key("disclosure"), c.Disclosure, DisclosureBridge, DisclosureActivate)
	v.search(root.key("search"), c.Search)
	v.serve(root.key("serve"), c.Serve)
	v.access(root.key("access"), c.Access, c.Serve)

	v.nonNegativeDuration(root.key("startup_wait"), c.StartupWait)
	t := root.key("timeouts")
	v.positiveDuration(t.key("connect"), c.Timeouts.Connect)
	v.positiveDuration(t.key("call"), c.Timeouts.Call)
	r := root.key("restart")
	v.positiveDuration(r.key("initial"), c.Restart.Initial)
	v.positiveDuration(r.key("max"), c.Restart.Max)
	if c.Restart.Initial > 0 && c.Restart.Max > 0 && c.Restart.Max < c.Restart.Initial {
		v.fail(r.key("max"), "must be at least restart.initial (%s), got %s", c.Restart.Initial, c.Restart.Max)
	}
	v.positive(root.key("max_result_bytes"), c.MaxResultBytes)
	v.positive(root.key("max_tools_per_server"), int64(c.MaxToolsPerServer))

	v.redis(root.key("redis"), c.Redis)
	v.oneOf(root.key("telemetry").key("exporter"), c.Telemetry.Exporter, ExporterNone, ExporterOTLP, ExporterStdout)
	v.traceUI(root.key("telemetry").key("ui_url"), c.Telemetry.UIURL)
	if c.Telemetry.MetricsListen != "" {
		v.listen(root.key("telemetry").key("metrics_listen"), c.Telemetry.MetricsListen, c.Serve.AllowRemote)
	}
	if c.UI.Listen != "" {
		v.uiListen(root.key("ui").key("listen"), c.UI.Listen)
	}
	for i, h := range c.Hooks {
		v.hook(root.key("hooks").at(i), h)
	}

	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		hint := ""
		if strings.HasPrefix(c.StateDir, "~") {
			hint = ` ("~/" needs HOME to be set)`
		}
		v.fail(root.key("state_dir"), "must be an absolute path or start with ~/, got %s%s", quoteShort(c.StateDir), hint)
	}

	v.oneOf(root.key("token_store"), c.TokenStore, TokenStoreAuto, TokenStoreKeyring, TokenStoreFile)

	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		v.server(root.key("mcpServers").key(name), name, c.Servers[name])
	}
	return v.errs
}

// names checks a list of tool names or prefixes: an empty entry would match
// every tool.
func (v *validator) names(p keyPath, list []string) {
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			v.fail(p.at(i), "must not be empty")
		}
	}
}

// glob checks a pattern with path.Match's syntax.
func (v *validator) glob(p keyPath, pattern string) {
	if pattern == "" {
		v.fail(p, `missing: want a glob on "server::tool" such as "github::*"`)
		return
	}
	if _, err := path.Match(pattern, ""); err != nil {
		v.fail(p, "invalid glob %s: %v (use * and ? wildcards and [...] classes; escape with \\)", quoteShort(pattern), err)
	}
}

// globChars are the characters that make a match a pattern rather than
// one tool id.
const globChars = "*?[\\"

// toolOverride checks the override fields of the tool rule at p. What
// can be judged without the servers' tool lists is judged here: the
// rename's syntax and uniqueness among the rules, and that a match naming
// one server names a configured one. Whether the rule matches a tool, and
// whether a rename collides with another tool's name, is judged when the
// servers have listed (see the bridge's applyOverrides).
func (v *validator) toolOverride(p keyPath, i int, r ToolRule, servers map[string]Server, renamed map[string]int) {
	if !r.Overrides() {
		return
	}
	if r.Description != "" && r.DescriptionAppend != "" {
		v.fail(p.key("description_append"), "set description or description_append, not both")
	}
	for i, k := range r.Keywords {
		if strings.TrimSpace(k) == "" {
			v.fail(p.key("keywords").at(i), "empty keyword")
		}
	}
	for k := range r.Args {
		if strings.TrimSpace(k) == "" {
			v.fail(p.key("args"), "an argument with an empty name")
		}
	}
	server, _, ok := toolid.Split(r.Match)
	if ok && server != "" && !strings.ContainsAny(server, globChars) {
		if _, known := servers[server]; !known && len(servers) > 0 {
			names := make([]string, 0, len(servers))
			for n := range servers {
				names = append(names, n)
			}
			sort.Strings(names)
			v.fail(p.key("match"), "no server %q is configured, so this rule can match nothing%s", server, didYouMean(server, names))
		}
	}
	if r.Name == "" {
		return
	}
	switch {
	case strings.ContainsAny(r.Match, globChars) || !ok:
		v.fail(p.key("name"), "a rename names one tool: match must be one tool id such as \"github::create_issue\", not the glob %s", quoteShort(r.Match))
	case !validExposedName(r.Name):
		v.fail(p.key("name"), "%s is not a name clients accept: use 1 to 64 of a-z, A-Z, 0-9, _ and -", quoteShort(r.Name))
	case r.Name == toolid.MetaSearch || r.Name == toolid.MetaDescribe || r.Name == toolid.MetaCall:
		v.fail(p.key("name"), "%s is a toolbridge meta-tool's name; pick another", r.Name)
	default:
		if j, dup := renamed[r.Name]; dup {
			v.fail(p.key("name"), "tools[%d] already renames a tool to %s; every exposed name must be unique", j, r.Name)
		}
		renamed[r.Name] = i
	}
}

// validExposedName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$,
// what Claude and most clients accept as a tool name.
func validExposedName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// toolGlobs checks a server's allow_tools or deny_tools: globs on the
// tool's name on that server, without the server.
func (v *validator) toolGlobs(p keyPath, globs []string) {
	for i, g := range globs {
		switch {
		case strings.TrimSpace(g) == "":
			v.fail(p.at(i), `must not be empty: want a glob on the tool name such as "delete_*"`)
		case strings.Contains(g, "::"):
			v.fail(p.at(i), "invalid glob %s: give the tool name without the server (the list belongs to one server)", quoteShort(g))
		default:
			if _, err := path.Match(g, ""); err != nil {
				v.fail(p.at(i), "invalid glob %s: %v (use * and ? wildcards and [...] classes; escape with \\)", quoteShort(g), err)
			}
		}
	}
}

func (v *validator) search(p keyPath, s Search) {
	v.positive(p.key("default_limit"), int64(s.DefaultLimit))
	v.positive(p.key("max_limit"), int64(s.MaxLimit))
	if s.DefaultLimit > 0 && s.MaxLimit > 0 && s.DefaultLimit > s.MaxLimit {
		v.fail(p.key("default_limit"), "must not exceed search.max_limit (%d), got %d", s.MaxLimit, s.DefaultLimit)
	}
	v.nonNegative(p.key("hint_tokens"), int64(s.HintTokens))
	v.positive(p.key("reveal_limit"), int64(s.RevealLimit))
	v.embeddings(p.key("embeddings"), s.Embeddings)
}

// envName is what api_key_env may hold: a POSIX environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// embeddings checks search.embeddings. A URL with credentials is rejected,
// not redacted and used: the URL is shown in logs and errors (redacted),
// and a key that lives in the file is one a user would not expect to
// leak; api_key_env keeps it in the environment.
func (v *validator) embeddings(p keyPath, e Embeddings) {
	v.nonNegativeDuration(p.key("timeout"), e.Timeout)
	if !(e.Weight > 0 && e.Weight <= 1) { // NaN too
		v.fail(p.key("weight"), "must be above 0 and at most 1, got %g (to turn the rerank off, leave search.embeddings.url empty)", e.Weight)
	}
	if e.APIKeyEnv != "" && !envName.MatchString(e.APIKeyEnv) {
		// Not echoed: a value that is no variable name may be the key itself.
		v.fail(p.key("api_key_env"), "not an environment variable name (value not shown): want the name of the variable holding the key, such as \"OPENAI_API_KEY\", not the key itself")
	}
	if e.URL == "" {
		return
	}
	u, err := url.Parse(e.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		v.fail(p.key("url"), "invalid URL %s: want the API's base URL with http:// or https:// and a host, such as \"http://127.0.0.1:11434/v1\"", quoteShort(redactURL(e.URL)))
	case u.User != nil:
		v.fail(p.key("url"), "invalid URL %s: credentials in the URL would show wherever the URL does; put the key in an environment variable and name it in search.embeddings.api_key_env", quoteShort(redactURL(e.URL)))
	case u.RawQuery != "" || u.Fragment != "":
		v.fail(p.key("url"), "invalid URL %s: want the API's base URL without a query or fragment (requests go to URL + \"/embeddings\")", quoteShort(redactURL(e.URL)))
	}
	if strings.TrimSpace(e.Model) == "" {
		v.fail(p.key("model"), "missing: search.embeddings.url needs the embedding model's name, such as \"nomic-embed-text\"")
	}
}

func (v *validator) serve(p keyPath, s Serve) {
	v.oneOf(p.key("transport"), s.Transport, ServeStdio, ServeHTTP)
	v.listen(p.key("listen"), s.Listen, s.AllowRemote)
	if s.ReplicaID != "" && !validReplicaID(s.ReplicaID) {
		v.fail(p.key("replica_id"), "invalid replica id %s: want letters, digits, '.', '_', ':' or '-', at most 128, such as \"gw-1\" (empty: the host name)", quoteShort(s.ReplicaID))
	}
	for i, o := range s.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
			v.fail(p.key("allowed_origins").at(i), "invalid origin %s: want scheme://host[:port], such as \"https://app.example.com\"", quoteShort(o))
		}
	}
	for i, h := range s.AllowedHosts {
		if h != "*" && !validHostName(h) {
			v.fail(p.key("allowed_hosts").at(i), "invalid host name %s: want a name without scheme or port, such as \"toolbridge.example.com\", or \"*\" for any", quoteShort(h))
		}
	}
	v.positive(p.key("max_body_bytes"), s.MaxBodyBytes)
	v.positiveDuration(p.key("body_timeout"), s.BodyTimeout)
	v.positive(p.key("max_in_flight"), int64(s.MaxInFlight))
	v.nonNegativeDuration(p.key("shutdown_grace"), s.ShutdownGrace)
	v.nonNegativeDuration(p.key("drain_delay"), s.DrainDelay)
	v.positiveDuration(p.key("session_idle_timeout"), s.SessionIdleTimeout)
	v.positive(p.key("max_sessions"), int64(s.MaxSessions))
	v.oauth(p.key("oauth"), s)
}

// oauth checks serve.oauth: both URLs, https unless loopback, and that it
// is not combined with serve.auth_token (which would be a silent choice
// between two ways of letting callers in).
func (v *validator) oauth(p keyPath, s Serve) {
	o := s.OAuth
	if !o.Enabled() {
		return
	}
	if s.AuthToken != "" {
		v.fail(p, "serve.oauth and serve.auth_token are both set: configure one (oauth for a team, auth_token for one user)")
	}
	if s.Transport != ServeHTTP {
		v.fail(p, "needs serve.transport: http (stdio has no caller to authenticate)")
	}
	if o.Issuer == "" {
		v.fail(p.key("issuer"), `missing: want the authorization server's issuer URL, such as "https://idp.example.com"`)
	} else if err := CheckIssuerURL(o.Issuer); err != nil {
		v.fail(p.key("issuer"), "%v", err)
	}
	if o.Audience == "" {
		v.fail(p.key("audience"), `missing: want this gateway's resource URL, such as "https://gw.example.com/mcp"`)
	} else if u, err := url.Parse(o.Audience); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		v.fail(p.key("audience"), "invalid resource URL %s: want an absolute http(s) URL without a fragment (RFC 8707)", quoteShort(o.Audience))
	}
	if strings.TrimSpace(o.GroupsClaim) == "" {
		v.fail(p.key("groups_claim"), `must not be empty (default "groups")`)
	}
	for i, sc := range o.RequiredScopes {
		if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
			v.fail(p.key("required_scopes").at(i), "invalid scope %s: want a non-empty token without spaces or quotes", quoteShort(sc))
		}
	}
	v.introspection(p, o)
}

// introspection checks serve.oauth's RFC 7662 settings: the endpoint is
// reached like the issuer (https unless loopback: the answer decides who
// gets in), and it needs the client that authenticates there. The secret
// is never quoted in a message.
func (v *validator) introspection(p keyPath, o OAuth) {
	if o.IntrospectionURL == "" {
		if o.IntrospectionClientID != "" || o.IntrospectionClientSecret != "" {
			v.fail(p.key("introspection_url"), "missing: introspection_client_id and introspection_client_secret are set, but there is no endpoint to use them at")
		}
		return
	}
	if err := CheckIssuerURL(o.IntrospectionURL); err != nil {
		v.fail(p.key("introspection_url"), "%s", strings.Replace(err.Error(), "issuer", "introspection endpoint", 1))
	}
	if o.IntrospectionClientID == "" {
		v.fail(p.key("introspection_client_id"), "missing: the introspection endpoint needs the client the gateway authenticates as")
	}
	if o.IntrospectionClientSecret == "" {
		v.fail(p.key("introspection_client_secret"), "missing: want the introspection client's secret, such as ${INTROSPECTION_SECRET}")
	}
}

// CheckIssuerURL checks an OAuth issuer: an absolute URL without query or
// fragment (RFC 8414 §2), over https unless the host is loopback (a local
// IdP or a test); a token signed by an issuer reached over plain HTTP on a
// network could be forged by anyone on the path.
func CheckIssuerURL(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("invalid issuer %s: want an absolute URL without query or fragment, such as \"https://idp.example.com\"", quoteShort(issuer))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("issuer %s must use https:// (plain http:// is allowed only on a loopback host)", quoteShort(issuer))
	}
	return fmt.Errorf("invalid issuer %s: want an https:// URL", quoteShort(issuer))
}

// access checks the access rules: each selects someone and allows
// something, with valid globs, and they need serve.oauth to know who calls.
func (v *validator) access(p keyPath, rules []AccessRule, s Serve) {
	if len(rules) > 0 && !s.OAuth.Enabled() {
		v.fail(p, "needs serve.oauth: access rules select callers by their token's subject and groups")
	}
	for i, r := range rules {
		rp := p.at(i)
		if len(r.Groups) == 0 && len(r.Subjects) == 0 {
			v.fail(rp, `selects nobody: want groups: [...] or subjects: [...] (use groups: ["*"] for every caller)`)
		}
		v.names(rp.key("groups"), r.Groups)
		v.names(rp.key("subjects"), r.Subjects)
		if len(r.Allow) == 0 && len(r.Deny) == 0 {
			v.fail(rp.key("allow"), `missing: want globs on "server::tool" such as "github::*" (or deny: ["*"] to shut the callers it selects out)`)
		}
		for j, g := range r.Allow {
			v.glob(rp.key("allow").at(j), g)
		}
		for j, g := range r.Deny {
			v.glob(rp.key("deny").at(j), g)
		}
	}
}

// listen checks a host:port and that a non-loopback address is allowed.
func (v *validator) listen(p keyPath, addr string, allowRemote bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.fail(p, "invalid address %s: want host:port, such as \"127.0.0.1:8080\"", quoteShort(addr))
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail(p, "invalid port %s in %s: want a number from 0 to 65535", quoteShort(port), quoteShort(addr))
		return
	}
	if !allowRemote && !isLoopback(host) {
		what := quoteShort(host)
		if host == "" {
			what = "an empty host (every interface)"
		}
		v.fail(p, "%s is not a loopback address: set serve.allow_remote: true (or --allow-remote) to accept connections from the network, or listen on 127.0.0.1", what)
	}
}

// uiListen checks the status page's own listener: a host:port on
// loopback, always, since that listener has no bearer token.
func (v *validator) uiListen(p keyPath, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.fail(p, "invalid address %s: want a loopback host:port, such as \"127.0.0.1:7777\"", quoteShort(addr))
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail(p, "invalid port %s in %s: want a number from 0 to 65535", quoteShort(port), quoteShort(addr))
		return
	}
	if !isLoopback(host) {
		what := quoteShort(host)
		if host == "" {
			what = "an empty host (every interface)"
		}
		v.fail(p, "%s is not a loopback address: the status page's own listener serves this machine only; listen on 127.0.0.1 (to share the page, serve over HTTP, where it is at /ui/ behind serve.auth_token)", what)
	}
}

// redis checks redis.url, redis.key_prefix and redis.token_key_env. The URL is never quoted back:
// it may carry a password.
func (v *validator) redis(p keyPath, r Redis) {
	if r.KeyPrefix == "" {
		v.fail(p.key("key_prefix"), "must not be empty: every replica's keys would mix with whatever else the Redis holds (the default is %q)", DefaultRedisKeyPrefix)
	}
	switch name := r.TokenKeyEnv; {
	case !envName.MatchString(name):
		v.fail(p.key("token_key_env"), "%s is not an environment variable name (want letters, digits and _, such as %s)", quoteShort(name), DefaultTokenKeyEnv)
	case name != DefaultTokenKeyEnv && strings.HasPrefix(strings.ToUpper(name), envPrefix):
		// Every other TOOLBRIDGE_* variable is a setting or an error.
		v.fail(p.key("token_key_env"), "%s starts with %s, which names settings: use %s or a name of your own outside it", quoteShort(name), envPrefix, DefaultTokenKeyEnv)
	}
	if r.URL == "" {
		return
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		v.fail(p.key("url"), "is not a URL (want redis://host:6379, rediss://host:6379 or unix:///path)")
		return
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Host == "" {
			v.fail(p.key("url"), "%s has no host: want %s://host:6379", ShowURL(r.URL, false), u.Scheme)
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			if n, err := strconv.Atoi(db); err != nil || n < 0 {
				v.fail(p.key("url"), "%s: the path must be a database number, such as /0", ShowURL(r.URL, false))
			}
		}
	case "unix":
		if u.Path == "" {
			v.fail(p.key("url"), "unix:// needs a socket path, such as unix:///run/redis/redis.sock")
		}
	default:
		v.fail(p.key("url"), "scheme %s is not redis, rediss or unix", quoteShort(u.Scheme))
	}
}

// traceUI checks telemetry.ui_url: an http(s) base URL the status page
// can append /trace/ID to.
func (v *validator) traceUI(p keyPath, raw string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		v.fail(p, "invalid URL %s: want the trace viewer's base URL with http:// or https:// and a host, such as \"http://127.0.0.1:16686\" (Jaeger)", quoteShort(redactURL(raw)))
	case u.User != nil:
		v.fail(p, "invalid URL %s: credentials in the URL would show on the status page", quoteShort(redactURL(raw)))
	case u.RawQuery != "" || u.Fragment != "":
		v.fail(p, "invalid URL %s: want a base URL without a query or fragment (links go to URL + \"/trace/ID\")", quoteShort(redactURL(raw)))
	}
}

// isLoopback reports whether host surely refers to this machine only.
// Other host names may resolve anywhere, so they count as remote.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) hook(p keyPath, h Hook) {
	if strings.TrimSpace(h.Command) == "" {
		v.fail(p.key("command"), "missing: a hook needs a command to run")
	}
	v.glob(p.key("match"), h.Match)
	for i, e := range h.Events {
		v.oneOf(p.key("events").at(i), e, HookBefore, HookAfter)
	}
	v.nonNegativeDuration(p.key("timeout"), h.Timeout)
}

// Accepted spellings of a server's transport and Claude Code's type.
var (
	serverTransports = []string{TransportStdio, TransportStreamableHTTP, TransportSSE, "http"}
	serverTypes      = []string{"stdio", "http", "sse", TransportStreamableHTTP}
)

func (v *validator) server(p keyPath, name string, s Server) {
	switch {
	case !serverName.MatchString(name):
		v.fail(p, "invalid server name: use 1 to 64 letters, digits, \"_\" or \"-\" (it becomes part of tool names)")
	case strings.Contains(name, "__"):
		v.fail(p, "invalid server name: \"__\" separates server and tool in tool names; use a single \"_\" or \"-\"")
	}

	hasCmd, hasURL := strings.TrimSpace(s.Command) != "", s.URL != ""
	switch {
	case !hasCmd && !hasURL:
		v.fail(p, "missing command or url: give \"command\" to start a stdio server or \"url\" for a remote one")
	case hasCmd && hasURL:
		v.fail(p, "both command and url given: a server is either started (command) or remote (url), not both")
	}

	if s.Transport != "" {
		v.oneOf(p.key("transport"), s.Transport, serverTransports...)
	}
	if s.Type != "" {
		v.oneOf(p.key("type"), s.Type, serverTypes...)
	}
	tr := s.UpstreamTransport()
	if s.Transport != "" && s.Type != "" && slices.Contains(serverTransports, s.Transport) && slices.Contains(serverTypes, s.Type) {
		if (Server{Type: s.Type}).UpstreamTransport() != (Server{Transport: s.Transport}).UpstreamTransport() {
			v.fail(p.key("type"), "type %s contradicts transport %s: give one of them", quoteShort(s.Type), quoteShort(s.Transport))
		}
	}

	if hasURL && !hasCmd {
		v.remote(p, s, tr)
	}
	if hasCmd && !hasURL {
		if tr != TransportStdio && slices.Contains(serverTransports, tr) {
			key := "transport"
			if s.Transport == "" {
				key = "type"
			}
			v.fail(p.key(key), "%s needs a url; a server with a command speaks stdio", tr)
		}
		if len(s.Headers) > 0 {
			v.fail(p.key("headers"), "only remote servers (url) send headers; pass settings to a command through env")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.fail(p.key("env").key(k), "invalid environment variable name: it must be non-empty, without \"=\"")
		}
	}
	v.oneOf(p.key("defer"), string(s.Defer), string(DeferAuto), string(DeferAlways), string(DeferNever), string(DeferUnmarked))
	if !s.Auth.isZero() {
		if hasCmd && !hasURL {
			v.fail(p.key("auth"), "only remote servers (url) log in; a stdio server gets its credentials through env")
		} else {
			v.auth(p.key("auth"), s.Auth, !s.Disabled)
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") {
				// Which would win is a guess the user should not have to make.
				v.fail(p.key("headers").key(k), "give either a static Authorization header or an auth block, not both: auth sets the header itself")
			}
		}
	}
	v.toolGlobs(p.key("allow_tools"), s.AllowTools)
	v.toolGlobs(p.key("deny_tools"), s.DenyTools)
	v.nonNegative(p.key("max_tools"), int64(s.MaxTools))
	v.nonNegativeDuration(p.key("connect_timeout"), s.ConnectTimeout)
	v.nonNegativeDuration(p.key("call_timeout"), s.CallTimeout)
}

// remote checks a url server.
func (v *validator) remote(p keyPath, s Server, tr string) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(p.key("url"), "invalid URL %s: want http:// or https:// with a host", quoteShort(redactURL(s.URL)))
	}
	if tr == TransportStdio {
		key := "transport"
		if s.Transport == "" {
			key = "type"
		}
		v.fail(p.key(key), "stdio needs a command; a server with a url speaks streamable-http or sse")
	}
	if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
		v.fail(p, "args, env and cwd apply only to servers started with a command; a remote server takes headers")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if !validHeaderName(k) {
			v.fail(p.key("headers").key(k), "invalid HTTP header name")
		}
		if strings.ContainsAny(s.Headers[k], "\r\n\x00") {
			v.fail(p.key("headers").key(k), "header value must not contain line breaks or NUL")
		}
	}
}

// validHeaderName reports whether k is an HTTP token (RFC 9110).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// orList joins values as "a, b or c".
func orList(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

func (a Auth) isZero() bool {
	return a.Type == "" && a.ClientID == "" && a.ClientSecret == "" && a.ClientMetadataURL == "" &&
		len(a.Scopes) == 0 && a.RedirectPort == 0 && a.PrivateKey == "" && a.PrivateKeyFile == "" && a.SigningAlg == ""
}

// auth checks a server's auth block. Messages never quote secrets. The
// key file is read only for a server that is used (readKey): a disabled
// server may name a key that exists only where it is enabled.
func (v *validator) auth(p keyPath, a Auth, readKey bool) {
	typ := a.Type
	if typ == "" {
		typ = AuthOAuth
		if a.PrivateKey != "" || a.PrivateKeyFile != "" {
			typ = AuthClientCredentials
		}
	}
	if a.Type != "" {
		v.oneOf(p.key("type"), a.Type, AuthOAuth, AuthClientCredentials)
	}
	if a.ClientSecret != "" && a.ClientID == "" {
		v.fail(p.key("client_secret"), "needs auth.client_id: a secret belongs to a registered client")
	}
	if a.ClientMetadataURL != "" {
		u, err := url.Parse(a.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			v.fail(p.key("client_metadata_url"), "must be an https URL with a path, such as https://example.com/toolbridge-client.json, got %s", quoteShort(a.ClientMetadataURL))
		}
	}
	for i, sc := range a.Scopes {
		if strings.TrimSpace(sc) == "" || strings.ContainsAny(sc, " \t\"\\") {
			v.fail(p.key("scopes").at(i), "invalid scope %s: a scope is one word without spaces or quotes", quoteShort(sc))
		}
	}
	if a.RedirectPort < 0 || a.RedirectPort > 65535 {
		v.fail(p.key("redirect_port"), "must be a port between 1 and 65535 (or 0 for a free one), got %d", a.RedirectPort)
	}
	if a.PrivateKey != "" && a.PrivateKeyFile != "" {
		v.fail(p.key("private_key"), "give private_key or private_key_file, not both")
	}
	if a.PrivateKey != "" {
		if _, _, err := ParseSigningKey(a.PrivateKey, a.SigningAlg); err != nil {
			v.fail(p.key("private_key"), "must be a PEM private key (-----BEGIN PRIVATE KEY----- ...) that can sign signing_alg; use private_key_file for a file: %v", err)
		}
	}
	if a.PrivateKeyFile != "" && readKey {
		if pemText, err := os.ReadFile(a.PrivateKeyFile); err != nil {
			v.fail(p.key("private_key_file"), "reading the key: %v", err)
		} else if _, _, err := ParseSigningKey(string(pemText), a.SigningAlg); err != nil {
			v.fail(p.key("private_key_file"), "%s: %v", a.PrivateKeyFile, err)
		}
	}
	if a.SigningAlg != "" {
		v.oneOf(p.key("signing_alg"), a.SigningAlg, "ES256", "ES384", "RS256")
	}
	switch typ {
	case AuthClientCredentials:
		if a.ClientID == "" {
			v.fail(p.key("client_id"), "missing: client_credentials needs the client's id")
		}
		if a.ClientSecret == "" && a.PrivateKey == "" && a.PrivateKeyFile == "" {
			v.fail(p, "client_credentials needs client_secret, private_key or private_key_file")
		}
		if a.RedirectPort != 0 {
			v.fail(p.key("redirect_port"), "client_credentials has no login, so no redirect")
		}
	case AuthOAuth:
		if a.PrivateKey != "" || a.PrivateKeyFile != "" || a.SigningAlg != "" {
			v.fail(p, "private keys sign client_credentials assertions: set type: client_credentials")
		}
	}
}

// validHostName reports whether h is a DNS host name (letters, digits and
// hyphens in dot-separated labels of at most 63 characters), which is what
// serve.allowed_hosts compares with the Host header, port stripped.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// validReplicaID accepts what a Prometheus label value, a log field and
// a Redis key can all carry without quoting: a host or pod name and more.
func validReplicaID(id string) bool {
	if len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == ':', r == '-':
		default:
			return false
		}
	}
	return true
}
