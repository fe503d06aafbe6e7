// Package bridge is toolbridge's gateway: the catalog of what the upstream
// MCP servers offer, the server clients talk to, and the dispatch of every
// call to the upstream that owns the tool. The connections to the upstreams
// and the pool that keeps them up are bridge/upstream's.
package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/bridge/search/semantic"
	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/ui"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// Options configure a Gateway beyond its config.
type Options struct {
	// Environ is the environment stdio servers inherit.
	Environ []string
	// Progress receives connection progress lines (stderr in the CLI).
	Progress io.Writer
	// StartSummary adds, on Progress, the one line that says what the
	// start gave: servers up, tools, and the mode with its reason. serve
	// wants it; the one-shot commands print their own results instead.
	StartSummary bool
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Telemetry overrides the one cfg.Telemetry would set up (tests pass
	// an in-memory one). The gateway shuts down only one it set up itself.
	Telemetry *trace.Telemetry
	// CallLimiter counts each caller's tool calls in flight against
	// serve.max_in_flight; nil counts in this process
	// (access.NewLocalLimiter). Replicas pass one backed by shared state.
	CallLimiter access.CallLimiter
	// RedisHealth, when set, feeds toolbridge_redis_up on /metrics: it is
	// called at each scrape (with a deadline) and nil means Redis answers.
	// Unset (no redis.url), the metric is absent.
	RedisHealth func(context.Context) error
	// State is the Redis shared by the replicas (redis.url), opened and
	// closed by the caller. With it, HTTP sessions are accepted by every
	// replica (sessions_shared.go). Pins, upstream tokens and call limits
	// are shared whenever redis.url is set: without State, New opens a
	// client of its own for them and Close closes it (see shared.go).
	State *state.Store
}

// Gateway serves the upstreams' tools, prompts and resources as one MCP
// server.
type Gateway struct {
	// live is what a reload replaces as a whole: the config and what is
	// built from it. Read it once per operation (g.settings()), so that one
	// call sees one config from start to end.
	live atomic.Pointer[settings]
	// life ends first thing in Close: what waits in the background for
	// calls to end (retiring hooks) stops waiting then.
	life    context.Context
	endLife context.CancelFunc
	pool    *upstream.Pool
	relay   *upstream.Relay
	srv     *server.MCPServer
	logger  *slog.Logger

	tel       *trace.Telemetry
	ownTel    bool
	metrics   *trace.Metrics // the operator metrics (/metrics); nil when off
	transport atomic.Value   // downstream transport name, for spans

	// calls counts the tool calls being served, and draining refuses new
	// ones: shutdown waits for the calls in flight (see drain).
	calls    upstream.Activity
	requests upstream.Activity // HTTP requests being answered
	draining atomic.Bool
	// withdrawn makes /readyz answer 503 while everything else is still
	// served: the drain delay after SIGTERM (see ServeHTTP).
	withdrawn atomic.Bool
	cutoff    cutoff // cancels the calls still running when the grace period ends
	// reloadMu serialises reloads; retiring tracks what a reload replaced
	// and closes once its last call is done (Close waits for it).
	reloadMu sync.Mutex
	retiring sync.WaitGroup
	// memoSaves are the memo files' writes under way (see saveMemo):
	// Close waits for them, so nothing writes to the state directory
	// after it returns. memoMu orders starting one against Close: none
	// starts once the gateway's life has ended.
	memoSaves sync.WaitGroup
	memoMu    sync.Mutex

	index *search.Index
	// semantic reranks tool_search with embeddings; nil when
	// search.embeddings is off.
	semantic   *semantic.Ranker
	validators *validators
	revealed   *revealed
	// replicaSessions is the session table the replicas share; nil
	// without Options.State.
	replicaSessions *sharedSessions
	subs            *subscriptions
	// hitSummaries caches what tool_search shows of each hit.
	hitSummaries *hitSummaries

	catalog     atomic.Pointer[Catalog]
	views       views   // the callers' views of the catalog (see catalogFor)
	callers     callers // each session's caller, for its tools/list_changed
	rebuildMu   sync.Mutex
	serverDocs  map[string][sha256.Size]byte // per server: fingerprint of what the index holds
	toolsPrint  []byte                       // fingerprint of the registered tool list
	promptPrint []byte
	resPrint    []byte
	refreshes   coalescer    // one list refresh per server and list at a time, one more pending
	warnings    *logThrottle // repeated warnings, at most one per key and interval
	// overridesLogged are the override problems last logged (rebuildMu).
	overridesLogged []string
	// trustSeen is each held or warned tool's last finding, so that a
	// change is reported once, not on every rebuild (see screen).
	trustSeen    map[string]string
	lastRescreen atomic.Int64 // unix nanoseconds of the last recheck rebuild

	// startup holds the first tools/list until the catalog is first
	// published (see Connect); summary, if set, gets the line that says
	// what the start gave.
	startup startup
	summary io.Writer

	// activity keeps the recent calls and searches for the status page.
	activity *ui.Activity
	// shared is the state replicas share (redis.url), or nil.
	shared *shared

	// toolFilters and toolMiddlewares are what mcp-go was given, in its
	// order, for the tools/call fast path; fast says whether mcp-go is set
	// up as that path was written for (see fastPathFits).
	toolFilters     []server.ToolFilterFunc
	toolMiddlewares []server.ToolHandlerMiddleware
	fast            bool
	fastServed      atomic.Int64 // tools/call answered by the fast path
	// fastTools is the fast path's view of the tools registered with
	// mcp-go, each with the middlewares around its handler (see
	// fastTool); setTools starts it afresh.
	fastTools atomic.Pointer[fastTools]
	// oneTool holds the one-tool lists passesToolFilters passes the
	// filters (*[1]mcp.Tool).
	oneTool sync.Pool
}

// New builds a gateway for cfg. Call Connect to reach the upstreams.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sh, err := openShared(cfg, opts.State, opts.Environ, logger)
	if err != nil {
		return nil, err
	}
	live, err := provision(cfg, nil, logger, sh)
	if err != nil {
		sh.close()
		return nil, err
	}
	sem, err := newSemantic(cfg.Search.Embeddings, opts.Environ, cfg.ShowFullURLs, logger)
	if err != nil {
		_ = live.hooks.Close()
		sh.close()
		return nil, err
	}
	tel, ownTel := opts.Telemetry, false
	if tel == nil {
		// Setup never dials: an unreachable collector is only logged later.
		tel, err = trace.Setup(context.Background(), cfg.Telemetry, opts.Environ,
			trace.WithLogger(logger), trace.WithServiceVersion(Version), trace.WithRecordContent(cfg.Telemetry.RecordContent))
		if err != nil {
			_ = live.hooks.Close()
			if sem != nil {
				sem.Close()
			}
			sh.close()
			return nil, fmt.Errorf("setting up telemetry: %w", err)
		}
		ownTel = true
	}
	g := &Gateway{
		logger: logger,
		tel:    tel, ownTel: ownTel,
		index:      search.New(search.Options{MaxLimit: searchIndexMaxHits}),
		semantic:   sem,
		validators: newValidators(), revealed: newRevealed(), hitSummaries: newHitSummaries(),
		serverDocs: map[string][sha256.Size]byte{},
		warnings:   newLogThrottle(warnEvery),
		summary:    io.Discard,
		activity:   ui.NewActivity(),
		shared:     sh,
	}
	if opts.StartSummary && opts.Progress != nil {
		g.summary = opts.Progress
	}
	if err := g.newMetrics(cfg, sh.redisHealth(opts.RedisHealth)); err != nil {
		_ = live.hooks.Close()
		if sem != nil {
			sem.Close()
		}
		if ownTel {
			_ = tel.Shutdown(context.Background())
		}
		sh.close()
		return nil, err
	}
	g.startup.done = make(chan struct{})
	g.live.Store(live)
	g.transport.Store(config.ServeStdio)
	hooks := &server.Hooks{}
	hooks.AddBeforeAny(g.awaitStartup)
	hooks.AddBeforeAny(g.countRequest)
	hooks.AddAfterListTools(g.noteStartup)
	hooks.AddBeforeCallTool(g.noteRequestID)
	hooks.AddBeforeCallTool(g.routeDeferred)
	newRequestSpans(g).install(hooks)
	g.subs = newSubscriptions(g)
	hooks.AddAfterSubscribe(g.subs.subscribed)
	hooks.AddAfterUnsubscribe(g.subs.unsubscribed)
	hooks.AddAfterInitialize(declareToolsListChanged)
	hooks.AddOnRegisterSession(g.registerCaller)
	hooks.AddOnUnregisterSession(g.callers.unregister)
	hooks.AddBeforeReadResource(g.routeRead)
	if opts.State != nil {
		g.replicaSessions = newSharedSessions(opts.State.Sessions(cfg.Serve.SessionIdleTimeout, cfg.Serve.MaxSessions), cfg.Serve.SessionIdleTimeout, logger)
		hooks.AddAfterInitialize(g.shareInitialize)
		hooks.AddAfterSetLevel(g.shareLevel)
		hooks.AddOnRegisterSession(g.sessionRegistered)
		hooks.AddOnUnregisterSession(g.sessionUnregistered)
	}
	hooks.AddAfterListResources(g.filterResources)
	hooks.AddAfterListResourceTemplates(g.filterTemplates)
	hooks.AddOnUnregisterSession(func(ctx context.Context, s server.ClientSession) { g.revealed.forget(s.SessionID()) })
	// The tool filters and middlewares are kept on g as well as given to
	// mcp-go, in the same order: the tools/call fast path (fastpath.go)
	// runs exactly these.
	g.toolFilters = []server.ToolFilterFunc{
		g.hideRemoved, // first: see its doc
		g.addRevealed,
		g.filterAccess, // last: see its doc
	}
	g.toolMiddlewares = []server.ToolHandlerMiddleware{
		g.countCalls,
		g.traceToolCalls,
		newInFlight(cfg.Serve.MaxInFlight, sh.callLimiter(opts.CallLimiter, cfg.Serve.MaxInFlight), logger).middleware,
		recoverToolPanic, // what server.WithRecovery installs
	}
	srvOpts := []server.ServerOption{server.WithHooks(hooks)}
	for _, f := range g.toolFilters {
		srvOpts = append(srvOpts, server.WithToolFilter(f))
	}
	for _, m := range g.toolMiddlewares {
		srvOpts = append(srvOpts, server.WithToolHandlerMiddleware(m))
	}
	g.srv = server.NewMCPServer(serverName, Version, append(srvOpts,
		server.WithPromptFilter(g.filterPrompts),
		// tools/list_changed is sent by the gateway itself, to each
		// session whose view changed (see toolsChanged); initialize still
		// declares listChanged (see declareToolsListChanged).
		server.WithToolCapabilities(false),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{g}),
		server.WithResourceCompletionProvider(completer{g}),
		// No WithElicitation, EnableSampling or WithRoots: those are
		// client capabilities in the spec, and a server that lists them
		// tells clients something false. The gateway still asks its
		// clients for elicitation, sampling and roots; mcp-go does not
		// check the server's own capabilities for that, only the
		// client's.
		server.WithInstructions(instructions),
	)...)
	g.fast = fastPathFits(g.srv, len(g.toolFilters), len(g.toolMiddlewares))
	g.fastTools.Store(&fastTools{})
	g.relay = upstream.NewRelay(g.srv, g.upstreamChanged)
	popts := upstream.PoolOptions{
		// The token key is the gateway's own: stdio servers inherit the
		// rest of its environment, never that.
		Environ: withoutVar(opts.Environ, cfg.Redis.TokenKeyEnv), Progress: opts.Progress, Version: Version, OnReconnect: func() { g.rebuild() }, OnJoin: g.joined,
		Logger: transportLogger(logger),
	}
	if sh != nil {
		popts.OpenTokenStore = sh.openTokens
	}
	g.pool = upstream.NewPool(cfg, popts, g.relay)
	g.life, g.endLife = context.WithCancel(context.Background())
	if sh != nil {
		sh.start(g)
	}
	// The placeholder until Connect publishes the first real catalog.
	empty := buildCatalog(nil, metaNames, nil)
	g.classifyWith(empty, live, live.counter)
	g.catalog.Store(empty)
	return g, nil
}

