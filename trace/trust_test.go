package trace

import (
	"context"
	"testing"
)

func TestRecordTrust(t *testing.T) {
	r := newRecorder(t, false)
	r.tel.RecordTrust(context.Background(), TrustChange{Server: "github", Tool: "create_issue", Kind: TrustQuarantined, Reason: "its description changed"})
	ended := r.spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans, want 1", len(ended))
	}
	s := ended[0]
	if s.Name() != "toolbridge.trust github::create_issue" {
		t.Errorf("span name = %q", s.Name())
	}
	events := s.Events()
	if len(events) != 1 || events[0].Name != EventTrustChange {
		t.Fatalf("events = %+v, want one %s", events, EventTrustChange)
	}
	got := map[string]string{}
	for _, kv := range events[0].Attributes {
		got[string(kv.Key)] = kv.Value.AsString()
	}
	want := map[string]string{AttrUpstream: "github", AttrGenAIToolName: "create_issue", AttrTrustKind: TrustQuarantined, AttrTrustReason: "its description changed"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("event attribute %s = %q, want %q", k, got[k], v)
		}
	}
	// Off: nothing, and no panic on a nil Telemetry.
	var off *Telemetry
	off.RecordTrust(context.Background(), TrustChange{Server: "a", Tool: "b"})
}
