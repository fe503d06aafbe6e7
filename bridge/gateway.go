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

	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// Options configure a Gateway beyond its config.
type Options struct {
	// Environ is the environment stdio servers inherit.
	Environ []string
	// Progress receives connection progress lines (stderr in the CLI).
	Progress io.Writer
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Telemetry overrides the one cfg.Telemetry would set up (tests pass
	// an in-memory one). The gateway shuts down only one it set up itself.
	Telemetry *trace.Telemetry
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
	transport atomic.Value // downstream transport name, for spans

	// calls counts the tool calls being served, and draining refuses new
	// ones: shutdown waits for the calls in flight (see drain).
	calls    upstream.Activity
	requests upstream.Activity // HTTP requests being answered
	draining atomic.Bool
	// reloadMu serialises reloads; retiring tracks what a reload replaced
	// and closes once its last call is done (Close waits for it).
	reloadMu sync.Mutex
	retiring sync.WaitGroup

	index      *search.Index
	validators *validators
	revealed   *revealed
	// hitSummaries caches what tool_search shows of each hit.
	hitSummaries *hitSummaries

	catalog     atomic.Pointer[Catalog]
	rebuildMu   sync.Mutex
	serverDocs  map[string][sha256.Size]byte // per server: fingerprint of what the index holds
	toolsPrint  []byte                       // fingerprint of the registered tool list
	promptPrint []byte
	resPrint    []byte
	refreshMu   sync.Map // upstream name -> *sync.Mutex: one refresh at a time
}

// New builds a gateway for cfg. Call Connect to reach the upstreams.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	live, err := provision(cfg, nil, logger)
	if err != nil {
		return nil, err
	}
	tel, ownTel := opts.Telemetry, false
	if tel == nil {
		// Setup never dials: an unreachable collector is only logged later.
		tel, err = trace.Setup(context.Background(), cfg.Telemetry, opts.Environ,
			trace.WithLogger(logger), trace.WithServiceVersion(Version), trace.WithRecordContent(cfg.Telemetry.RecordContent))
		if err != nil {
			_ = live.hooks.Close()
			return nil, fmt.Errorf("setting up telemetry: %w", err)
		}
		ownTel = true
	}
	g := &Gateway{
		logger: logger,
		tel:    tel, ownTel: ownTel,
		index:      search.New(search.Options{MaxLimit: searchIndexMaxHits}),
		validators: newValidators(), revealed: newRevealed(), hitSummaries: newHitSummaries(),
		serverDocs: map[string][sha256.Size]byte{},
	}
	g.live.Store(live)
	g.transport.Store(config.ServeStdio)
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(g.noteRequestID)
	hooks.AddBeforeCallTool(g.routeDeferred)
	newRequestSpans(g).install(hooks)
	subs := newSubscriptions(g)
	hooks.AddAfterSubscribe(subs.subscribed)
	hooks.AddAfterUnsubscribe(subs.unsubscribed)
	hooks.AddOnUnregisterSession(func(ctx context.Context, s server.ClientSession) { g.revealed.forget(s.SessionID()) })
	g.srv = server.NewMCPServer("toolbridge", Version,
		server.WithHooks(hooks),
		server.WithToolFilter(g.addRevealed),
		server.WithToolHandlerMiddleware(g.countCalls),
		server.WithToolHandlerMiddleware(g.traceToolCalls),
		server.WithToolHandlerMiddleware(newInFlight(cfg.Serve.MaxInFlight).middleware),
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{g}),
		server.WithResourceCompletionProvider(completer{g}),
		server.WithElicitation(),
		server.WithRecovery(),
		server.WithInstructions("toolbridge: one MCP server in front of many."),
	)
	g.srv.EnableSampling()
	g.relay = upstream.NewRelay(g.srv, g.upstreamChanged)
	g.pool = upstream.NewPool(cfg, upstream.PoolOptions{
		Environ: opts.Environ, Progress: opts.Progress, Version: Version, OnReconnect: g.rebuild,
	}, g.relay)
	g.life, g.endLife = context.WithCancel(context.Background())
	// The placeholder until Connect publishes the first real catalog.
	empty := buildCatalog(nil, metaNames)
	g.classifyWith(empty, live, live.counter)
	g.catalog.Store(empty)
	return g, nil
}

// searchIndexMaxHits caps what the gateway asks the index for: the
// configured limit plus the visible tools it filters out.
const searchIndexMaxHits = 1 << 16

