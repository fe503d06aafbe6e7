// Package config loads and validates toolbridge's configuration.
//
// Sources are merged in this order, each overriding the one before:
// built-in defaults < config file (YAML, JSON or TOML, chosen by extension) <
// environment variables TOOLBRIDGE_* < command-line flags.
//
// The file may be a Claude Desktop / Claude Code config as is: its
// "mcpServers" object is toolbridge's server list. The doc comments of the
// types below are the user-facing reference of every key.
package config

import (
	"os"
	"time"
)

// Mode says when toolbridge switches to bridge mode.
type Mode string

// The activation modes.
const (
	// ModeAuto bridges when the deferrable tools' schemas reach the threshold.
	ModeAuto Mode = "auto"
	// ModeOn bridges whenever at least one tool is deferrable.
	ModeOn Mode = "on"
	// ModeOff serves every upstream tool directly (pass-through).
	ModeOff Mode = "off"
)

// Defer is a server's deferral policy.
type Defer string

// The per-server deferral policies.
const (
	// DeferAuto marks the server's tools deferrable (the MCP-origin marker);
	// they are deferred when the activation decision says bridge.
	DeferAuto Defer = "auto"
	// DeferAlways defers the server's tools whenever bridge mode is on.
	DeferAlways Defer = "always"
	// DeferNever makes every tool of the server core: always visible.
	DeferNever Defer = "never"
	// DeferUnmarked leaves the tools unmarked (class unknown, visible).
	DeferUnmarked Defer = "unmarked"
)

// Class is a tool's classification.
type Class string

// The tool classes.
const (
	// ClassCore tools are always visible with their full schema.
	ClassCore Class = "core"
	// ClassDeferrable tools are loaded on demand in bridge mode.
	ClassDeferrable Class = "deferrable"
	// ClassUnknown tools matched no rule; they stay visible.
	ClassUnknown Class = "unknown"
	// ClassDisabled tools are removed: not listed, not searchable, and a
	// call gets an error naming the rule. A tools rule or a server's
	// allow_tools / deny_tools gives it.
	ClassDisabled Class = "disabled"
)

// TrustMode says what toolbridge does with pinned tool definitions.
type TrustMode string

// The trust modes.
const (
	// TrustPin pins each tool's definition on first sight and quarantines
	// a tool whose definition later changes, until it is approved with
	// "toolbridge trust approve".
	TrustPin TrustMode = "pin"
	// TrustWarn pins like TrustPin but only logs a change (and records it
	// in spans and the audit log); the changed tool stays usable.
	TrustWarn TrustMode = "warn"
	// TrustOff neither pins nor quarantines anything.
	TrustOff TrustMode = "off"
)

// What to do with the tools of a server that has no pins yet.
const (
	// NewServersTrust pins a new server's tools on first sight (trust on
	// first use) and logs it.
	NewServersTrust = "trust"
	// NewServersQuarantine holds a new server's tools until they are
	// approved with "toolbridge trust approve --server NAME".
	NewServersQuarantine = "quarantine"
)

// Policies for destructive tools (see Policy.Destructive).
const (
	// DestructiveAllow runs destructive tools like any other.
	DestructiveAllow = "allow"
	// DestructiveConfirm asks the user through MCP elicitation before each
	// call of a destructive tool, and denies the call when the client
	// cannot ask.
	DestructiveConfirm = "confirm"
	// DestructiveDeny refuses every call of a destructive tool.
	DestructiveDeny = "deny"
)

// Upstream transports.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Downstream transports.
const (
	ServeStdio = "stdio"
	ServeHTTP  = "http"
)

// Disclosure policies for tools found by tool_search.
const (
	// DisclosureBridge never changes the client's tool list (keeps prompt
	// caches intact); deferred tools are reached through tool_call.
	DisclosureBridge = "bridge"
	// DisclosureActivate adds every tool returned by tool_search to that
	// session's tool list and notifies the client.
	DisclosureActivate = "activate"
)

// Tokenizers for token accounting.
const (
	// TokenizerO200k is the o200k_base BPE encoding, counted offline.
	TokenizerO200k = "o200k_base"
	// TokenizerEstimate counts len(JSON)/4: a fallback, not an exact figure.
	TokenizerEstimate = "estimate"
)

// Telemetry exporters.
const (
	ExporterNone   = "none"
	ExporterOTLP   = "otlp"
	ExporterStdout = "stdout"
)

