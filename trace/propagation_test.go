package trace

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	oteltrace "go.opentelemetry.io/otel/trace"
)

const (
	clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	clientTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID      = "00f067aa0ba902b7"
)

func TestExtract(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name      string
		meta      map[string]any
		header    http.Header
		wantTrace string // "" means no valid span context
		wantSpan  string
		wantBag   string
	}{
		{name: "nothing"},
		{name: "meta", meta: map[string]any{"traceparent": clientTraceparent}, wantTrace: clientTraceID, wantSpan: clientSpanID},
		{name: "header", header: hdr("traceparent", clientTraceparent), wantTrace: clientTraceID, wantSpan: clientSpanID},
		{
			name:      "meta wins over header",
			meta:      map[string]any{"traceparent": clientTraceparent},
			header:    hdr("traceparent", "00-11111111111111111111111111111111-2222222222222222-01"),
			wantTrace: clientTraceID, wantSpan: clientSpanID,
		},
		{
			name:      "header used when meta has none",
			meta:      map[string]any{"progressToken": 3},
			header:    hdr("traceparent", clientTraceparent),
			wantTrace: clientTraceID, wantSpan: clientSpanID,
		},
		{name: "malformed traceparent is ignored", meta: map[string]any{"traceparent": "00-zz-yy-01"}},
		{name: "all-zero trace id is ignored", meta: map[string]any{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}},
		{name: "non-string traceparent is ignored", meta: map[string]any{"traceparent": 42}},
		{name: "nested object is ignored", meta: map[string]any{"traceparent": map[string]any{"a": 1}}},
		{
			name:      "baggage",
			meta:      map[string]any{"traceparent": clientTraceparent, "baggage": "userId=alice,isProduction=false"},
			wantTrace: clientTraceID, wantSpan: clientSpanID, wantBag: "alice",
		},
		{name: "baggage alone", meta: map[string]any{"baggage": "userId=alice"}, wantBag: "alice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := Extract(context.Background(), tc.meta, tc.header)
			sc := oteltrace.SpanContextFromContext(ctx)
			if tc.wantTrace == "" {
				if sc.IsValid() {
					t.Fatalf("extracted %v, want nothing", sc)
				}
			} else {
				if sc.TraceID().String() != tc.wantTrace || sc.SpanID().String() != tc.wantSpan || !sc.IsRemote() {
					t.Fatalf("extracted trace %s span %s remote %v, want %s %s remote", sc.TraceID(), sc.SpanID(), sc.IsRemote(), tc.wantTrace, tc.wantSpan)
				}
			}
			if got := baggage.FromContext(ctx).Member("userId").Value(); got != tc.wantBag {
				t.Errorf("baggage userId = %q, want %q", got, tc.wantBag)
			}
		})
	}
}

func TestInject(t *testing.T) {
	parent := Extract(context.Background(), map[string]any{
		"traceparent": clientTraceparent,
		"tracestate":  "rojo=00f067aa0ba902b7",
		"baggage":     "userId=alice",
	}, nil)

	t.Run("nil map is allocated", func(t *testing.T) {
		meta := Inject(parent, nil)
		if meta["traceparent"] != clientTraceparent {
			t.Errorf("traceparent = %v", meta["traceparent"])
		}
		if meta["tracestate"] != "rojo=00f067aa0ba902b7" {
			t.Errorf("tracestate = %v, want the parent's", meta["tracestate"])
		}
		if meta["baggage"] != "userId=alice" {
			t.Errorf("baggage = %v", meta["baggage"])
		}
	})
	t.Run("client keys are replaced, others kept", func(t *testing.T) {
		r := newRecorder(t, false)
		ctx, s := r.tel.StartServer(parent, Request{Method: "tools/call", Target: "x"})
		defer s.End()
		meta := map[string]any{
			"traceparent":   "00-11111111111111111111111111111111-2222222222222222-01",
			"tracestate":    "stale=1",
			"progressToken": "p1",
		}
		got := r.tel.Inject(ctx, meta)
		want := "00-" + clientTraceID + "-" + s.span.SpanContext().SpanID().String() + "-01"
		if got["traceparent"] != want {
			t.Errorf("traceparent = %v, want %s (our span under the client's trace)", got["traceparent"], want)
		}
		if got["tracestate"] != "rojo=00f067aa0ba902b7" {
			t.Errorf("tracestate = %v, want the trace's own, not the stale one", got["tracestate"])
		}
		if got["progressToken"] != "p1" {
			t.Errorf("other _meta keys were touched: %v", got)
		}
	})
	t.Run("nothing to inject", func(t *testing.T) {
		if meta := Inject(context.Background(), nil); meta != nil {
			t.Errorf("Inject without context = %v, want nil", meta)
		}
		meta := map[string]any{"traceparent": "keep"}
		Inject(context.Background(), meta)
		if meta["traceparent"] != "keep" {
			t.Errorf("Inject without context changed _meta: %v", meta)
		}
	})
}

// FuzzExtract feeds arbitrary _meta values and headers through Extract
// and Inject: nothing may panic, and whatever is injected must extract to
// the same span context.
func FuzzExtract(f *testing.F) {
	f.Add(clientTraceparent, "rojo=1", "userId=alice", clientTraceparent)
	f.Add("00-zz-yy-01", "", "%%%", "")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "a=b,c", "k=v;prop", "garbage")
	f.Fuzz(func(t *testing.T, tp, ts, bag, header string) {
		meta := map[string]any{"traceparent": tp, "tracestate": ts, "baggage": bag}
		h := http.Header{}
		h.Set("traceparent", header)
		ctx := Extract(context.Background(), meta, h)
		out := Inject(ctx, nil)
		back := Extract(context.Background(), out, nil)
		a, b := oteltrace.SpanContextFromContext(ctx), oteltrace.SpanContextFromContext(back)
		if a.TraceID() != b.TraceID() || a.SpanID() != b.SpanID() || a.TraceFlags() != b.TraceFlags() {
			t.Fatalf("round trip changed the span context: %v -> %v", a, b)
		}
	})
}
