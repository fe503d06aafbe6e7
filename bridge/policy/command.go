package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// Hook events (config.Hook.Events).
const (
	EventBefore = "before"
	EventAfter  = "after"
)

// Command hook exit codes.
const (
	// ExitAllow lets the call through.
	ExitAllow = 0
	// ExitDeny stops the call; stderr is the reason the model sees.
	ExitDeny = 2
)

// DefaultHookTimeout bounds one hook run when the config gives none.
const DefaultHookTimeout = 5 * time.Second

// maxReasonBytes bounds the stderr kept from a hook: it becomes the
// reason the model reads, and a chatty hook must not flood the context.
const maxReasonBytes = 4 << 10

// waitDelay is how long a finished (or killed) hook's pipes may stay open
// through a grandchild before they are closed under it.
const waitDelay = 500 * time.Millisecond

// CommandHook runs a command around matching tool calls: the call as JSON
// on stdin; exit 0 allows, exit 2 denies with stderr as the reason, any
// other exit (or a timeout, or a command that cannot start) is logged and
// allows. The process runs in its own process group, killed as a whole on
// timeout.
//
// stdin is one JSON object:
//
//	{"event":"before","server":"github","tool":"create_issue",
//	 "arguments":{...},"session":"...","class":"deferrable","via":"tool_call",
//	 "annotations":{"readOnlyHint":false,"destructiveHint":false}}
//
// "session" is trace.SessionRef of the client's session id, never the id
// itself: a hook may log it, and the id would let a reader take over the
// session.
//
// "annotations" are the tool's MCP annotations as its server sent them,
// absent when it sent none.
// After events add "outcome" (ok, tool_error, error, denied),
// "is_error", "duration_ms", "error" and "result". The environment also
// carries TOOLBRIDGE_HOOK_EVENT, TOOLBRIDGE_SERVER and TOOLBRIDGE_TOOL for
// hooks that would rather not parse JSON. stdout is discarded.
type CommandHook struct {
	match   string
	command string
	args    []string
	before  bool
	after   bool
	timeout time.Duration
	logger  *slog.Logger
}

// NewCommandHook validates cfg: the command must be found on PATH (or be
// a path), the glob must parse and events must be before and/or after.
func NewCommandHook(cfg config.Hook, logger *slog.Logger) (*CommandHook, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("hook has no command")
	}
	if _, err := exec.LookPath(cfg.Command); err != nil {
		return nil, fmt.Errorf("finding hook command %q: %w", cfg.Command, err)
	}
	match := cfg.Match
	if match == "" {
		match = "*"
	}
	if _, err := path.Match(match, ""); err != nil {
		return nil, fmt.Errorf("hook match %q: %w (use * and ? wildcards and [..] classes)", match, err)
	}
	h := &CommandHook{
		match:   match,
		command: cfg.Command,
		args:    slices.Clone(cfg.Args),
		timeout: cfg.Timeout,
		logger:  logger,
	}
	if h.timeout <= 0 {
		h.timeout = DefaultHookTimeout
	}
	events := cfg.Events
	if len(events) == 0 {
		events = []string{EventBefore}
	}
	for _, e := range events {
		switch strings.ToLower(strings.TrimSpace(e)) {
		case EventBefore:
			h.before = true
		case EventAfter:
			h.after = true
		default:
			return nil, fmt.Errorf("hook %q: event %q: want %s or %s", cfg.Command, e, EventBefore, EventAfter)
		}
	}
	return h, nil
}

// String names the hook in logs.
func (h *CommandHook) String() string { return "command " + h.command }

// Matches reports whether the hook applies to c. A glob containing "::"
// is matched against "server::tool"; one without is matched against the
// tool name alone, so "delete_*" covers every server.
func (h *CommandHook) Matches(c Call) bool {
	return globMatch(h.match, c)
}

// globMatch matches pattern against c as Matches describes.
func globMatch(pattern string, c Call) bool {
	subject := c.Tool
	if strings.Contains(pattern, toolid.Separator) {
		subject = c.ID()
	}
	ok, err := path.Match(pattern, subject)
	return err == nil && ok
}

// hookEvent is the JSON a hook reads on stdin.
type hookEvent struct {
	Event     string          `json:"event"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Session   string          `json:"session"`
	// Subject is the authenticated caller (serve.oauth), if any.
	Subject string `json:"subject,omitempty"`
	Class   string `json:"class,omitempty"`
	// Annotations are the tool's MCP annotations, when it has any.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Via         string          `json:"via,omitempty"`
	// ExposedName is the name the client called the tool by, when a
	// tools: rule renamed it.
	ExposedName string `json:"exposed_name,omitempty"`

	Outcome    string          `json:"outcome,omitempty"`
	IsError    *bool           `json:"is_error,omitempty"`
	DurationMS *float64        `json:"duration_ms,omitempty"`
	Error      string          `json:"error,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
}