// serverName is the gateway's name as an MCP server.
const serverName = "toolbridge"

// instructions are the server instructions hosts load at start (Claude
// Code, for one): they teach the model bridge mode, which it meets only
// when tool_search is listed, in three lines, and how to read a hit that
// is already listed or weak.
const instructions = "toolbridge: one MCP server in front of many. When tool_search is listed, most tools are not: " +
	"find one with tool_search {\"query\": \"what you want to do\"}, read its parameters with tool_describe {\"tool_name\": \"<id>\"}, " +
	"then run it with tool_call {\"tool_name\": \"<id>\", \"tool_args\": {...}}.\n" +
	"On a miss, search again with other words (the task, not a guessed tool name), or with an empty query to list the catalog by server; never invent a tool id. " +
	"A hit marked already listed is one of your tools: call it directly; a weak match is a poor fit."

// searchIndexMaxHits caps what the gateway asks the index for: the
// configured limit plus the visible tools it filters out.
const searchIndexMaxHits = 1 << 16

// MCPServer returns the downstream MCP server, for the transports.
func (g *Gateway) MCPServer() *server.MCPServer { return g.srv }

// Pool returns the upstream pool.
func (g *Gateway) Pool() *upstream.Pool { return g.pool }

// Catalog returns the current catalog snapshot.
func (g *Gateway) Catalog() *Catalog { return g.catalog.Load() }

