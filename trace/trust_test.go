package trace

import (
	"context"
	"fmt"
	"testing"
)

// TestRecordTrustReview: one span per server's review, an event per tool
// with its name, kind and reason, and counts per kind on the span.
func TestRecordTrustReview(t *testing.T) {
	r := newRecorder(t, false)
	r.tel.RecordTrustReview(context.Background(), "github", []TrustChange{
		{Server: "github", Tool: "create_issue", Kind: TrustQuarantined, Reason: "its description changed"},
		{Server: "github", Tool: "list_issues", Kind: TrustPinned, Reason: "pinned on first use as sha256:ab"},
		{Server: "github", Tool: "get_issue", Kind: TrustPinned, Reason: "pinned on first use as sha256:cd"},
	})
	ended := r.spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans, want 1 for the server's review", len(ended))
	}
	s := ended[0]
	if s.Name() != "toolbridge.trust.review github" {
		t.Errorf("span name = %q", s.Name())
	}
	spanAttrs := map[string]string{}
	for _, kv := range s.Attributes() {
		spanAttrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, v := range map[string]string{AttrUpstream: "github", AttrTrustChanges: "3", "toolbridge.trust.pinned": "2", "toolbridge.trust.quarantined": "1"} {
		if spanAttrs[k] != v {
			t.Errorf("span attribute %s = %q, want %q (all: %v)", k, spanAttrs[k], v, spanAttrs)
		}
	}
	if _, ok := spanAttrs[AttrTrustPart]; ok {
		t.Errorf("a review in one span has %s", AttrTrustPart)
	}
	events := s.Events()
	if len(events) != 3 {
		t.Fatalf("%d events, want one per tool: %+v", len(events), events)
	}
	got := map[string]string{}
	for _, kv := range events[0].Attributes {
		got[string(kv.Key)] = kv.Value.AsString()
	}
	want := map[string]string{AttrGenAIToolName: "create_issue", AttrTrustKind: TrustQuarantined, AttrTrustReason: "its description changed"}
	for k, v := range want {
		if events[0].Name != EventTrustChange || got[k] != v {
			t.Errorf("event %q attribute %s = %q, want %s with %q", events[0].Name, k, got[k], EventTrustChange, v)
		}
	}
	// Nothing changed: no span. Off: nothing, and no panic on a nil Telemetry.
	r.tel.RecordTrustReview(context.Background(), "quiet", nil)
	if n := len(r.spans.Ended()); n != 1 {
		t.Errorf("a review without changes recorded a span (%d spans)", n)
	}
	var off *Telemetry
	off.RecordTrustReview(context.Background(), "a", []TrustChange{{Server: "a", Tool: "b"}})
}

// TestRecordTrustReviewSplits: a review with more changes than a span
// keeps events goes into several spans, each saying which part it is, and
// no event is dropped.
func TestRecordTrustReviewSplits(t *testing.T) {
	r := newRecorder(t, false)
	changes := make([]TrustChange, reviewEvents+5)
	for i := range changes {
		changes[i] = TrustChange{Server: "big", Tool: fmt.Sprintf("t%03d", i), Kind: TrustPinned, Reason: "pinned on first use"}
	}
	r.tel.RecordTrustReview(context.Background(), "big", changes)
	ended := r.spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans, want 2", len(ended))
	}
	events := 0
	for i, s := range ended {
		events += len(s.Events())
		part := ""
		for _, kv := range s.Attributes() {
			if string(kv.Key) == AttrTrustPart {
				part = kv.Value.AsString()
			}
		}
		if want := fmt.Sprintf("%d/2", i+1); part != want {
			t.Errorf("span %d: %s = %q, want %q", i, AttrTrustPart, part, want)
		}
		if s.DroppedEvents() != 0 {
			t.Errorf("span %d dropped %d events", i, s.DroppedEvents())
		}
	}
	if events != len(changes) {
		t.Errorf("%d events in all, want %d", events, len(changes))
	}
}
