package trace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolbridge/toolbridge/config/toolid"
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

// RecordTrust records a change as a span "toolbridge.trust server::tool"
// with one event carrying the kind and the reason. Nothing happens when
// telemetry is off.
func (t *Telemetry) RecordTrust(ctx context.Context, c TrustChange) {
	if !t.Enabled() {
		return
	}
	attrs := []attribute.KeyValue{
		str(AttrUpstream, c.Server),
		str(AttrGenAIToolName, c.Tool),
		str(AttrTrustKind, c.Kind),
	}
	_, span := t.tracer.Start(ctx, clean("toolbridge.trust "+toolid.Join(c.Server, c.Tool)),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(attrs...))
	span.AddEvent(EventTrustChange, oteltrace.WithAttributes(append(attrs, str(AttrTrustReason, c.Reason))...))
	span.End()
}
