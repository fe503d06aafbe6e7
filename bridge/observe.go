package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/trace"
)

// Keys the gateway puts in a tools/call's _meta for its own use; both are
// removed before the call goes upstream (see upstreamMeta).
const (
	// metaRPCIDKey carries the JSON-RPC id from the before-call hook, which
	// sees it, to the handler, which does not.
	metaRPCIDKey = "io.toolbridge/rpc-id"
)

type serverSpanKey struct{}

// serverSpanFrom returns the SERVER span of the tools/call in ctx, so a
// meta-tool can add its own attributes (tool_search's query length).
func serverSpanFrom(ctx context.Context) *trace.Span {
	s, _ := ctx.Value(serverSpanKey{}).(*trace.Span)
	return s
}

// noteRequestID is a before-call hook: it records the JSON-RPC id where
// the tool handler can read it, for the span's jsonrpc.request.id.
func (g *Gateway) noteRequestID(ctx context.Context, id any, req *mcp.CallToolRequest) {
	if !g.tel.Enabled() || id == nil {
		return
	}
	req.Params.Meta = withMetaField(req.Params.Meta, metaRPCIDKey, id)
}

// withMetaField returns a copy of m with key set; the client's own _meta
// is left as it was.
func withMetaField(m *mcp.Meta, key string, value any) *mcp.Meta {
	out := &mcp.Meta{AdditionalFields: map[string]any{key: value}}
	if m != nil {
		out.ProgressToken = m.ProgressToken
		for k, v := range m.AdditionalFields {
			if k != key {
				out.AdditionalFields[k] = v
			}
		}
	}
	return out
}

// traceToolCalls is the tool-handler middleware that starts the SERVER span
// of every tools/call (named after the tool the client named: tool_call,
// tool_search or a direct tool) and ends it with the outcome.
func (g *Gateway) traceToolCalls(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var meta map[string]any
		var id any
		target := req.Params.Name
		if req.Params.Meta != nil {
			meta = req.Params.Meta.AdditionalFields
			id = meta[metaRPCIDKey]
			// A deferred tool called by its own name was rerouted to
			// tool_call; the span keeps the name the client used.
			if direct, ok := meta[metaViaKey].(string); ok && direct != "" {
				target = direct
			}
		}
		r := trace.Request{
			Method: string(mcp.MethodToolsCall), Target: target, ID: id,
			SessionID: sessionID(ctx), ProtocolVersion: server.RequestProtocolVersion(ctx),
			Transport: g.downstream(), Meta: meta, Header: req.Header,
		}
		if g.tel.RecordContent() {
			r.Arguments = json.RawMessage(rawArguments(req))
		}
		ctx, span := g.tel.StartServer(ctx, r)
		ctx = context.WithValue(ctx, serverSpanKey{}, span)
		res, err := next(ctx, req)
		switch {
		case err != nil:
			span.EndError(mcp.INTERNAL_ERROR, err)
		default:
			if g.tel.RecordContent() {
				span.SetResult(res)
			}
			span.EndResult(res != nil && res.IsError)
		}
		return res, err
	}
}

// requestSpans traces the requests that are not tool calls (tools/list,
// prompts/get, resources/read, initialize, ...) through mcp-go's hooks,
// which see each request start and end. Tool calls get their span from
// traceToolCalls, whose context reaches dispatch.
type requestSpans struct {
	g     *Gateway
	mu    sync.Mutex
	spans map[spanKey]*trace.Span
}

type spanKey struct {
	session string
	id      string
}

func newRequestSpans(g *Gateway) *requestSpans {
	return &requestSpans{g: g, spans: map[spanKey]*trace.Span{}}
}

func (r *requestSpans) install(h *server.Hooks) {
	h.AddBeforeAny(r.before)
	h.AddOnSuccess(r.success)
	h.AddOnError(r.failure)
}

func (r *requestSpans) key(ctx context.Context, id any) spanKey {
	return spanKey{session: sessionID(ctx), id: fmt.Sprint(id)}
}

func (r *requestSpans) before(ctx context.Context, id any, method mcp.MCPMethod, message any) {
	if !r.g.tel.Enabled() || method == mcp.MethodToolsCall || id == nil {
		return
	}
	_, span := r.g.tel.StartServer(ctx, trace.Request{
		Method: string(method), Target: requestTarget(message), ID: id,
		SessionID: sessionID(ctx), ProtocolVersion: server.RequestProtocolVersion(ctx),
		Transport: r.g.downstream(), Meta: requestMeta(message),
	})
	r.mu.Lock()
	r.spans[r.key(ctx, id)] = span
	r.mu.Unlock()
}

func (r *requestSpans) take(ctx context.Context, id any) *trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.key(ctx, id)
	s := r.spans[k]
	delete(r.spans, k)
	return s
}

func (r *requestSpans) success(ctx context.Context, id any, method mcp.MCPMethod, message any, result any) {
	if method != mcp.MethodToolsCall {
		r.take(ctx, id).EndResult(false)
	}
}

func (r *requestSpans) failure(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
	if !r.g.tel.Enabled() {
		return
	}
	code := mcp.INTERNAL_ERROR
	var rerr interface{ ToJSONRPCError() mcp.JSONRPCError }
	if errors.As(err, &rerr) {
		code = rerr.ToJSONRPCError().Error.Code
	}
	if method != mcp.MethodToolsCall {
		r.take(ctx, id).EndError(code, err)
		return
	}
	// A tools/call that failed before any handler ran (unknown tool): the
	// middleware never saw it, so its span is made here.
	if errors.Is(err, server.ErrToolNotFound) {
		_, span := r.g.tel.StartServer(ctx, trace.Request{
			Method: string(method), Target: requestTarget(message), ID: id,
			SessionID: sessionID(ctx), Transport: r.g.downstream(),
		})
		span.EndError(mcp.INVALID_PARAMS, err)
	}
}

