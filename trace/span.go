package trace

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// maxContentBytes bounds one recorded argument or result (record_content):
// a 10 MiB tool result must not become a 10 MiB span.
const maxContentBytes = 8 << 10

// Request is one request the gateway received from its client.
type Request struct {
	// Method is the MCP method: tools/call, tools/list, initialize, ...
	Method string
	// Target is the tool (tools/call) or prompt (prompts/get) the client
	// named: for a bridged call this is tool_call, tool_search or
	// tool_describe. Empty for methods without one.
	Target string
	// ID is the JSON-RPC id (any JSON scalar, or mcp-go's RequestId); nil
	// for notifications.
	ID any
	// SessionID is the MCP session, if any.
	SessionID string
	// ProtocolVersion is the negotiated MCP protocol version.
	ProtocolVersion string
	// Transport is the downstream transport: config.ServeStdio or
	// config.ServeHTTP.
	Transport string
	// RemoteAddr is the HTTP client's "ip:port", if any.
	RemoteAddr string
	// Meta is the request's params._meta; trace context is read from it.
	Meta map[string]any
	// Header holds the HTTP headers of a streamable-HTTP request; trace
	// context there is used when Meta has none.
	Header http.Header
	// Arguments of a tools/call; recorded only with record_content.
	Arguments any
}

// ToolCall is the real tool behind a call, after the gateway resolved it.
type ToolCall struct {
	// Server is the upstream server's name.
	Server string
	// Tool is the tool's name on that server (never tool_call).
	Tool string
	// Class is the tool's class.
	Class config.Class
	// Via is ViaToolCall or ViaDirect.
	Via string
	// Exposed is the name the client knows the tool by; recorded when a
	// rename makes it differ from Tool.
	Exposed string
	// Arguments are the real tool's arguments; recorded only with
	// record_content.
	Arguments any
	// EndUser is the authenticated caller's subject, if any (enduser.id).
	EndUser string
}

// Upstream is one request the gateway sends to an upstream server.
type Upstream struct {
	// Server is the upstream's name; default: the ToolCall's.
	Server string
	// Method is the MCP method (default tools/call).
	Method string
	// Tool is the tool called; default: the ToolCall's.
	Tool string
	// Class and Via default to the ToolCall's.
	Class config.Class
	Via   string
	// Transport is the upstream's transport: config.TransportStdio,
	// TransportStreamableHTTP or TransportSSE.
	Transport string
	// URL of an HTTP upstream: gives server.address and server.port.
	URL string
	// SessionID is the upstream session (Mcp-Session-Id), if any.
	SessionID string
	// ProtocolVersion is the version the upstream negotiated.
	ProtocolVersion string
	// RequestID is the JSON-RPC id sent upstream, when the client library
	// exposes it; nil leaves jsonrpc.request.id out.
	RequestID any
}

// ctxKey types the values this package keeps in a context.
type ctxKey int

const (
	serverSpanKey ctxKey = iota
	toolCallKey
)

// Span is one span started by StartServer, StartTool or StartClient. End
// it exactly once with End, EndResult or EndError; later calls are
// ignored. A nil *Span (what a disabled Telemetry returns) does nothing,
// so callers never check.
type Span struct {
	t     *Telemetry
	span  oteltrace.Span
	hist  metric.Float64Histogram // nil for tool spans: no metric
	start time.Time

	mu          sync.Mutex
	metricAttrs []attribute.KeyValue
	sessionID   string
	ended       bool
}