// Config is toolbridge's whole configuration.
type Config struct {
	// Servers are the upstream MCP servers, by name. The key is
	// "mcpServers", as in Claude Desktop's claude_desktop_config.json.
	// A name must match ^[a-zA-Z0-9_-]{1,64}$ and must not contain "__".
	Servers map[string]Server `koanf:"mcpServers" json:"mcpServers"`
	// serverOrder is the order the config file lists Servers in (see
	// ServerNames).
	serverOrder []string `json:"-"`

	// Mode is on, auto or off (default auto). The booleans true/yes/1 and
	// false/no/0 are accepted as on and off.
	Mode Mode `koanf:"mode" json:"mode"`
	// ThresholdPct: in auto mode, bridge when the deferrable tools' schemas
	// take at least this percentage of ContextWindow (default 10; 0 means
	// always bridge).
	ThresholdPct float64 `koanf:"threshold_pct" json:"threshold_pct"`
	// ContextWindow is the model's context window in tokens (default 200000).
	ContextWindow int `koanf:"context_window" json:"context_window"`
	// MinTokens, when above 0, also bridges once the deferrable tools'
	// schemas reach this many tokens, whatever the percentage.
	MinTokens int `koanf:"min_tokens" json:"min_tokens"`
	// Tokenizer is o200k_base (default) or estimate (chars/4).
	Tokenizer string `koanf:"tokenizer" json:"tokenizer"`

	// CoreTools replaces the built-in set of core tool names (see
	// DefaultCoreTools). An empty list means no name is core by itself.
	CoreTools []string `koanf:"core_tools" json:"core_tools"`
	// NeverDefer adds tool names to the core set.
	NeverDefer []string `koanf:"never_defer" json:"never_defer"`
	// DeferrablePrefixes mark a tool deferrable by its name (default ["mcp_"]).
	DeferrablePrefixes []string `koanf:"deferrable_prefixes" json:"deferrable_prefixes"`
	// Tools are per-tool rules; the first whose glob matches a tool's
	// canonical id "server::tool" decides its class, before any other rule
	// but the server's allow_tools and deny_tools. Class disabled removes
	// the tool altogether.
	Tools []ToolRule `koanf:"tools" json:"tools"`

	// Trust says how far upstream tool definitions are trusted: pinning,
	// quarantine of changed or new tools, suspicious descriptions.
	Trust Trust `koanf:"trust" json:"trust"`
	// Policy decides over calls by what the tools say they do.
	Policy Policy `koanf:"policy" json:"policy"`

	// Disclosure is bridge (default) or activate; see DisclosureBridge.
	Disclosure string `koanf:"disclosure" json:"disclosure"`
	// Search tunes tool_search.
	Search Search `koanf:"search" json:"search"`

	// Serve is the downstream side: how clients reach toolbridge.
	Serve Serve `koanf:"serve" json:"serve"`
	// Timeouts for upstream servers; a server may override them.
	Timeouts Timeouts `koanf:"timeouts" json:"timeouts"`
	// StartupWait is how long the first tools/list waits for servers that
	// are still connecting (default 5s; 0 answers at once with what is
	// up). initialize never waits: it is answered at once. When the wait
	// ends, tools/list answers with the servers that are up; the others
	// join the catalog as they come up, and clients get list_changed.
	//
	// Why 5s: every server we measured is up well within it when its
	// command is installed (the 13 reference servers over stdio in about
	// 150 ms, a warm npx start in one to two seconds), so a normal start
	// lists everything at once; a hung server, or an npx that is still
	// downloading its package (tens of seconds), holds the first list back
	// by 5 s instead of the whole connect timeout (30s), which is longer
	// than some hosts wait for a list before they give up on the server.
	StartupWait time.Duration `koanf:"startup_wait" json:"startup_wait"`
	// Restart is the backoff for upstream servers that die.
	Restart Restart `koanf:"restart" json:"restart"`
	// MaxResultBytes bounds one upstream result (default 10 MiB).
	MaxResultBytes int64 `koanf:"max_result_bytes" json:"max_result_bytes"`
	// MaxToolsPerServer bounds how many tools one server may add to the
	// catalog (default 2000; a server may set its own max_tools). A server
	// that lists more keeps the first MaxToolsPerServer in the order it
	// sent them; the rest are never decoded, counted, indexed or pinned,
	// and toolbridge says so once on stderr and in /readyz (tools_dropped).
	//
	// Why 2000: the largest single servers we know list a few hundred
	// tools (GitHub's about 100, servers generated from big APIs some
	// hundreds), so 2000 leaves room for several times that, while a
	// server listing 100000 (measured: 1.3 GB RSS, a 56 MB pin file, 22 s
	// before the first tools/list) is held to what a gateway carries
	// easily: the gateway keeps about 5 KB per tool (catalog, token
	// counts, index, pins; BenchmarkOneServerPastTheToolBound in package
	// bridge), so about 10 MB for 2000, and about 60 MB RSS in all.
	MaxToolsPerServer int `koanf:"max_tools_per_server" json:"max_tools_per_server"`

	// Redis is where replicas share state, for a team that runs several
	// gateways behind a load balancer. With no redis.url (the default)
	// nothing is shared and nothing changes: one gateway on a laptop needs
	// no Redis.
	Redis Redis `koanf:"redis" json:"redis"`

	// Telemetry configures OpenTelemetry traces and metrics.
	Telemetry Telemetry `koanf:"telemetry" json:"telemetry"`
	// UI configures the status page.
	UI UI `koanf:"ui" json:"ui"`
	// Hooks run around every tool call, in order.
	Hooks []Hook `koanf:"hooks" json:"hooks"`
	// Access rules say which tools each caller may see and call; they need
	// serve.oauth (who is calling). First match wins; with rules present, a
	// caller no rule selects sees no tools.
	Access []AccessRule `koanf:"access" json:"access,omitempty"`
	// Audit writes one JSON line per tool call.
	Audit Audit `koanf:"audit" json:"audit"`

	// StateDir is where toolbridge keeps what it must remember between
	// runs: OAuth tokens when no OS keyring is available, pinned tool
	// definitions. Default $XDG_STATE_HOME/toolbridge, else
	// ~/.local/state/toolbridge. A leading "~/" is the home directory;
	// otherwise the path must be absolute. Files are created 0600 and
	// directories 0700.
	StateDir string `koanf:"state_dir" json:"state_dir"`
	// TokenStore is where OAuth tokens are kept: auto (default: the OS
	// keyring when one answers, else a 0600 file under state_dir), keyring
	// or file.
	TokenStore string `koanf:"token_store" json:"token_store"`
	// ShowFullURLs shows upstream URLs as written in logs, /readyz, errors
	// sent to clients, spans, the audit log and config check. By default
	// (false) a URL shows only as scheme://host:port, its path with every
	// segment but common endpoint words (mcp, sse, api, v1...) masked, and
	// every query value masked, because paths
	// (https://host/sk-SECRET/mcp) and parameters of any name (?hmac=...)
	// carry secrets. Even when true, user info (user:password@) and the
	// values of parameters whose names look secret (token, key, sig,
	// secret, password, auth...) stay masked. Env TOOLBRIDGE_SHOW_FULL_URLS.
	ShowFullURLs bool `koanf:"show_full_urls" json:"show_full_urls"`
}

