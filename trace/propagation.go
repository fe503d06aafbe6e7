package trace

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// The W3C keys carried in params._meta. SEP-414 writes them unprefixed.
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
	metaBaggage     = "baggage"
)

// metaCarrier adapts an MCP params._meta bag to the propagators. Values
// that are not strings are ignored: _meta comes from the client and may
// hold anything.
type metaCarrier map[string]any

// Get returns the string value of key, or "".
func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set stores value under key.
func (m metaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the keys whose values are strings.
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// hasTraceKeys reports whether meta carries any propagation key, so the
// common case (no trace context at all) costs a few map lookups.
func hasTraceKeys(meta map[string]any) bool {
	if len(meta) == 0 {
		return false
	}
	_, tp := meta[metaTraceparent]
	_, bg := meta[metaBaggage]
	return tp || bg
}

// hasTraceHeaders reports whether header carries traceparent or baggage.
func hasTraceHeaders(header http.Header) bool {
	if len(header) == 0 {
		return false
	}
	return header.Get(metaTraceparent) != "" || header.Get(metaBaggage) != ""
}

// extract applies the W3C trace-context and baggage propagators. They are
// zero-size values built on the spot, so there is no package-level
// propagator (and no otel global) to configure.
func extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	return propagation.Baggage{}.Extract(ctx, carrier)
}

// Extract returns ctx carrying the remote span context and baggage sent by
// the client. params._meta is the MCP carrier and wins; the HTTP headers of
// a streamable-HTTP request are used when _meta has no traceparent. Either
// may be nil. Malformed values are ignored, never an error: a bad
// traceparent from a client must not fail its call.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	ctx, _ = extractBoth(ctx, meta, header)
	return ctx
}

// extractBoth is Extract that also returns the HTTP-level span context
// when _meta and the headers name different parents, so the server span
// can link the transport context as the MCP conventions recommend.
func extractBoth(ctx context.Context, meta map[string]any, header http.Header) (context.Context, oteltrace.SpanContext) {
	var httpSC oteltrace.SpanContext
	if hasTraceHeaders(header) {
		ctx = extract(ctx, propagation.HeaderCarrier(header))
		httpSC = oteltrace.SpanContextFromContext(ctx)
	}
	if hasTraceKeys(meta) {
		ctx = extract(ctx, metaCarrier(meta))
	}
	if sc := oteltrace.SpanContextFromContext(ctx); httpSC.IsValid() && !sc.Equal(httpSC) {
		return ctx, httpSC
	}
	return ctx, oteltrace.SpanContext{}
}

// Inject writes ctx's span context and baggage into meta, the
// params._meta of a request about to go upstream, replacing any trace keys
// the client sent (the upstream's parent is our client span, not the
// client's). It returns meta, or a new map when meta is nil and there is
// something to write, so callers can do
//
//	req.Params.Meta.AdditionalFields = trace.Inject(ctx, req.Params.Meta.AdditionalFields)
//
// With no valid span context and no baggage it writes nothing and removes
// nothing.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	sc := oteltrace.SpanContextFromContext(ctx)
	if !sc.IsValid() && !hasBaggage(ctx) {
		return meta
	}
	if meta == nil {
		meta = make(map[string]any, 3)
	}
	if sc.IsValid() {
		// A stale tracestate from the client must not ride along with our
		// traceparent.
		delete(meta, metaTracestate)
	}
	carrier := metaCarrier(meta)
	propagation.TraceContext{}.Inject(ctx, carrier)
	propagation.Baggage{}.Inject(ctx, carrier)
	return meta
}

// hasBaggage reports whether ctx carries W3C baggage members.
func hasBaggage(ctx context.Context) bool {
	return baggage.FromContext(ctx).Len() > 0
}