// Close disconnects every upstream, stops their processes, closes the
// hooks (flushing the audit log) and flushes telemetry. Calls still
// running are cancelled: the Serve methods give them a grace period first.
func (g *Gateway) Close() error {
	g.endLife()
	errs := []error{g.pool.Close()}
	g.retiring.Wait() // the pool is closed: nothing retired waits any more
	g.memoMu.Lock()   // endLife came first: no save starts after this
	g.memoMu.Unlock()
	g.memoSaves.Wait()
	errs = append(errs, g.settings().hooks.Close())
	if g.semantic != nil {
		g.semantic.Close()
	}
	if g.ownTel {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errs = append(errs, g.tel.Shutdown(ctx))
	}
	errs = append(errs, g.metrics.Shutdown(context.Background()))
	g.shared.close()
	return errors.Join(errs...)
}

// downstream is the transport clients use, for spans: stdio or http.
func (g *Gateway) downstream() string { return g.transport.Load().(string) }

// warnEvery is how often one repeated warning is logged.
const warnEvery = 10 * time.Second

// upstreamChanged handles an upstream's list_changed notification: refetch
// that list, then republish. It runs off the transport's reader goroutine,
// which must not block on a request of its own, and is coalesced: a storm
// of notifications costs one refresh at a time and one more after it.
func (g *Gateway) upstreamChanged(u *upstream.Conn, method string) {
	g.refreshes.do(u.Name()+" "+method, func() {
		ctx, cancel := context.WithTimeout(context.Background(), g.settings().cfg.EffectiveConnectTimeout(u.Spec().Config))
		defer cancel()
		var err error
		switch mcp.MCPMethod(method) {
		case mcp.MethodNotificationToolsListChanged:
			err = u.RefreshTools(ctx)
		case mcp.MethodNotificationPromptsListChanged:
			err = u.RefreshPrompts(ctx)
		case mcp.MethodNotificationResourcesListChanged:
			err = u.RefreshResources(ctx)
		}
		if err != nil {
			g.warnings.warn(g.logger, u.Name()+" refresh failed", "refreshing after list change", "server", u.Name(), "error", err)
			return
		}
		for _, why := range u.Skipped() {
			g.warnings.warn(g.logger, u.Name()+" "+why, "refreshing after list change", "server", u.Name(), "warning", why)
		}
		// Republishing is coalesced too: refreshes of many lists and
		// servers that end together make one rebuild, and so at most one
		// list_changed per kind to the clients. A rebuild that changed what
		// clients see holds the next one back for listChangedInterval, so a
		// server whose tools really change in a loop costs clients at most
		// a few list_changed (and re-lists) a second: the first change is
		// told at once, the last one always after it.
		g.refreshes.do("rebuild", func() {
			if g.rebuild() {
				select {
				case <-time.After(listChangedInterval):
				case <-g.life.Done():
				}
			}
		})
	})
}