// MCPServer returns the downstream MCP server, for the transports.
func (g *Gateway) MCPServer() *server.MCPServer { return g.srv }

// Pool returns the upstream pool.
func (g *Gateway) Pool() *upstream.Pool { return g.pool }

// Catalog returns the current catalog snapshot.
func (g *Gateway) Catalog() *Catalog { return g.catalog.Load() }

// Connect connects to specs in parallel and publishes what they offer. The
// error lists servers that failed; the gateway serves the others anyway.
//
// Each server's tools are counted and indexed as soon as it is up, while
// the others are still starting (see prepare): the catalog published once
// the slowest is up then only has that one's tools left to do.
func (g *Gateway) Connect(ctx context.Context, specs []upstream.Spec) error {
	err := g.pool.Connect(ctx, specs, g.prepare)
	g.rebuild()
	return err
}

// prepare does one connected server's share of the next rebuild before
// the catalog includes it: it counts the server's tools (the counter
// caches counts by text, so the rebuild's count of them is nearly free)
// and indexes them (updateIndex skips a server whose documents it holds).
// A tool that another server's tool of the same name will qualify is
// counted under its bare name here: only that name's text is counted
// again. tool_search ignores hits the catalog does not have yet.
func (g *Gateway) prepare(u *upstream.Conn) {
	cat := buildCatalog([]*upstream.Conn{u}, metaNames)
	listed := make([]mcp.Tool, len(cat.Tools))
	for i, t := range cat.Tools {
		listed[i] = t.Listed()
	}
	var indexed sync.WaitGroup
	indexed.Go(func() {
		g.rebuildMu.Lock()
		defer g.rebuildMu.Unlock()
		g.indexServer(u.Name(), cat.Tools, nil)
	})
	classify.CountAll(g.settings().counter, listed)
	indexed.Wait()
}