// StartServer starts the SERVER span of a request the gateway received,
// named "{method} {target}", as a child of the trace context the client
// sent in r.Meta (or r.Header). The returned context carries the span:
// pass it to StartTool and StartClient. With telemetry disabled the
// context still carries the client's trace context (so Inject forwards
// it) and the span is nil.
func (t *Telemetry) StartServer(ctx context.Context, r Request) (context.Context, *Span) {
	ctx, link := extractBoth(ctx, r.Meta, r.Header)
	if !t.Enabled() {
		return ctx, nil
	}
	name := r.Method
	if r.Target != "" {
		name += " " + r.Target
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs, str(AttrMCPMethodName, r.Method))
	switch r.Method {
	case MethodToolsCall:
		attrs = append(attrs, str(AttrGenAIOperationName, OperationExecuteTool))
		if r.Target != "" && r.Target != toolid.MetaCall {
			attrs = append(attrs, str(AttrGenAIToolName, r.Target))
		}
	case "prompts/get":
		if r.Target != "" {
			attrs = append(attrs, str("gen_ai.prompt.name", r.Target))
		}
	}
	attrs = protocolAttrs(attrs, r.ProtocolVersion, r.Transport)
	// Everything so far is low-cardinality: the histogram gets it too. It
	// shares attrs' array; the capped slice keeps later appends apart.
	metricAttrs := attrs[:len(attrs):len(attrs)]
	attrs = requestAttrs(attrs, r.ID, r.SessionID)
	attrs = append(attrs, clientAddr(r.RemoteAddr)...)
	if t.recordContent && r.Arguments != nil {
		attrs = append(attrs, str(AttrGenAIToolArguments, contentString(r.Arguments)))
	}
	opts := []oteltrace.SpanStartOption{
		oteltrace.WithSpanKind(oteltrace.SpanKindServer),
		oteltrace.WithAttributes(attrs...),
	}
	if link.IsValid() {
		opts = append(opts, oteltrace.WithLinks(oteltrace.Link{SpanContext: link}))
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, clean(name), append(opts, oteltrace.WithTimestamp(start))...)
	s := &Span{t: t, span: span, hist: t.serverDur, start: start, metricAttrs: metricAttrs, sessionID: r.SessionID}
	return context.WithValue(ctx, serverSpanKey, s), s
}

// StartTool starts the INTERNAL span "tools/call {real tool}" under the
// server span in ctx, for every tool call the gateway forwards (through
// tool_call or directly). It also puts the real tool, server, class and
// via on that server span (so "tools/call tool_call" is searchable by the
// real tool) and into ctx, where StartClient picks them up.
func (t *Telemetry) StartTool(ctx context.Context, c ToolCall) (context.Context, *Span) {
	if !t.Enabled() {
		return ctx, nil
	}
	gw := toolAttrs(c.Server, c.Class, c.Via)
	var sessionID string
	if srv, ok := ctx.Value(serverSpanKey).(*Span); ok && srv != nil {
		srv.annotateTool(c.Tool, gw)
		sessionID = srv.sessionID
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		str(AttrMCPMethodName, MethodToolsCall),
		str(AttrGenAIToolName, c.Tool),
		str(AttrGenAIOperationName, OperationExecuteTool),
	)
	attrs = append(attrs, gw...)
	if c.Exposed != "" && c.Exposed != c.Tool {
		attrs = append(attrs, str(AttrToolExposed, c.Exposed))
	}
	if sessionID != "" {
		attrs = append(attrs, str(AttrMCPSessionID, SessionRef(sessionID)))
	}
	if c.EndUser != "" {
		attrs = append(attrs, str(AttrEndUserID, c.EndUser))
	}
	if t.recordContent && c.Arguments != nil {
		attrs = append(attrs, str(AttrGenAIToolArguments, contentString(c.Arguments)))
	}
	ctx, span := t.tracer.Start(ctx, clean(MethodToolsCall+" "+c.Tool),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attrs...))
	ctx = context.WithValue(ctx, toolCallKey, c)
	return ctx, &Span{t: t, span: span, start: time.Now()}
}

// StartClient starts the CLIENT span of a request to an upstream, named
// "{method} {tool}". Blank fields of u are filled from the ToolCall that
// StartTool put in ctx. Pass the returned context to Inject so the
// upstream continues this trace.
func (t *Telemetry) StartClient(ctx context.Context, u Upstream) (context.Context, *Span) {
	if !t.Enabled() {
		return ctx, nil
	}
	if c, ok := ctx.Value(toolCallKey).(ToolCall); ok {
		u.Server = cmp.Or(u.Server, c.Server)
		u.Tool = cmp.Or(u.Tool, c.Tool)
		u.Class = cmp.Or(u.Class, c.Class)
		u.Via = cmp.Or(u.Via, c.Via)
	}
	u.Method = cmp.Or(u.Method, MethodToolsCall)
	name := u.Method
	attrs := make([]attribute.KeyValue, 0, 14)
	attrs = append(attrs, str(AttrMCPMethodName, u.Method))
	if u.Method == MethodToolsCall {
		if u.Tool != "" {
			name += " " + u.Tool
			attrs = append(attrs, str(AttrGenAIToolName, u.Tool))
		}
		attrs = append(attrs, str(AttrGenAIOperationName, OperationExecuteTool))
	}
	attrs = protocolAttrs(attrs, u.ProtocolVersion, u.Transport)
	if isHTTPTransport(u.Transport) {
		if host, port, ok := hostPort(u.URL); ok {
			attrs = append(attrs, str(AttrServerAddress, host))
			if port != 0 {
				attrs = append(attrs, attribute.Int(AttrServerPort, port))
			}
		}
	}
	attrs = append(attrs, toolAttrs(u.Server, u.Class, u.Via)...)
	metricAttrs := attrs[:len(attrs):len(attrs)] // see StartServer
	attrs = requestAttrs(attrs, u.RequestID, u.SessionID)
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, clean(name),
		oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(attrs...),
		oteltrace.WithTimestamp(start))
	return ctx, &Span{t: t, span: span, hist: t.clientDur, start: start, metricAttrs: metricAttrs}
}