// DefaultRedisKeyPrefix is redis.key_prefix's default.
const DefaultRedisKeyPrefix = "toolbridge:"

// Token stores.
const (
	TokenStoreAuto    = "auto"
	TokenStoreKeyring = "keyring"
	TokenStoreFile    = "file"
)

// Server is one upstream MCP server. Give either Command (stdio) or URL.
type Server struct {
	// Command starts a stdio server; Args are its arguments.
	Command string   `koanf:"command" json:"command,omitempty"`
	Args    []string `koanf:"args" json:"args,omitempty"`
	// Env is added to the child's environment; values may use ${VAR}.
	Env map[string]string `koanf:"env" json:"env,omitempty"`
	// Cwd is the child's working directory (default: toolbridge's).
	Cwd string `koanf:"cwd" json:"cwd,omitempty"`

	// URL of a remote server.
	URL string `koanf:"url" json:"url,omitempty"`
	// Transport is streamable-http (default for a URL) or sse; stdio for a
	// command. Claude Code's "type" key (stdio, http, sse) is accepted too.
	Transport string `koanf:"transport" json:"transport,omitempty"`
	Type      string `koanf:"type" json:"type,omitempty"`
	// Headers are sent with every HTTP request; values may use ${VAR}.
	Headers map[string]string `koanf:"headers" json:"headers,omitempty"`

	// Defer is auto (default), always, never or unmarked; see Defer.
	Defer Defer `koanf:"defer" json:"defer,omitempty"`
	// Disabled servers are not started.
	Disabled bool `koanf:"disabled" json:"disabled,omitempty"`
	// Description is a one-line purpose shown in tool_search's catalog hint
	// (default: the server's own instructions or name).
	Description string `koanf:"description" json:"description,omitempty"`

	// AllowTools, when not empty, keeps only the server's tools whose name
	// (without the server) matches one of these globs; DenyTools removes
	// the tools whose name matches one of its globs, and wins over
	// AllowTools. Removed tools get class disabled.
	AllowTools []string `koanf:"allow_tools" json:"allow_tools,omitempty"`
	DenyTools  []string `koanf:"deny_tools" json:"deny_tools,omitempty"`

	// MaxTools overrides max_tools_per_server for this server (0: the
	// global bound).
	MaxTools int `koanf:"max_tools" json:"max_tools,omitempty"`

	// ConnectTimeout and CallTimeout override Timeouts for this server.
	ConnectTimeout time.Duration `koanf:"connect_timeout" json:"connect_timeout,omitempty"`
	CallTimeout    time.Duration `koanf:"call_timeout" json:"call_timeout,omitempty"`

	// Auth is how toolbridge gets a token for a remote server (OAuth 2.1,
	// the MCP authorization spec). Without it, OAuth still applies when the
	// server answers 401 with a Bearer challenge: run
	// `toolbridge auth login NAME` once.
	Auth Auth `koanf:"auth" json:"auth,omitzero"`

	// referenced are the values that ${VAR} references put into this
	// server's entry (Load fills it in): the values Scrub masks besides
	// the ones whose names look secret.
	referenced []string `json:"-"`
	// fullURLs is the config's ShowFullURLs, for Scrub.
	fullURLs bool `json:"-"`
}

// Auth types.
const (
	// AuthOAuth logs a person in with the authorization code grant.
	AuthOAuth = "oauth"
	// AuthClientCredentials gets tokens for a machine with the client
	// credentials grant, without a login.
	AuthClientCredentials = "client_credentials"
)

