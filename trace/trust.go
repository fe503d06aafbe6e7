package trace

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Trust-change kinds, as spans and the audit log name them.
const (
	// TrustQuarantined: a tool is held (mode pin): its definition changed
	// since it was pinned, its server is new under new_servers:
	// quarantine, or it looks suspicious under block_suspicious.
	TrustQuarantined = "quarantined"
	// TrustWarned: the same finding under mode warn; the tool stays usable.
	TrustWarned = "warned"
	// TrustReleased: a tool that was held is served again (approved).
	TrustReleased = "released"
	// TrustPinned: a tool was pinned on first use.
	TrustPinned = "pinned"
)

// Trust-change attributes and the span event.
const (
	// AttrTrustKind is one of the Trust* kinds.
	AttrTrustKind = "toolbridge.trust.kind"
	// AttrTrustReason says what changed and how to approve it.
	AttrTrustReason = "toolbridge.trust.reason"
	// EventTrustChange is the span event that records a change.
	EventTrustChange = "toolbridge.trust.change"
)

// TrustChange is a change in one tool's trust standing.
type TrustChange struct {
	Server, Tool string
	// Kind is TrustQuarantined, TrustWarned, TrustReleased or TrustPinned.
	Kind string
	// Reason says what changed and the command that approves it.
	Reason string
}

// reviewEvents bounds the events of one review span: the OTel SDK keeps
// 128 per span by default and drops the rest, so a server with more
// changes gets one span per 128.
const reviewEvents = 128

// Review-span attributes.
const (
	// AttrTrustChanges is how many tools' standing changed in the review
	// (in this span, for a review split over several).
	AttrTrustChanges = "toolbridge.trust.changes"
	// AttrTrustPart is "2/3" when a review is split over several spans.
	AttrTrustPart = "toolbridge.trust.part"
)

// RecordTrustReview records one server's trust review as one span
// "toolbridge.trust.review SERVER", with an event per tool whose standing
// changed (its name, the kind and the reason) and a count per kind. A
// first start that pins the 99 tools of 13 servers records 13 spans, not
// 99 root spans that push the traces a user came to see off Jaeger's
// first page. Nothing happens when telemetry is off or nothing changed.
func (t *Telemetry) RecordTrustReview(ctx context.Context, server string, changes []TrustChange) {
	if !t.Enabled() || len(changes) == 0 {
		return
	}
	parts := (len(changes) + reviewEvents - 1) / reviewEvents
	for part := range parts {
		chunk := changes[part*reviewEvents : min(len(changes), (part+1)*reviewEvents)]
		kinds := map[string]int{}
		for _, c := range chunk {
			kinds[c.Kind]++
		}
		attrs := []attribute.KeyValue{str(AttrUpstream, server), attribute.Int(AttrTrustChanges, len(chunk))}
		for _, kind := range []string{TrustPinned, TrustQuarantined, TrustWarned, TrustReleased} {
			if n := kinds[kind]; n > 0 {
				attrs = append(attrs, attribute.Int("toolbridge.trust."+kind, n))
			}
		}
		if parts > 1 {
			attrs = append(attrs, str(AttrTrustPart, fmt.Sprintf("%d/%d", part+1, parts)))
		}
		_, span := t.tracer.Start(ctx, clean("toolbridge.trust.review "+server),
			oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(attrs...))
		for _, c := range chunk {
			span.AddEvent(EventTrustChange, oteltrace.WithAttributes(
				str(AttrGenAIToolName, c.Tool),
				str(AttrTrustKind, c.Kind),
				str(AttrTrustReason, c.Reason),
			))
		}
		span.End()
	}
}
