package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolbridge/toolbridge/trace"
)

// readAudit parses every line of an audit file, failing on a bad one.
func readAudit(t *testing.T, path string) []AuditRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []AuditRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %d %q: %v", len(recs)+1, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestAuditConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := OpenAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	const workers, calls = 16, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				c := Call{Server: fmt.Sprintf("s%d", w), Tool: fmt.Sprintf("t%d", i), Via: trace.ViaToolCall, SessionID: "sess"}
				// Long errors make torn lines likely if writes were split.
				a.AfterCall(context.Background(), c, Result{Err: errors.New(string(make([]byte, 2000))), Duration: time.Duration(i) * time.Millisecond})
			}
		})
	}
	wg.Wait()
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recs := readAudit(t, path)
	if len(recs) != workers*calls {
		t.Fatalf("%d lines, want %d", len(recs), workers*calls)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Server+"::"+r.Tool] = true
		if r.Outcome != OutcomeError || r.Session != trace.SessionRef("sess") || r.Time.IsZero() {
			t.Fatalf("bad record %+v", r)
		}
	}
	if len(seen) != workers*calls {
		t.Errorf("%d distinct calls logged, want %d", len(seen), workers*calls)
	}
	if err := a.Write(AuditRecord{}); err == nil {
		t.Errorf("Write after Close succeeded")
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestAuditRecordFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := OpenAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	// Appends: an existing file keeps its lines.
	if err := a.Write(AuditRecord{Server: "old", Tool: "x", Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if a, err = OpenAudit(path); err != nil {
		t.Fatal(err)
	}

	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, tool := tp.Tracer("test").Start(context.Background(), "tools/call create_issue")
	a.AfterCall(ctx, Call{Server: "github", Tool: "create_issue", Via: trace.ViaToolCall, Class: "deferrable", SessionID: "mcp-session-LIVE1"},
		Result{IsError: true, Duration: 2500 * time.Microsecond})
	tool.End()
	a.AfterCall(context.Background(), Call{Server: "fs", Tool: "rm"}, Result{Denied: true, Reason: "no rm"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("audit file mode = %v, want 0600", info.Mode().Perm())
	}

	// Whoever reads the audit log must not be able to continue a live
	// session: the line carries a hash of the id, never the id.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "LIVE1") {
		t.Errorf("the audit log holds the session id:\n%s", raw)
	}
	recs := readAudit(t, path)
	if len(recs) != 3 || recs[0].Server != "old" {
		t.Fatalf("records = %+v", recs)
	}
	got := recs[1]
	if got.Server != "github" || got.Tool != "create_issue" || got.Via != "tool_call" || got.Class != "deferrable" ||
		got.Session != trace.SessionRef("mcp-session-LIVE1") || got.Outcome != OutcomeToolError || got.DurationMS != 2.5 {
		t.Errorf("record = %+v", got)
	}
	if got.TraceID != tool.SpanContext().TraceID().String() || len(got.SpanID) != 16 {
		t.Errorf("trace %q span %q, want the tool span's trace %s", got.TraceID, got.SpanID, tool.SpanContext().TraceID())
	}
	if recs[2].Outcome != OutcomeDenied || recs[2].Error != "no rm" || recs[2].TraceID != "" {
		t.Errorf("denied record = %+v", recs[2])
	}
}