// Auth is a remote server's OAuth settings. Every field may use ${VAR};
// `config check` masks client_secret and private_key.
type Auth struct {
	// Type is oauth or client_credentials (default oauth when any other
	// field is set).
	Type string `koanf:"type" json:"type,omitempty"`
	// ClientID and ClientSecret are a client registered at the
	// authorization server. Without them toolbridge uses
	// client_metadata_url where the server supports client ID metadata
	// documents, else dynamic client registration. client_credentials
	// needs client_id and a secret or a private key.
	ClientID     string `koanf:"client_id" json:"client_id,omitempty"`
	ClientSecret string `koanf:"client_secret" json:"client_secret,omitempty"`
	// ClientMetadataURL is an https URL serving toolbridge's client ID
	// metadata document, used as client_id where the server allows.
	ClientMetadataURL string `koanf:"client_metadata_url" json:"client_metadata_url,omitempty"`
	// Scopes to ask for (default: the ones the server names in its 401,
	// else its scopes_supported, else none).
	Scopes []string `koanf:"scopes" json:"scopes,omitempty"`
	// RedirectPort is the 127.0.0.1 port `auth login` takes the redirect
	// on (default: a free one). Set it when the client registered at the
	// server names a fixed redirect URI.
	RedirectPort int `koanf:"redirect_port" json:"redirect_port,omitempty"`
	// PrivateKey (PEM text) or PrivateKeyFile signs private_key_jwt client
	// assertions for client_credentials; SigningAlg is ES256, ES384 or
	// RS256 (default: from the key).
	PrivateKey     string `koanf:"private_key" json:"private_key,omitempty"`
	PrivateKeyFile string `koanf:"private_key_file" json:"private_key_file,omitempty"`
	SigningAlg     string `koanf:"signing_alg" json:"signing_alg,omitempty"`
}

// AuthType is the server's resolved auth type: "" when auth is not
// configured, else oauth or client_credentials.
func (s Server) AuthType() string {
	a := s.Auth
	if a.Type != "" {
		return a.Type
	}
	if a.ClientID != "" || a.ClientSecret != "" || a.ClientMetadataURL != "" || len(a.Scopes) > 0 || a.RedirectPort != 0 {
		return AuthOAuth
	}
	return ""
}

// ToolRule classifies the tools whose canonical id matches a glob, and
// overrides what the model sees of them. The canonical id and the pinned
// definition stay the upstream's: an override changes the model's view
// only (see docs/configuration.md, "Tool rules and overrides").
type ToolRule struct {
	// Match is a glob on "server::tool" (* and ? wildcards, [..] classes).
	Match string `koanf:"match" json:"match"`
	// Class is core, deferrable, unknown or disabled; empty leaves the
	// class to the other rules (a rule must set a class or an override).
	Class Class `koanf:"class" json:"class,omitempty"`

	// Name renames the one tool the rule matches: the name clients list
	// and call it by. It must match ^[a-zA-Z0-9_-]{1,64}$.
	Name string `koanf:"name" json:"name,omitempty"`
	// Description replaces the tool's description.
	Description string `koanf:"description" json:"description,omitempty"`
	// DescriptionAppend is added to the end of the tool's description.
	DescriptionAppend string `koanf:"description_append" json:"description_append,omitempty"`
	// Keywords are extra search terms, indexed like the description.
	Keywords []string `koanf:"keywords" json:"keywords,omitempty"`
	// Args are fixed arguments: removed from the input schema the model
	// sees (and from its required list), injected into every call; a call
	// that sends one of them is refused.
	Args map[string]any `koanf:"args" json:"args,omitempty"`
	// Annotations override the tool's MCP annotations (they feed
	// policy.destructive and tool_search's filters).
	Annotations *ToolAnnotations `koanf:"annotations" json:"annotations,omitempty"`
}

// Overrides reports whether the rule changes what the model sees of a
// tool, beyond its class.
func (r ToolRule) Overrides() bool {
	return r.Name != "" || r.Description != "" || r.DescriptionAppend != "" || len(r.Keywords) > 0 ||
		len(r.Args) > 0 || r.Annotations != nil
}