// requestTarget is the tool or prompt a request names, for span names.
func requestTarget(message any) string {
	switch m := message.(type) {
	case *mcp.CallToolRequest:
		return m.Params.Name
	case *mcp.GetPromptRequest:
		return m.Params.Name
	}
	return ""
}

// requestMeta is a request's params._meta, where clients put traceparent.
func requestMeta(message any) map[string]any {
	var meta *mcp.Meta
	switch m := message.(type) {
	case *mcp.ListToolsRequest:
		meta = m.Params.Meta
	case *mcp.GetPromptRequest:
		meta = m.Params.Meta
	case *mcp.ReadResourceRequest:
		meta = m.Params.Meta
	case *mcp.ListPromptsRequest:
		meta = m.Params.Meta
	case *mcp.ListResourcesRequest:
		meta = m.Params.Meta
	}
	if meta == nil {
		return nil
	}
	return meta.AdditionalFields
}

func sessionID(ctx context.Context) string {
	if s := server.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}

// upstreamMeta is the _meta sent with a call upstream: the client's own
// fields, plus the trace context of ctx (so one trace spans client ->
// gateway -> upstream). Left out: the gateway's private keys, and the
// protocol's own io.modelcontextprotocol/* keys (protocol version, client
// capabilities and info), which describe the client's hop to the gateway,
// not the gateway's session with the upstream; an upstream that checks
// them against its session rejects the call.
func (g *Gateway) upstreamMeta(ctx context.Context, m *mcp.Meta) map[string]any {
	meta := map[string]any{}
	if m != nil {
		for k, v := range m.AdditionalFields {
			if k == metaRPCIDKey || k == metaViaKey || strings.HasPrefix(k, protocolMetaPrefix) {
				continue
			}
			meta[k] = v
		}
	}
	return trace.Inject(ctx, meta)
}

// protocolMetaPrefix marks _meta keys the MCP protocol reserves for itself.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// observedCall runs one tool call with its TOOL and CLIENT spans and the
// configured hooks around it: all of them see the real server and tool,
// whether the client called it directly or through tool_call.
func (g *Gateway) observedCall(ctx context.Context, c call, u *upstream.Conn) (*mcp.CallToolResult, error) {
	start := time.Now()
	ctx, toolSpan := g.tel.StartTool(ctx, trace.ToolCall{
		Server: c.tool.Server, Tool: c.tool.Name, Class: c.tool.Verdict.Class, Via: c.via,
		Arguments: recordable(g.tel, c.args),
	})
	hc := trace.Call{
		Server: c.tool.Server, Tool: c.tool.Name, Class: c.tool.Verdict.Class, Via: c.via,
		Arguments: c.args, SessionID: sessionID(ctx),
	}
	// One call, one set of hooks: a reload closes the old ones only after
	// the calls that started with them are done.
	live := g.settings()
	live.calls.Begin()
	defer live.calls.End()
	hooks := live.hooks
	if d, err := hooks.BeforeCall(ctx, hc); err == nil && d.Deny {
		reason := d.Reason
		if reason == "" {
			reason = "a hook denied it"
		}
		res := toolError("%s was not run: %s", c.tool.ID, reason)
		hooks.AfterCall(ctx, hc, trace.Result{Value: res, IsError: true, Denied: true, Reason: reason, Duration: time.Since(start)})
		toolSpan.SetDenied(d)
		toolSpan.EndResult(true)
		return res, nil
	}
	host, port := u.Address()
	url := ""
	if host != "" {
		url = fmt.Sprintf("http://%s:%d", host, port)
	}
	cctx, clientSpan := g.tel.StartClient(ctx, trace.Upstream{Transport: u.Spec().Transport(), URL: url})
	res, err := g.forward(cctx, c, u, g.upstreamMeta(cctx, c.meta))
	err = upstream.ScrubError(err, u.Spec().Config)
	result := trace.Result{Value: res, Err: err, Duration: time.Since(start)}
	if err != nil {
		code := mcp.INTERNAL_ERROR
		var rpcErr *upstream.RPCError
		if errors.As(err, &rpcErr) {
			code = rpcErr.Code
		}
		result.Code = code
		clientSpan.EndError(code, err)
		toolSpan.EndError(code, err)
		hooks.AfterCall(ctx, hc, result)
		res, err := g.failureResult(ctx, c, err)
		if res != nil {
			// The upstream's own error message may quote a secret too.
			for i, content := range res.Content {
				if text, ok := content.(mcp.TextContent); ok {
					text.Text = u.Spec().Config.Scrub(text.Text)
					res.Content[i] = text
				}
			}
		}
		return res, err
	}
	result.IsError = res.IsError
	if g.tel.RecordContent() {
		toolSpan.SetResult(res)
	}
	clientSpan.EndResult(res.IsError)
	toolSpan.EndResult(res.IsError)
	hooks.AfterCall(ctx, hc, result)
	return res, nil
}

// recordable returns the arguments for a span only when content recording
// is on; otherwise nothing is kept.
func recordable(tel *trace.Telemetry, args json.RawMessage) any {
	if !tel.RecordContent() || args == nil {
		return nil
	}
	return args
}