// toolAttrs are the gateway attributes of a call, skipping blanks.
func toolAttrs(server string, class config.Class, via string) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 3)
	if server != "" {
		kv = append(kv, str(AttrUpstream, server))
	}
	if via != "" {
		kv = append(kv, str(AttrBridgeVia, via))
	}
	if class != "" {
		kv = append(kv, str(AttrToolClass, string(class)))
	}
	return kv
}

// annotateTool records the resolved tool on a server span and in its
// metric attributes.
func (s *Span) annotateTool(tool string, gw []attribute.KeyValue) {
	kv := append([]attribute.KeyValue{str(AttrGenAIToolName, tool)}, gw...)
	s.span.SetAttributes(kv...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metricAttrs = setAttrs(s.metricAttrs, kv...)
}

// setAttrs replaces or appends kv in attrs.
func setAttrs(attrs []attribute.KeyValue, kv ...attribute.KeyValue) []attribute.KeyValue {
next:
	for _, n := range kv {
		for i := range attrs {
			if attrs[i].Key == n.Key {
				attrs[i] = n
				continue next
			}
		}
		attrs = append(attrs, n)
	}
	return attrs
}

// SetSearch records a tool_search: the query's length, the limit asked
// for and the hits returned. The query text itself is recorded only with
// record_content, since it may hold personal data.
func (s *Span) SetSearch(queryLen, limit, hits int, query string) {
	if s == nil {
		return
	}
	kv := []attribute.KeyValue{
		attribute.Int(AttrSearchQueryLength, queryLen),
		attribute.Int(AttrSearchLimit, limit),
		attribute.Int(AttrSearchHits, hits),
	}
	if s.t.recordContent {
		kv = append(kv, str(AttrSearchQuery, truncate(query)))
	}
	s.span.SetAttributes(kv...)
}

// SetSearchSemantic records how the semantic rerank ranked a
// tool_search: status is reranked, lexical or fallback; reason says why
// it did not rerank (a failure's kind, never a URL or key); embed is the
// time the query's embedding took (0 when it was not asked for).
func (s *Span) SetSearchSemantic(status, reason string, embed time.Duration) {
	if s == nil {
		return
	}
	kv := []attribute.KeyValue{str(AttrSearchSemantic, status)}
	if reason != "" {
		kv = append(kv, str(AttrSearchSemanticReason, reason))
	}
	if embed > 0 {
		kv = append(kv, attribute.Float64(AttrSearchSemanticMillis, float64(embed.Microseconds())/1000))
	}
	s.span.SetAttributes(kv...)
}

// SetDenied records that a hook denied the call: toolbridge.hook.denied_by
// names it, and an event carries the reason the model was given. End the
// span with EndResult(true): the model gets the denial as a tool error.
func (s *Span) SetDenied(hook, reason string) {
	if s == nil {
		return
	}
	s.span.SetAttributes(str(AttrHookDeniedBy, hook))
	s.span.AddEvent("denied by hook", oteltrace.WithAttributes(str("toolbridge.hook.reason", truncate(reason))))
}

// SetResult records a tool's result (as JSON) when record_content is on;
// otherwise it does nothing and costs nothing.
func (s *Span) SetResult(result any) {
	if s == nil || !s.t.recordContent || result == nil {
		return
	}
	s.span.SetAttributes(str(AttrGenAIToolResult, contentString(result)))
}

// SetAttributes adds attributes to the span (not to its metric). String
// values are made valid UTF-8 (see clean).
func (s *Span) SetAttributes(kv ...attribute.KeyValue) {
	if s == nil {
		return
	}
	for i, a := range kv {
		if a.Value.Type() == attribute.STRING {
			if v := a.Value.AsString(); !utf8.ValidString(v) {
				kv[i] = attribute.String(string(a.Key), clean(v))
			}
		}
	}
	s.span.SetAttributes(kv...)
}

// TraceID is the span's trace id in hex, for logs and the audit line; ""
// for a nil span.
func (s *Span) TraceID() string {
	if s == nil {
		return ""
	}
	if sc := s.span.SpanContext(); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// End ends a successful span.
func (s *Span) End() { s.EndResult(false) }

// EndResult ends the span of a request that got a result. isError is the
// CallToolResult's isError: the span then gets status ERROR and
// error.type=tool_error.
func (s *Span) EndResult(isError bool) {
	if s == nil {
		return
	}
	if isError {
		s.finish(ErrorTypeTool, "", "the tool returned isError")
		return
	}
	s.finish("", "", "")
}

// EndError ends the span of a request that failed. code is the JSON-RPC
// error code (error.type and rpc.response.status_code are its decimal
// string); 0 means there was none, and error.type is then "timeout",
// "cancelled" or "_OTHER" from err. err's text becomes the status
// description.
func (s *Span) EndError(code int, err error) {
	if s == nil {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if code != 0 {
		c := strconv.Itoa(code)
		s.finish(c, c, msg)
		return
	}
	s.finish(ErrorType(err), "", msg)
}

// ErrorType is the error.type of a failure without a JSON-RPC code.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ErrorTypeTimeout
	case errors.Is(err, context.Canceled):
		return ErrorTypeCanceled
	}
	return ErrorTypeOther
}

// finish sets the status, records the duration and ends the span once.
func (s *Span) finish(errType, statusCode, msg string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	attrs := s.metricAttrs
	s.mu.Unlock()

	end := time.Now()
	if errType != "" {
		kv := []attribute.KeyValue{str(AttrErrorType, errType)}
		if statusCode != "" {
			kv = append(kv, str(AttrRPCStatusCode, statusCode))
		}
		s.span.SetAttributes(kv...)
		s.span.SetStatus(codes.Error, msg)
		attrs = append(attrs, kv...)
	}
	s.span.End(oteltrace.WithTimestamp(end))
	if s.hist != nil {
		s.hist.Record(context.Background(), end.Sub(s.start).Seconds(), metric.WithAttributeSet(attribute.NewSet(attrs...)))
	}
}

// contentString renders recorded content as JSON, bounded in size.
func contentString(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		s = string(x)
	case json.RawMessage:
		s = string(x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			s = fmt.Sprintf("%v", v)
		} else {
			s = string(b)
		}
	}
	return truncate(s)
}