// BeforeCall runs the hook for a matching call and turns its exit code
// into a Decision.
func (h *CommandHook) BeforeCall(ctx context.Context, c Call) (Decision, error) {
	if !h.before || !h.Matches(c) {
		return Decision{}, nil
	}
	ev := newHookEvent(EventBefore, c)
	code, stderr, err := h.run(ctx, ev)
	if err != nil {
		return Decision{}, err
	}
	switch code {
	case ExitAllow:
		return Decision{}, nil
	case ExitDeny:
		reason := strings.TrimSpace(stderr)
		if reason == "" {
			reason = fmt.Sprintf("%s::%s was denied by hook %s", c.Server, c.Tool, h.command)
		}
		return Decision{Deny: true, Reason: reason, Hook: h.String()}, nil
	}
	return Decision{}, fmt.Errorf("hook %s exited with code %d: %s", h.command, code, oneLine(stderr))
}

// AfterCall runs the hook for a matching call once it ended. Its exit
// code cannot change anything; failures are logged.
func (h *CommandHook) AfterCall(ctx context.Context, c Call, r Result) {
	if !h.after || !h.Matches(c) {
		return
	}
	ev := newHookEvent(EventAfter, c)
	ev.Outcome = r.Outcome()
	ev.IsError = &r.IsError
	ms := float64(r.Duration) / float64(time.Millisecond)
	ev.DurationMS = &ms
	switch {
	case r.Err != nil:
		ev.Error = r.Err.Error()
	case r.Denied:
		ev.Error = r.Reason
	}
	if r.Value != nil {
		ev.Result = rawJSON(r.Value)
	}
	// The call is over: its context may already be cancelled, and the
	// hook should run anyway (bounded by its own timeout).
	code, stderr, err := h.run(context.WithoutCancel(ctx), ev)
	switch {
	case err != nil:
		h.logger.Warn("after hook failed", "hook", h.command, "tool", c.ID(), "err", err)
	case code != ExitAllow:
		h.logger.Warn("after hook exited non-zero (after hooks cannot deny)",
			"hook", h.command, "tool", c.ID(), "code", code, "stderr", oneLine(stderr))
	}
}

// newHookEvent fills the fields every event has.
func newHookEvent(event string, c Call) hookEvent {
	args := json.RawMessage(`{}`)
	if c.Arguments != nil {
		args = rawJSON(c.Arguments)
	}
	return hookEvent{
		Event: event, Server: c.Server, Tool: c.Tool, Arguments: args,
		Session: trace.SessionRef(c.SessionID), Subject: c.Subject, Class: string(c.Class), Via: c.Via, ExposedName: c.Exposed,
		Annotations: validJSON(c.Annotations),
	}
}

// validJSON returns raw when it is valid JSON, else nil: a hook's stdin
// must stay one valid JSON object.
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return nil
	}
	return raw
}

// rawJSON encodes v for a hook. A value that will not encode (invalid raw
// JSON, a channel) becomes a JSON string of its text: the hook still gets
// valid JSON on stdin and still runs.
func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err == nil {
		return b
	}
	var text string
	switch x := v.(type) {
	case json.RawMessage:
		text = string(x)
	case []byte:
		text = string(x)
	default:
		text = fmt.Sprintf("%v", v)
	}
	b, _ = json.Marshal(text) // a string always encodes
	return b
}

// run starts the hook with ev on stdin and waits for it, at most
// h.timeout. It returns the exit code and the head of stderr; err is set
// when the hook could not run or was killed.
func (h *CommandHook) run(ctx context.Context, ev hookEvent) (int, string, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return 0, "", fmt.Errorf("encoding the hook event: %w", err)
	}
	payload = append(payload, '\n')
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, h.command, h.args...)
	cmd.Stdin = bytes.NewReader(payload)
	// nil Stdout is the null device: no pipe for a grandchild to hold.
	stderr := &headBuffer{max: maxReasonBytes}
	cmd.Stderr = stderr
	cmd.Env = append(os.Environ(),
		"TOOLBRIDGE_HOOK_EVENT="+ev.Event,
		"TOOLBRIDGE_SERVER="+ev.Server,
		"TOOLBRIDGE_TOOL="+ev.Tool,
	)
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd)

	err = cmd.Run()
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return 0, stderr.String(), fmt.Errorf("hook %s timed out after %s and was killed", h.command, h.timeout)
		}
		return 0, stderr.String(), fmt.Errorf("running hook %s: %w", h.command, ctxErr)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String(), nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return exitErr.ExitCode(), stderr.String(), nil
	case errors.Is(err, exec.ErrWaitDelay):
		// The hook exited but a child kept stderr open; the exit code
		// is still the hook's.
		return cmd.ProcessState.ExitCode(), stderr.String(), nil
	}
	return 0, stderr.String(), fmt.Errorf("running hook %s: %w", h.command, err)
}

// headBuffer keeps the first max bytes written and discards the rest
// while still accepting it, so the child never blocks on a full pipe.
type headBuffer struct {
	buf bytes.Buffer
	max int
}

// Write keeps what fits.
func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// String returns what was kept, as valid UTF-8.
func (b *headBuffer) String() string { return strings.ToValidUTF8(b.buf.String(), "\uFFFD") }

// oneLine squeezes a hook's stderr into one log-friendly line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