// ToolAnnotations are the MCP tool annotations an override may set; unset
// ones keep the upstream's value.
type ToolAnnotations struct {
	Title           string `koanf:"title" json:"title,omitempty"`
	ReadOnlyHint    *bool  `koanf:"readOnlyHint" json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `koanf:"destructiveHint" json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `koanf:"idempotentHint" json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `koanf:"openWorldHint" json:"openWorldHint,omitempty"`
}

// Trust says how toolbridge trusts upstream tool definitions. Each tool's
// definition (name, title, description, input and output schema,
// annotations) is pinned per server in the state directory; see the
// "toolbridge trust" commands. In a file, "trust: warn" is short for
// "trust: {mode: warn}".
type Trust struct {
	// Mode is pin (default), warn or off; see TrustMode.
	Mode TrustMode `koanf:"mode" json:"mode"`
	// NewServers is trust (default) or quarantine: whether the tools of a
	// server without pins are pinned on first sight or held until approved.
	NewServers string `koanf:"new_servers" json:"new_servers"`
	// BlockSuspicious quarantines tools whose description looks like
	// instructions to the model (hidden <IMPORTANT> tags, "ignore previous
	// instructions", requests for SSH keys, invisible Unicode, ...) until
	// they are approved. Off by default: such tools are flagged in
	// "toolbridge tools" and "toolbridge trust list" only.
	BlockSuspicious bool `koanf:"block_suspicious" json:"block_suspicious"`
}

// Policy decides over tool calls by the tools' annotations.
type Policy struct {
	// Destructive is allow (default), confirm or deny for tools that may
	// make destructive changes: those not marked readOnlyHint and not
	// marked destructiveHint false (the MCP default counts a tool without
	// annotations as destructive).
	Destructive string `koanf:"destructive" json:"destructive"`
}

// Search tunes tool_search.
type Search struct {
	// DefaultLimit is the number of hits when the caller gives none (default 5).
	DefaultLimit int `koanf:"default_limit" json:"default_limit"`
	// MaxLimit caps the caller's limit (default 20).
	MaxLimit int `koanf:"max_limit" json:"max_limit"`
	// HintTokens is the budget of the catalog hint in tool_search's
	// description (default 1000).
	HintTokens int `koanf:"hint_tokens" json:"hint_tokens"`
	// RevealLimit bounds the tools revealed to one session with disclosure
	// activate (default 64; the oldest go first).
	RevealLimit int `koanf:"reveal_limit" json:"reveal_limit"`
	// Embeddings turns on the optional semantic rerank of tool_search
	// through an OpenAI-compatible embeddings endpoint (off unless its URL
	// is set).
	Embeddings Embeddings `koanf:"embeddings" json:"embeddings"`
}

// Embeddings configures the semantic rerank of tool_search: tools and
// queries are embedded by an OpenAI-compatible endpoint (Ollama, TEI,
// vLLM, LM Studio, OpenAI) and the cosine similarity is fused with the
// lexical ranking. Any failure of the endpoint falls back to the lexical
// ranking.
type Embeddings struct {
	// URL is the API's base URL, such as "http://127.0.0.1:11434/v1"
	// (Ollama); requests go to URL + "/embeddings". Empty (the default)
	// turns the rerank off. It must not carry credentials: use APIKeyEnv.
	URL string `koanf:"url" json:"url"`
	// Model is the embedding model's name as the endpoint knows it, such
	// as "nomic-embed-text"; required with URL.
	Model string `koanf:"model" json:"model"`
	// Timeout bounds the embedding of one query (default 2s): past it,
	// tool_search answers with the lexical ranking.
	Timeout time.Duration `koanf:"timeout" json:"timeout"`
	// APIKeyEnv names the environment variable holding the endpoint's
	// bearer key, if it needs one. The key itself is never in the config.
	APIKeyEnv string `koanf:"api_key_env" json:"api_key_env"`
	// Weight is the semantic ranking's share of the fused score for a
	// request of seven terms or more (a shorter one gets terms/7 of it),
	// above 0 and at most 1 (default DefaultEmbeddingsWeight).
	Weight float64 `koanf:"weight" json:"weight"`
}

// Enabled reports whether the semantic rerank is configured.
func (e Embeddings) Enabled() bool { return e.URL != "" }

// DefaultEmbeddingsTimeout bounds one query's embedding request. A warm
// local model embeds a short query in tens of milliseconds (USE-lite
// through the test server: about 10 ms); 2s leaves room for a busy
// machine or a remote API, and keeps a hung endpoint from holding a
// search for longer than an agent would notice.
const DefaultEmbeddingsTimeout = 2 * time.Second

// DefaultEmbeddingsWeight is the semantic share of the fused score for a
// request of seven terms or more (a shorter one gets terms/7 of it): the
// weight that, with USE-lite, gained most on the tuning halves of BFCL
// and MetaTool while keeping keyword queries' Recall@1 at 0.953, costing
// no set Recall@5 and multi-step requests at most 0.01 of all-in-top-10
// (bridge/search/semantic's harness; README, Semantic rerank). Higher
// weights gained more on MetaTool and lost keyword and multi-step
// rankings.
const DefaultEmbeddingsWeight = 0.3

// Serve is the downstream side.
type Serve struct {
	// Transport is stdio (default) or http (streamable HTTP at /mcp).
	Transport string `koanf:"transport" json:"transport"`
	// Listen is the HTTP address (default 127.0.0.1:8080).
	Listen string `koanf:"listen" json:"listen"`
	// AllowRemote must be true to listen on anything but loopback.
	AllowRemote bool `koanf:"allow_remote" json:"allow_remote"`
	// AuthToken, if set, is required as "Authorization: Bearer <token>".
	AuthToken string `koanf:"auth_token" json:"auth_token,omitempty"`
	// AllowedOrigins are accepted in the Origin header besides loopback ones.
	AllowedOrigins []string `koanf:"allowed_origins" json:"allowed_origins"`
	// AllowedHosts are host names accepted in the Host header besides
	// localhost and IP addresses, such as the name a load balancer or
	// DNS gives the gateway; "*" accepts any. Any other name is refused,
	// on every endpoint but /healthz: a web page that rebinds its own
	// name to the gateway's address (DNS rebinding) must not read it.
	AllowedHosts []string `koanf:"allowed_hosts" json:"allowed_hosts"`
	// MaxBodyBytes bounds one message from a client (default 4 MiB): an
	// HTTP request body, or a line on stdin. A longer one gets a JSON-RPC
	// error and is never held in memory.
	MaxBodyBytes int64 `koanf:"max_body_bytes" json:"max_body_bytes"`
	// BodyTimeout bounds the time a client may take to send one HTTP
	// request body, counted from the end of its headers (default 30s). A
	// slower one gets 408 and its connection is closed, so clients that
	// drip a body cannot hold connections open.
	BodyTimeout time.Duration `koanf:"body_timeout" json:"body_timeout"`
	// MaxInFlight bounds concurrent calls per session (default 64).
	MaxInFlight int `koanf:"max_in_flight" json:"max_in_flight"`
	// ShutdownGrace is how long in-flight calls may finish on SIGTERM or
	// SIGINT, or after a stdio client closes stdin (default 10s); then
	// they are answered with an error saying they were cut.
	ShutdownGrace time.Duration `koanf:"shutdown_grace" json:"shutdown_grace"`
	// DrainDelay is how long an HTTP gateway keeps serving after SIGTERM
	// with /readyz answering 503 (default 5s), before it stops accepting
	// connections and shutdown_grace begins: a load balancer that checks
	// /readyz (HAProxy, a Kubernetes Service) takes the replica out of
	// rotation first, so no new request meets a closed port. Set it above
	// the balancer's check interval times its fall count. SIGINT (Ctrl-C
	// at a terminal) and stdio skip it; 0 turns it off.
	DrainDelay time.Duration `koanf:"drain_delay" json:"drain_delay"`
	// SessionIdleTimeout ends an HTTP session that has had no request for
	// this long (default 30m); its client gets 404 and initializes again.
	// With redis.url it is the session's TTL in Redis.
	SessionIdleTimeout time.Duration `koanf:"session_idle_timeout" json:"session_idle_timeout"`
	// MaxSessions bounds the HTTP sessions held at once (default 1024).
	// Opening one more ends the least recently used idle one.
	// With redis.url it bounds the sessions of all replicas together.
	MaxSessions int `koanf:"max_sessions" json:"max_sessions"`
	// OAuth makes the HTTP transport an OAuth 2.1 protected resource: every
	// request needs an access token (a JWT) from Issuer naming Audience.
	// It excludes AuthToken: configure one or the other.
	OAuth OAuth `koanf:"oauth" json:"oauth"`
	// ReplicaID names this replica where replicas are told apart: the
	// replica label of toolbridge_replica_info on /metrics. Empty (the
	// default) means the host name, which is the pod's name under
	// Kubernetes; set it where host names repeat (several replicas on one
	// host). Letters, digits, '.', '_', ':' and '-', at most 128.
	ReplicaID string `koanf:"replica_id" json:"replica_id,omitempty"`
}

// OAuth configures the gateway as an OAuth 2.1 protected resource (MCP
// authorization; RFC 9728 metadata, RFC 8707 audience).
type OAuth struct {
	// Issuer is the authorization server's issuer URL; its RFC 8414 or
	// OpenID Connect metadata names the JWKS that signs access tokens. It
	// must be https://, except on a loopback host.
	Issuer string `koanf:"issuer" json:"issuer"`
	// Audience is this gateway's resource URL (such as
	// https://gw.example.com/mcp): a token's aud must contain it, so a
	// token minted for any other resource is refused.
	Audience string `koanf:"audience" json:"audience"`
	// GroupsClaim is the claim holding the caller's groups or roles
	// (default "groups"); access rules select on them.
	GroupsClaim string `koanf:"groups_claim" json:"groups_claim"`
	// RequiredScopes must all be in the token's scope; a token without
	// one gets 403 insufficient_scope.
	RequiredScopes []string `koanf:"required_scopes" json:"required_scopes,omitempty"`
	// IntrospectionURL, if set, is the issuer's RFC 7662 token
	// introspection endpoint: an access token that is not a JWT (an
	// opaque token) is checked there, and accepted only when the answer
	// says active, names this gateway's audience in aud, has a sub, and is
	// not expired. Answers are cached by the token's SHA-256 for at most a
	// minute and never past the token's exp. Without it, only JWT access
	// tokens are accepted. It must be https://, except on a loopback host.
	IntrospectionURL string `koanf:"introspection_url" json:"introspection_url,omitempty"`
	// IntrospectionClientID and IntrospectionClientSecret authenticate the
	// gateway at the introspection endpoint (client_secret_basic). Give the
	// secret as ${VAR} from the environment (a Kubernetes Secret, say):
	// `config check` masks it, and it never reaches a log, error or span.
	IntrospectionClientID     string `koanf:"introspection_client_id" json:"introspection_client_id,omitempty"`
	IntrospectionClientSecret string `koanf:"introspection_client_secret" json:"introspection_client_secret,omitempty"`
}

// Enabled reports whether OAuth is configured.
func (o OAuth) Enabled() bool { return o.Issuer != "" || o.Audience != "" }

// AccessRule says what the callers it selects may see and call. Rules are
// tried in order and the first whose selector matches the caller decides;
// with rules present, a caller no rule selects gets nothing.
type AccessRule struct {
	// Groups selects callers in any of these groups (serve.oauth.groups_claim).
	Groups []string `koanf:"groups" json:"groups,omitempty"`
	// Subjects selects callers whose token subject (sub) is one of these.
	Subjects []string `koanf:"subjects" json:"subjects,omitempty"`
	// Allow are globs on "server::tool" that the caller may see and call.
	Allow []string `koanf:"allow" json:"allow,omitempty"`
	// Deny are globs on "server::tool" taken out of Allow.
	Deny []string `koanf:"deny" json:"deny,omitempty"`
}

// Timeouts for upstream servers.
type Timeouts struct {
	// Connect bounds starting and initializing one server (default 30s).
	Connect time.Duration `koanf:"connect" json:"connect"`
	// Call bounds one tool call (default 60s).
	Call time.Duration `koanf:"call" json:"call"`
}

// Restart is the backoff for upstream servers that die.
type Restart struct {
	// Initial is the first delay (default 500ms); it doubles up to Max
	// (default 30s).
	Initial time.Duration `koanf:"initial" json:"initial"`
	Max     time.Duration `koanf:"max" json:"max"`
}

// Telemetry configures OpenTelemetry.
type Telemetry struct {
	// Exporter is none (default), otlp or stdout. otlp honours the standard
	// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL
	// (grpc or http/protobuf) variables; OTEL_SERVICE_NAME defaults to
	// toolbridge.
	Exporter string `koanf:"exporter" json:"exporter"`
	// RecordContent adds queries, arguments and results to spans. Off by
	// default: they may hold personal data.
	RecordContent bool `koanf:"record_content" json:"record_content"`
	// UIURL is the base URL of the trace viewer that shows these traces,
	// such as Jaeger's "http://127.0.0.1:16686". When set, the status page
	// links each call and search to its trace at UIURL/trace/ID.
	UIURL string `koanf:"ui_url" json:"ui_url,omitempty"`
	// Prometheus serves the operator metrics (calls, errors and latency by
	// server and tool, searches, sessions, upstream state, Redis health,
	// replica) in the Prometheus format at GET /metrics. On by default:
	// over HTTP they are on the main listener behind the same checks as
	// /mcp unless MetricsListen is set; in stdio mode only MetricsListen
	// serves them. Independent of Exporter.
	Prometheus bool `koanf:"prometheus" json:"prometheus"`
	// MetricsListen serves /metrics on a listener of its own at this
	// host:port (such as ":9464" in a container, with serve.allow_remote),
	// without a token, and not on the main one. This is the setup for a
	// team: Prometheus scrapes each replica's metrics port directly, the
	// port is not routed through the load balancer, and neither a user's
	// OAuth token nor the clients' serve.auth_token is handed to the
	// scraper. With serve.oauth it is the only place metrics are served.
	// A non-loopback address needs serve.allow_remote.
	MetricsListen string `koanf:"metrics_listen" json:"metrics_listen,omitempty"`
}

// UI is the status page: a read-only web page that shows the servers, the
// bridge decision, the tools and the recent calls and searches. Over the
// HTTP transport it is always at /ui/, behind the same checks as /mcp.
type UI struct {
	// Listen, in stdio mode, opens the page on its own listener at this
	// host:port, such as "127.0.0.1:7777": a stdio gateway is started by
	// its client and has no other address a browser could reach. It must
	// be a loopback address, since it has no bearer token: only this
	// machine may see the page. Empty (the default) opens nothing.
	Listen string `koanf:"listen" json:"listen,omitempty"`
}

// Redis configures the state that replicas share (see package bridge/state).
type Redis struct {
	// URL is the Redis (or Valkey) server: redis://[user:password@]host:port[/db],
	// rediss:// for TLS, or unix:///path/to/socket. Empty (the default)
	// shares nothing. Env TOOLBRIDGE_REDIS__URL. The password is a secret:
	// logs, errors, /readyz and config check show the URL with it masked.
	URL string `koanf:"url" json:"url,omitempty"`
	// KeyPrefix starts every key and pub/sub channel toolbridge uses
	// (default "toolbridge:"), so that several gateways, or a gateway and
	// other programs, can share one Redis without reading each other's
	// state. Replicas that serve the same team must use the same prefix.
	KeyPrefix string `koanf:"key_prefix" json:"key_prefix"`
	// TokenKeyEnv names the environment variable that holds the key the
	// upstream OAuth tokens are encrypted with in Redis (AES-256-GCM):
	// 32 random bytes in base64, as "openssl rand -base64 32" prints.
	// Several keys separated by commas rotate it: the first encrypts,
	// every one decrypts. Default TOOLBRIDGE_TOKEN_KEY. With redis.url
	// set, a server with an auth block cannot start without it; the key
	// itself is never read from the config file, logged or passed to
	// stdio servers.
	TokenKeyEnv string `koanf:"token_key_env" json:"token_key_env"`
}

// DefaultTokenKeyEnv is redis.token_key_env's default.
const DefaultTokenKeyEnv = "TOOLBRIDGE_TOKEN_KEY"

// Enabled reports whether replicas share state through Redis.
func (r Redis) Enabled() bool { return r.URL != "" }

// Hook runs a command around matching tool calls. The call arrives as JSON
// on stdin; exit 0 allows, exit 2 denies with stderr as the reason, any other
// exit is logged and allows.
type Hook struct {
	// Match is a glob on "server::tool" (default "*").
	Match string `koanf:"match" json:"match"`
	// Command and Args run the hook.
	Command string   `koanf:"command" json:"command"`
	Args    []string `koanf:"args" json:"args,omitempty"`
	// Events are before and/or after (default before).
	Events []string `koanf:"events" json:"events,omitempty"`
	// Timeout bounds one run (default 5s).
	Timeout time.Duration `koanf:"timeout" json:"timeout"`
}

// Audit writes one JSON line per tool call.
type Audit struct {
	// File is the path to append to; empty disables the audit log.
	File string `koanf:"file" json:"file"`
}

// DefaultCoreTools are the everyday agent tools a model must never have to
// search for: file operations, shell, web, scheduling, memory and clarify.
func DefaultCoreTools() []string {
	return []string{
		"read_file", "write_file", "edit_file", "list_files", "list_directory",
		"get_file_info", "copy_file", "move_file", "delete_file", "search_files",
		"execute_command", "bash", "run_command", "list_processes", "kill_process",
		"get_system_info",
		"web_search", "search_web", "internet_search", "web_fetch", "fetch",
		"web_crawl", "crawl_web",
		"schedule_add", "schedule_list", "schedule_remove",
		"store_memory", "search_memory",
		"clarify", "ask_user",
	}
}

// Default returns the built-in defaults, the lowest layer of every load.
func Default() Config {
	return Config{
		Servers:            map[string]Server{},
		Mode:               ModeAuto,
		ThresholdPct:       10,
		ContextWindow:      200000,
		Tokenizer:          TokenizerO200k,
		CoreTools:          DefaultCoreTools(),
		DeferrablePrefixes: []string{"mcp_"},
		Disclosure:         DisclosureBridge,
		Search: Search{DefaultLimit: 5, MaxLimit: 20, HintTokens: 1000, RevealLimit: 64,
			Embeddings: Embeddings{Timeout: DefaultEmbeddingsTimeout, Weight: DefaultEmbeddingsWeight}},
		Trust:  Trust{Mode: TrustPin, NewServers: NewServersTrust},
		Policy: Policy{Destructive: DestructiveAllow},
		Serve: Serve{
			Transport:     ServeStdio,
			Listen:        "127.0.0.1:8080",
			MaxBodyBytes:  4 << 20,
			BodyTimeout:   30 * time.Second,
			MaxInFlight:   64,
			ShutdownGrace: 10 * time.Second,
			DrainDelay:    5 * time.Second,

			SessionIdleTimeout: 30 * time.Minute,
			MaxSessions:        1024,
			OAuth:              OAuth{GroupsClaim: "groups"},
		},
		Timeouts:          Timeouts{Connect: 30 * time.Second, Call: 60 * time.Second},
		StartupWait:       5 * time.Second,
		Restart:           Restart{Initial: 500 * time.Millisecond, Max: 30 * time.Second},
		MaxResultBytes:    10 << 20,
		MaxToolsPerServer: DefaultMaxToolsPerServer,
		Redis:             Redis{KeyPrefix: DefaultRedisKeyPrefix, TokenKeyEnv: DefaultTokenKeyEnv},
		Telemetry:         Telemetry{Exporter: ExporterNone, Prometheus: true},
		TokenStore:        TokenStoreAuto,
	}
}

// UpstreamTransport is the server's resolved transport: stdio, sse or
// streamable-http.
func (s Server) UpstreamTransport() string {
	t := s.Transport
	if t == "" {
		t = s.Type
	}
	switch t {
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return TransportStreamableHTTP
	case "":
		if s.Command != "" {
			return TransportStdio
		}
		return TransportStreamableHTTP
	}
	return t
}

// DefaultMaxToolsPerServer is max_tools_per_server's default; see
// Config.MaxToolsPerServer for why.
const DefaultMaxToolsPerServer = 2000

// EffectiveMaxTools is how many tools the server may add to the catalog:
// its own max_tools, else max_tools_per_server.
func (c *Config) EffectiveMaxTools(s Server) int {
	if s.MaxTools > 0 {
		return s.MaxTools
	}
	return c.MaxToolsPerServer
}

// EffectiveConnectTimeout is the server's connect timeout or the default.
func (c *Config) EffectiveConnectTimeout(s Server) time.Duration {
	if s.ConnectTimeout > 0 {
		return s.ConnectTimeout
	}
	return c.Timeouts.Connect
}

// EffectiveCallTimeout is the server's call timeout or the default.
func (c *Config) EffectiveCallTimeout(s Server) time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return c.Timeouts.Call
}

// EffectiveReplicaID is serve.replica_id, or the host name when it is
// empty ("unknown" if the system has none).
func (s Serve) EffectiveReplicaID() string {
	if s.ReplicaID != "" {
		return s.ReplicaID
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "unknown"
}