// listChangedInterval is the least time between two republishings that a
// list change upstream causes (see upstreamChanged).
const listChangedInterval = 200 * time.Millisecond

// rebuild publishes a new catalog and re-registers what changed. Clients are
// told (notifications/*/list_changed) only when their view really changed;
// it reports whether it did.
func (g *Gateway) rebuild() (told bool) {
	g.rebuildMu.Lock()
	defer g.rebuildMu.Unlock()
	live := g.settings()
	cat := buildCatalog(g.pool.Connected(), metaNames, g.knownServers())
	cat.OverrideProblems = cat.applyOverrides(live.cfg.Tools, metaNames)
	cat.reindexExposed()
	g.reportOverrides(cat.OverrideProblems)
	g.screen(cat, live)
	// Classifying (token counts) and indexing read the same tools and
	// write different fields: side by side, start-up waits for the longer
	// of the two rather than their sum.
	var indexed sync.WaitGroup
	indexed.Go(func() { g.updateIndex(cat) })
	g.classifyWith(cat, live, live.counter)
	indexed.Wait()
	g.saveMemo(live)
	g.catalog.Store(cat)

	tools := make([]server.ServerTool, 0, len(cat.Visible)+len(metaNames))
	for _, t := range cat.Visible {
		tools = append(tools, server.ServerTool{Tool: t.Listed(), Handler: g.directHandler(t)})
	}
	if cat.Decision.Bridge {
		tools = append(tools, cat.meta...)
	}
	tools = append(tools, g.removedTools(cat)...)
	if print := fingerprint(tools, func(t server.ServerTool) any { return t.Tool }); !bytes.Equal(print, g.toolsPrint) {
		g.toolsPrint = print
		g.setTools(tools...)
		g.toolsChanged(cat)
		told = true
	}

	prompts := make([]server.ServerPrompt, 0, len(cat.Prompts))
	for _, p := range cat.Prompts {
		exposed := p.Prompt
		exposed.Name = p.Exposed
		prompts = append(prompts, server.ServerPrompt{Prompt: exposed, Handler: g.promptHandler(p)})
	}
	if print := fingerprint(prompts, func(p server.ServerPrompt) any { return p.Prompt }); !bytes.Equal(print, g.promptPrint) {
		g.promptPrint = print
		g.srv.SetPrompts(prompts...)
		told = true
	}

	resources := make([]server.ServerResource, 0, len(cat.Resources))
	// Registered under routed keys, so that a resource the caller may not
	// see is answered like an unknown one (see routeRead).
	for _, r := range cat.Resources {
		res := r.Resource
		res.URI = routeKey(res.URI)
		resources = append(resources, server.ServerResource{Resource: res, Handler: g.resourceHandler(r.Server)})
	}
	templates := make([]server.ServerResourceTemplate, 0, len(cat.Templates))
	for _, t := range cat.Templates {
		if tpl, ok := routedTemplate(t.Template); ok {
			templates = append(templates, server.ServerResourceTemplate{Template: tpl, Handler: server.ResourceTemplateHandlerFunc(g.resourceHandler(t.Server))})
		}
	}
	print := fingerprint([]any{resources, templates}, func(v any) any {
		switch list := v.(type) {
		case []server.ServerResource:
			out := make([]mcp.Resource, len(list))
			for i, r := range list {
				out[i] = r.Resource
			}
			return out
		case []server.ServerResourceTemplate:
			out := make([]mcp.ResourceTemplate, len(list))
			for i, t := range list {
				out[i] = t.Template
			}
			return out
		}
		return nil
	})
	if !bytes.Equal(print, g.resPrint) {
		g.resPrint = print
		g.srv.SetResources(resources...)
		g.srv.SetResourceTemplates(templates...)
		told = true
	}
	return told
}

// knownServers are the names of the servers the alias rule answers for:
// every configured server and every one the pool knows, connected or not,
// so that a server that is down keeps its aliases.
func (g *Gateway) knownServers() []string {
	var out []string
	for name := range g.settings().cfg.Servers {
		out = append(out, name)
	}
	for _, s := range g.pool.Statuses() {
		out = append(out, s.Name)
	}
	return out
}

// fingerprint is a digest of the JSON of what clients would see of a
// list; equal fingerprints mean no list_changed is due. The JSON is hashed
// as it is written rather than kept: in pass-through a list of 10,000
// tools would otherwise be held twice.
func fingerprint[T any](items []T, view func(T) any) []byte {
	views := make([]any, len(items))
	for i, it := range items {
		views[i] = view(it)
	}
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(views); err != nil {
		return nil // unmarshalable: treat as changed
	}
	return h.Sum(nil)
}