// truncate bounds s to maxContentBytes, marking the cut, and makes it
// valid UTF-8 (see clean).
func truncate(s string) string {
	if len(s) <= maxContentBytes {
		return clean(s)
	}
	cut := maxContentBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return clean(s[:cut]) + "…(truncated)"
}

// clean makes a client-supplied string valid UTF-8. OTLP encodes
// attributes as protobuf strings, and one invalid byte would make the
// whole batch fail to marshal: every span in it would be lost.
func clean(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// protocolAttrs appends the attributes of the MCP protocol version and the
// transport a span's message travelled over; both kinds of span have them.
func protocolAttrs(attrs []attribute.KeyValue, version, transport string) []attribute.KeyValue {
	if version != "" {
		attrs = append(attrs, str(AttrMCPProtocolVersion, version))
	}
	if nt := networkTransport(transport); nt != "" {
		attrs = append(attrs, str(AttrNetworkTransport, nt))
	}
	if isHTTPTransport(transport) {
		attrs = append(attrs, str(AttrNetworkProtocolName, "http"))
	}
	return attrs
}

// requestAttrs appends the high-cardinality attributes of one request: its
// JSON-RPC id and its session. Spans get them; metrics must not.
func requestAttrs(attrs []attribute.KeyValue, id any, session string) []attribute.KeyValue {
	if id := requestIDString(id); id != "" {
		attrs = append(attrs, str(AttrJSONRPCRequestID, id))
	}
	if session != "" {
		attrs = append(attrs, str(AttrMCPSessionID, SessionRef(session)))
	}
	return attrs
}
