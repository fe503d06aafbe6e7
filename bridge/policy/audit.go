package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolbridge/toolbridge/trace"
)

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	// Time is when the call ended, RFC 3339 in UTC.
	Time time.Time `json:"time"`
	// Event is absent for a tool call and EventTrust for a change in a
	// tool's trust standing (then Outcome is its kind and Error its reason).
	Event string `json:"event,omitempty"`
	// Session is the client's MCP session, if any, as trace.SessionRef
	// gives it: the id itself would let a reader of the log continue a
	// live session.
	Session string `json:"session,omitempty"`
	// Subject is the authenticated caller (serve.oauth), if any.
	Subject string `json:"subject,omitempty"`
	// Server and Tool are the real tool, whatever the client called.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// ExposedName is the name the client called the tool by, when a
	// tools: rule renamed it.
	ExposedName string `json:"exposed_name,omitempty"`
	// Via is tool_call or direct; Class the tool's class.
	Via   string `json:"via,omitempty"`
	Class string `json:"class,omitempty"`
	// Annotations are the tool's MCP annotations as its server sent them.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// DurationMS is how long the call took.
	DurationMS float64 `json:"duration_ms"`
	// Outcome is ok, tool_error, error or denied.
	Outcome string `json:"outcome"`
	// Error is the failure or the deny reason.
	Error string `json:"error,omitempty"`
	// TraceID and SpanID tie the line to its trace, when one is recorded.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

// Audit appends one JSON line per tool call to a file. It is a Hook that
// only acts in AfterCall. Each line is a single write to a file opened
// with O_APPEND, under a mutex: lines from concurrent calls never
// interleave, and a crash loses at most the line being written.
// Arguments and results are not written: the audit log says who called
// what and how it went, not what the data was.
type Audit struct {
	mu   sync.Mutex
	f    *os.File
	path string
	err  error // first write error, reported by Close
}

// OpenAudit opens (creating it, mode 0600) the audit file for appending.
func OpenAudit(path string) (*Audit, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	return &Audit{f: f, path: path}, nil
}

// String names the hook in logs.
func (a *Audit) String() string { return "audit " + a.path }

// BeforeCall allows: the audit log only records.
func (a *Audit) BeforeCall(context.Context, Call) (Decision, error) { return Decision{}, nil }

// AfterCall appends the call's line. The trace id comes from the span in
// ctx.
func (a *Audit) AfterCall(ctx context.Context, c Call, r Result) {
	rec := AuditRecord{
		Time:        time.Now().UTC(),
		Session:     trace.SessionRef(c.SessionID),
		Subject:     c.Subject,
		Server:      c.Server,
		Tool:        c.Tool,
		ExposedName: c.Exposed,
		Via:         c.Via,
		Class:       string(c.Class),
		Annotations: c.Annotations,
		DurationMS:  float64(r.Duration) / float64(time.Millisecond),
		Outcome:     r.Outcome(),
	}
	switch {
	case r.Err != nil:
		rec.Error = r.Err.Error()
	case r.Denied:
		rec.Error = r.Reason
	}
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() {
		rec.TraceID, rec.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	_ = a.Write(rec)
}

// Write appends rec as one line. Errors are kept for Close as well as
// returned: AfterCall has nowhere to return them.
func (a *Audit) Write(rec AuditRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding audit record: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return errors.New("writing audit log: closed")
	}
	if _, err := a.f.Write(line); err != nil {
		err = fmt.Errorf("writing audit log %s: %w", a.path, err)
		if a.err == nil {
			a.err = err
		}
		return err
	}
	return nil
}

// Close syncs and closes the file. It returns the first write error, if
// any, so a full disk does not go unnoticed.
func (a *Audit) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	errs := []error{a.err}
	if err := a.f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("syncing audit log %s: %w", a.path, err))
	}
	if err := a.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing audit log %s: %w", a.path, err))
	}
	a.f = nil
	return errors.Join(errs...)
}
