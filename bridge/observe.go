package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

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