// Close disconnects every upstream, stops their processes, closes the
// hooks (flushing the audit log) and flushes telemetry. Calls still
// running are cancelled: the Serve methods give them a grace period first.
func (g *Gateway) Close() error {
	g.endLife()
	errs := []error{g.pool.Close()}
	g.retiring.Wait() // the pool is closed: nothing retired waits any more
	errs = append(errs, g.settings().hooks.Close())
	if g.ownTel {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errs = append(errs, g.tel.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// downstream is the transport clients use, for spans: stdio or http.
func (g *Gateway) downstream() string { return g.transport.Load().(string) }

// upstreamChanged handles an upstream's list_changed notification: refetch
// that list, then republish. It runs off the transport's reader goroutine,
// which must not block on a request of its own.
func (g *Gateway) upstreamChanged(u *upstream.Conn, method string) {
	go func() {
		muAny, _ := g.refreshMu.LoadOrStore(u.Name(), &sync.Mutex{})
		mu := muAny.(*sync.Mutex)
		mu.Lock()
		defer mu.Unlock()
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
			g.logger.Warn("refreshing after list change", "server", u.Name(), "error", err)
			return
		}
		g.rebuild()
	}()
}

// rebuild publishes a new catalog and re-registers what changed. Clients are
// told (notifications/*/list_changed) only when their view really changed.
func (g *Gateway) rebuild() {
	g.rebuildMu.Lock()
	defer g.rebuildMu.Unlock()
	live := g.settings()
	cat := buildCatalog(g.pool.Connected(), metaNames)
	// Classifying (token counts) and indexing read the same tools and
	// write different fields: side by side, start-up waits for the longer
	// of the two rather than their sum.
	var indexed sync.WaitGroup
	indexed.Go(func() { g.updateIndex(cat) })
	g.classifyWith(cat, live, live.counter)
	indexed.Wait()
	g.catalog.Store(cat)

	tools := make([]server.ServerTool, 0, len(cat.Visible)+len(metaNames))
	for _, t := range cat.Visible {
		tools = append(tools, server.ServerTool{Tool: t.Listed(), Handler: g.directHandler(t)})
	}
	if cat.Decision.Bridge {
		tools = append(tools, cat.meta...)
	}
	if print := fingerprint(tools, func(t server.ServerTool) any { return t.Tool }); !bytes.Equal(print, g.toolsPrint) {
		g.toolsPrint = print
		g.srv.SetTools(tools...)
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
	}

	resources := make([]server.ServerResource, 0, len(cat.Resources))
	for _, r := range cat.Resources {
		resources = append(resources, server.ServerResource{Resource: r.Resource, Handler: g.resourceHandler(r.Server)})
	}
	templates := make([]server.ServerResourceTemplate, 0, len(cat.Templates))
	for _, t := range cat.Templates {
		templates = append(templates, server.ServerResourceTemplate{Template: t.Template, Handler: server.ResourceTemplateHandlerFunc(g.resourceHandler(t.Server))})
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
	}
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

// call is one tool call on its way to the upstream.
type call struct {
	tool *Tool
	args json.RawMessage
	meta *mcp.Meta
	via  string
}

func (g *Gateway) directHandler(t *Tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.dispatch(ctx, call{tool: t, args: rawArguments(req), meta: req.Params.Meta, via: trace.ViaDirect})
	}
}

// rawArguments returns the arguments exactly as the client sent them.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}

// dispatch forwards one call to the upstream that owns the tool, under the
// tool's original name, and returns the upstream's result unchanged. Every
// failure the model can act on comes back as an isError result naming the
// server, never as a protocol error that would end the model's turn.
func (g *Gateway) dispatch(ctx context.Context, c call) (*mcp.CallToolResult, error) {
	u, ok := g.pool.Get(c.tool.Server)
	if why, next := g.pool.Down(c.tool.Server); !ok || why != "" {
		retry := ""
		if wait := time.Until(next); !next.IsZero() && wait > 0 {
			retry = fmt.Sprintf(" toolbridge is reconnecting it; next attempt in %s.", wait.Round(100*time.Millisecond))
		}
		return toolError("Server %q is down (%s), so %s cannot run now.%s Other servers' tools still work.", c.tool.Server, why, c.tool.ID, retry), nil
	}
	return g.observedCall(ctx, c, u)
}

// callFailure is an upstream call that produced no result.
type callFailure struct {
	err      error
	timedOut bool          // the gateway's call timeout ran out
	timeout  time.Duration // that timeout
}

func (f *callFailure) Error() string { return f.err.Error() }
func (f *callFailure) Unwrap() error { return f.err }

// forward sends the call upstream with meta as its _meta and decodes the
// result. A *callFailure says why there is none.
func (g *Gateway) forward(ctx context.Context, c call, u *upstream.Conn, meta map[string]any) (*mcp.CallToolResult, error) {
	timeout := g.settings().cfg.EffectiveCallTimeout(u.Spec().Config)
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var clientToken mcp.ProgressToken
	if c.meta != nil {
		clientToken = c.meta.ProgressToken
	}
	active := g.relay.Begin(ctx, u, clientToken)
	defer active.End()
	if upToken := active.UpstreamToken(); upToken != "" {
		meta["progressToken"] = upToken
	}
	params := map[string]any{"name": c.tool.Name}
	if len(c.args) > 0 {
		params["arguments"] = c.args
	}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	raw, err := u.Request(callCtx, string(mcp.MethodToolsCall), params)
	if err != nil {
		// The timeout is judged by callCtx: an upstream may give up on the
		// deadline itself and answer with an error of its own.
		return nil, &callFailure{err: err, timedOut: ctx.Err() == nil && callCtx.Err() != nil, timeout: timeout}
	}
	res, err := decodeResult(raw)
	if err != nil {
		return nil, &callFailure{err: fmt.Errorf("decoding the result: %w", err)}
	}
	return res, nil
}

// textResult is the common shape of a tools/call result: text blocks and
// maybe structured content. Every other member mcp.CallToolResult decodes
// is caught too, so that its presence sends the result down the general
// path.
type textResult struct {
	Content []struct {
		Type        string          `json:"type"`
		Text        string          `json:"text"`
		Annotations json.RawMessage `json:"annotations"`
		Meta        json.RawMessage `json:"_meta"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta"`
	ResultType        json.RawMessage `json:"resultType"`
	InputRequests     json.RawMessage `json:"inputRequests"`
	RequestState      json.RawMessage `json:"requestState"`
}

// decodeResult decodes an upstream's tools/call result into what
// json.Unmarshal into an mcp.CallToolResult gives. mcp-go's decoder reads
// the result three times over (the envelope, each block's type, each
// block); a result of plain text blocks, the common case, is read once
// here instead. Anything else takes mcp-go's path.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var t textResult
	if json.Unmarshal(raw, &t) == nil && t.Meta == nil && t.ResultType == nil && t.InputRequests == nil && t.RequestState == nil {
		res := &mcp.CallToolResult{IsError: t.IsError}
		plain := true
		if len(t.Content) > 0 {
			res.Content = make([]mcp.Content, len(t.Content))
			for i, c := range t.Content {
				if c.Type != mcp.ContentTypeText || c.Annotations != nil || c.Meta != nil {
					plain = false
					break
				}
				res.Content[i] = mcp.TextContent{Type: c.Type, Text: c.Text}
			}
		}
		if plain {
			if len(t.StructuredContent) > 0 {
				res.RawStructuredContent = t.StructuredContent
				if err := json.Unmarshal(t.StructuredContent, &res.StructuredContent); err != nil {
					return nil, err
				}
			}
			return res, nil
		}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// failureResult turns a failed upstream call into what the client gets.
func (g *Gateway) failureResult(ctx context.Context, c call, err error) (*mcp.CallToolResult, error) {
	var f *callFailure
	if !errors.As(err, &f) {
		return nil, err
	}
	var rpcErr *upstream.RPCError
	var tooLarge *upstream.TooLargeError
	switch {
	case ctx.Err() != nil:
		// The client cancelled or went away: nobody reads a result.
		return nil, ctx.Err()
	case f.timedOut:
		return toolError("%s did not answer within %s (server %q call timeout). The server may be busy or hung; try again, or raise timeouts.call.", c.tool.ID, f.timeout, c.tool.Server), nil
	case errors.As(err, &tooLarge):
		return toolError("Server %q answered %s with more than max_result_bytes (%d bytes), so the result was dropped. Ask for less (a narrower query, a smaller page), or raise max_result_bytes.", c.tool.Server, c.tool.ID, tooLarge.Limit), nil
	case errors.As(err, &rpcErr):
		return toolError("Server %q rejected the call to %s: %s (JSON-RPC code %d).", c.tool.Server, c.tool.ID, rpcErr.Message, rpcErr.Code), nil
	default:
		return toolError("Server %q is unavailable, so %s failed: %v", c.tool.Server, c.tool.ID, err), nil
	}
}

// toolError is an isError result with one text block.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf(format, args...))
}

func (g *Gateway) promptHandler(p *Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		u, ok := g.pool.Get(p.Server)
		if !ok {
			return nil, fmt.Errorf("server %q is not connected", p.Server)
		}
		params := map[string]any{"name": p.Prompt.Name}
		if req.Params.Arguments != nil {
			params["arguments"] = req.Params.Arguments
		}
		raw, err := u.Request(ctx, string(mcp.MethodPromptsGet), params)
		if err != nil {
			return nil, fmt.Errorf("getting prompt %s from %s: %w", p.Prompt.Name, p.Server, err)
		}
		return mcp.ParseGetPromptResult(&raw)
	}
}

func (g *Gateway) resourceHandler(serverName string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		u, ok := g.pool.Get(serverName)
		if !ok {
			return nil, fmt.Errorf("server %q is not connected", serverName)
		}
		raw, err := u.Request(ctx, string(mcp.MethodResourcesRead), map[string]any{"uri": req.Params.URI})
		if err != nil {
			return nil, fmt.Errorf("reading %s from %s: %w", req.Params.URI, serverName, err)
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, fmt.Errorf("decoding %s from %s: %w", req.Params.URI, serverName, err)
		}
		return res.Contents, nil
	}
}

// completer forwards completion/complete to the server that owns the
// prompt or resource template.
type completer struct{ g *Gateway }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, p := range c.g.Catalog().Prompts {
		if p.Exposed == name {
			return c.complete(ctx, p.Server, map[string]any{"type": "ref/prompt", "name": p.Prompt.Name}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, t := range c.g.Catalog().Templates {
		if t.Template.URITemplate != nil && t.Template.URITemplate.Raw() == uri {
			return c.complete(ctx, t.Server, map[string]any{"type": "ref/resource", "uri": uri}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) complete(ctx context.Context, serverName string, ref map[string]any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	u, ok := c.g.pool.Get(serverName)
	if !ok {
		return nil, fmt.Errorf("server %q is not connected", serverName)
	}
	params := map[string]any{"ref": ref, "argument": arg}
	if len(cctx.Arguments) > 0 {
		params["context"] = cctx
	}
	raw, err := u.Request(ctx, string(mcp.MethodCompletionComplete), params)
	if err != nil {
		return nil, fmt.Errorf("completing on %s: %w", serverName, err)
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding completion from %s: %w", serverName, err)
	}
	return &res.Completion, nil
}
