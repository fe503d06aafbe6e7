package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// shHook is a hook config that runs script with sh -c.
func shHook(match, script string, events ...string) config.Hook {
	return config.Hook{Match: match, Command: "sh", Args: []string{"-c", script}, Events: events, Timeout: 10 * time.Second}
}

// logBuffer is a concurrency-safe slog destination for asserting logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	var buf logBuffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

var testCall = Call{
	Server: "github", Tool: "create_issue", Class: config.ClassDeferrable, Via: trace.ViaToolCall,
	Arguments: map[string]any{"title": "bug", "labels": []any{"a"}}, SessionID: "sess-7",
}

func TestCommandHookDecisions(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantDeny   bool
		wantReason string
		wantErr    string // substring; "" means no error
	}{
		{name: "exit 0 allows", script: "cat >/dev/null; exit 0"},
		{name: "exit 2 denies with stderr", script: "cat >/dev/null; echo '  creating issues is off today ' >&2; exit 2", wantDeny: true, wantReason: "creating issues is off today"},
		{name: "exit 2 without stderr has a default reason", script: "exit 2", wantDeny: true, wantReason: "github::create_issue was denied by hook sh"},
		{name: "other exit is an error", script: "echo boom >&2; exit 3", wantErr: "exited with code 3: boom"},
		{name: "crash is an error", script: "kill -SEGV $$", wantErr: "signal"},
		{name: "garbage on stdout is fine", script: "printf '{not json\\x00\\xff'; exit 0"},
		{name: "hook that ignores stdin", script: "exit 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewCommandHook(shHook("*", tc.script), nil)
			if err != nil {
				t.Fatalf("NewCommandHook: %v", err)
			}
			d, err := h.BeforeCall(context.Background(), testCall)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("BeforeCall: %v", err)
			}
			if d.Deny != tc.wantDeny || d.Reason != tc.wantReason {
				t.Errorf("decision = %+v, want deny %v reason %q", d, tc.wantDeny, tc.wantReason)
			}
		})
	}
}

func TestCommandHookStdin(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "event.json")
	envOut := filepath.Join(dir, "env")
	h, err := NewCommandHook(shHook("*", `cat > "$0"; echo "$TOOLBRIDGE_HOOK_EVENT $TOOLBRIDGE_SERVER $TOOLBRIDGE_TOOL" > "$1"`), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.args = append(h.args, out, envOut) // $0 and $1 of the script
	if _, err := h.BeforeCall(context.Background(), testCall); err != nil {
		t.Fatalf("BeforeCall: %v", err)
	}
	var ev map[string]any
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("hook stdin is not JSON: %v: %s", err, b)
	}
	for k, want := range map[string]string{"event": "before", "server": "github", "tool": "create_issue", "session": trace.SessionRef("sess-7"), "via": "tool_call", "class": "deferrable"} {
		if ev[k] != want {
			t.Errorf("%s = %v, want %s", k, ev[k], want)
		}
	}
	if args, _ := ev["arguments"].(map[string]any); args["title"] != "bug" {
		t.Errorf("arguments = %v", ev["arguments"])
	}
	if env, _ := os.ReadFile(envOut); strings.TrimSpace(string(env)) != "before github create_issue" {
		t.Errorf("env = %q", env)
	}
	if _, ok := ev["annotations"]; ok {
		t.Errorf("a tool without annotations gets %v", ev["annotations"])
	}

	// The tool's annotations reach the hook as the server sent them; a
	// value that is not JSON is left out rather than break stdin.
	for _, tc := range []struct{ raw, want string }{
		{`{"readOnlyHint":false,"destructiveHint":true}`, `{"destructiveHint":true,"readOnlyHint":false}`},
		{`{not json`, ``},
	} {
		c := testCall
		c.Annotations = json.RawMessage(tc.raw)
		if _, err := h.BeforeCall(context.Background(), c); err != nil {
			t.Fatalf("BeforeCall: %v", err)
		}
		b, _ := os.ReadFile(out)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("hook stdin is not JSON: %v: %s", err, b)
		}
		norm := ""
		if raw, ok := got["annotations"]; ok {
			var v any
			_ = json.Unmarshal(raw, &v)
			nb, _ := json.Marshal(v)
			norm = string(nb)
		}
		if norm != tc.want {
			t.Errorf("annotations %s reach the hook as %q, want %q", tc.raw, norm, tc.want)
		}
	}
}

func TestCommandHookBadArguments(t *testing.T) {
	// Arguments that do not encode (invalid raw JSON, a channel) still
	// reach the hook as valid JSON, as a string.
	for name, args := range map[string]any{
		"invalid raw JSON": json.RawMessage(`{"a":`),
		"channel":          make(chan int),
		"nil":              nil,
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "event.json")
			h, err := NewCommandHook(shHook("*", `cat > "$0"`), nil)
			if err != nil {
				t.Fatal(err)
			}
			h.args = append(h.args, out)
			c := testCall
			c.Arguments = args
			if _, err := h.BeforeCall(context.Background(), c); err != nil {
				t.Fatalf("BeforeCall: %v", err)
			}
			b, _ := os.ReadFile(out)
			var ev map[string]any
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("hook got invalid JSON %q: %v", b, err)
			}
			if _, ok := ev["arguments"]; !ok {
				t.Errorf("no arguments key in %s", b)
			}
		})
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the ")" that closes the command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestCommandHookTimeoutKillsGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	// The hook starts two grandchildren, records their pids, then hangs.
	script := `sleep 300 & echo $! >> "$0"; (sleep 300; echo never) & echo $! >> "$0"; sleep 300`
	cfg := shHook("*", script)
	cfg.Timeout = 300 * time.Millisecond
	h, err := NewCommandHook(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.args = append(h.args, pids)
	_, err = h.BeforeCall(context.Background(), testCall)
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	b, _ := os.ReadFile(pids)
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		t.Fatalf("hook recorded pids %q, want 2", b)
	}
	// SIGKILL is delivered at once but reaping is asynchronous: poll.
	deadline := time.Now().Add(10 * time.Second)
	for _, f := range fields {
		pid, _ := strconv.Atoi(f)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("grandchild %d survived the hook's timeout: orphan", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestCommandHookContextCancel(t *testing.T) {
	h, err := NewCommandHook(shHook("*", "sleep 300"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := h.BeforeCall(ctx, testCall); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		server  string
		tool    string
		want    bool
	}{
		{"*", "github", "create_issue", true},
		{"github::*", "github", "create_issue", true},
		{"github::*", "gitlab", "create_issue", false},
		{"*::delete_*", "fs", "delete_file", true},
		{"*::delete_*", "fs", "read_file", false},
		{"delete_*", "fs", "delete_file", true},        // no "::": the tool name alone
		{"delete_*", "delete_srv", "read_file", false}, // ... not the server
		{"git?ub::create_issue", "github", "create_issue", true},
		{"[gf]*::*", "fs", "x", true},
		{"[gf]*::*", "slack", "x", false},
		{"github::create_issue", "github", "create_issue", true},
		{"github::create", "github", "create_issue", false},
		{"GitHub::*", "github", "create_issue", false}, // case-sensitive
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"/"+tc.server+"::"+tc.tool, func(t *testing.T) {
			if got := globMatch(tc.pattern, Call{Server: tc.server, Tool: tc.tool}); got != tc.want {
				t.Errorf("globMatch = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCommandHookMatchAndEvents(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	touch := `echo x >> "$0"`
	tests := []struct {
		name    string
		cfg     config.Hook
		call    Call
		before  int // runs expected from BeforeCall
		after   int // extra runs expected from AfterCall
		wantErr string
	}{
		{name: "matching before", cfg: shHook("github::*", touch), call: testCall, before: 1},
		{name: "not matching", cfg: shHook("slack::*", touch), call: testCall},
		{name: "after only", cfg: shHook("*", touch, "after"), call: testCall, after: 1},
		{name: "both", cfg: shHook("*", touch, "before", "After"), call: testCall, before: 1, after: 1},
		{name: "bad event", cfg: shHook("*", touch, "during"), wantErr: `event "during"`},
		{name: "bad glob", cfg: shHook("github::[", touch), wantErr: "syntax error in pattern"},
		{name: "missing command", cfg: config.Hook{Command: "/nonexistent/hook"}, wantErr: "finding hook command"},
		{name: "empty command", cfg: config.Hook{Command: " "}, wantErr: "no command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			h, err := NewCommandHook(tc.cfg, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			h.args = append(h.args, marker)
			if _, err := h.BeforeCall(context.Background(), tc.call); err != nil {
				t.Fatal(err)
			}
			if got := runs(marker); got != tc.before {
				t.Errorf("before runs = %d, want %d", got, tc.before)
			}
			h.AfterCall(context.Background(), tc.call, Result{})
			if got := runs(marker); got != tc.before+tc.after {
				t.Errorf("runs after AfterCall = %d, want %d", got, tc.before+tc.after)
			}
		})
	}
}

func runs(marker string) int {
	b, _ := os.ReadFile(marker)
	return strings.Count(string(b), "x")
}

func TestAfterHookEvent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "after.json")
	log, logs := newLogger()
	h, err := NewCommandHook(shHook("*", `cat > "$0"; echo nope >&2; exit 2`, "after"), log)
	if err != nil {
		t.Fatal(err)
	}
	h.args = append(h.args, out)
	// A cancelled call context must not stop the after hook.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.AfterCall(ctx, testCall, Result{Value: map[string]any{"content": []any{"ok"}}, IsError: true, Duration: 1500 * time.Microsecond})
	var ev map[string]any
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("after event %q: %v", b, err)
	}
	if ev["event"] != "after" || ev["outcome"] != "tool_error" || ev["is_error"] != true || ev["duration_ms"] != 1.5 || ev["result"] == nil {
		t.Errorf("after event = %v", ev)
	}
	if !strings.Contains(logs.String(), "after hooks cannot deny") {
		t.Errorf("exit 2 in an after hook was not logged: %s", logs)
	}
}

// fakeHook is a Go hook for chain tests.
type fakeHook struct {
	name     string
	decision Decision
	err      error
	mu       sync.Mutex
	before   int
	after    []Result
}

func (f *fakeHook) String() string { return f.name }

func (f *fakeHook) BeforeCall(context.Context, Call) (Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before++
	return f.decision, f.err
}

func (f *fakeHook) AfterCall(_ context.Context, _ Call, r Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = append(f.after, r)
}

func TestChain(t *testing.T) {
	log, logs := newLogger()
	broken := &fakeHook{name: "broken", err: errors.New("hook crashed")}
	allow := &fakeHook{name: "allow"}
	deny := &fakeHook{name: "deny", decision: Decision{Deny: true}}
	later := &fakeHook{name: "later", decision: Decision{Deny: true, Reason: "second"}}
	h := NewChain(log, broken, allow, deny, later)

	d, err := h.BeforeCall(context.Background(), testCall)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Deny || d.Hook != "deny" || d.Reason != "denied by hook deny" {
		t.Errorf("decision = %+v, want the first deny with a default reason", d)
	}
	if broken.before != 1 || allow.before != 1 || deny.before != 1 || later.before != 0 {
		t.Errorf("before counts %d %d %d %d, want 1 1 1 0 (first deny wins)", broken.before, allow.before, deny.before, later.before)
	}
	if !strings.Contains(logs.String(), "hook crashed") || !strings.Contains(logs.String(), "allowing the call") {
		t.Errorf("hook error not logged: %s", logs)
	}

	res := Result{Denied: true, Reason: d.Reason}
	h.AfterCall(context.Background(), testCall, res)
	for _, f := range []*fakeHook{broken, allow, deny, later} {
		if len(f.after) != 1 || f.after[0].Outcome() != OutcomeDenied {
			t.Errorf("%s AfterCall got %v", f.name, f.after)
		}
	}

	// A failing hook alone allows.
	if d, _ := NewChain(nil, broken).BeforeCall(context.Background(), testCall); d.Deny {
		t.Errorf("an erroring hook denied")
	}
	// nil Hooks allow and do nothing.
	var none *Hooks
	if d, err := none.BeforeCall(context.Background(), testCall); d.Deny || err != nil {
		t.Errorf("nil Hooks: %+v %v", d, err)
	}
	none.AfterCall(context.Background(), testCall, Result{})
	if none.Len() != 0 || none.Close() != nil {
		t.Errorf("nil Hooks Len/Close")
	}
}

func TestResultOutcome(t *testing.T) {
	for want, r := range map[string]Result{
		OutcomeOK:        {},
		OutcomeToolError: {IsError: true},
		OutcomeError:     {Err: errors.New("x"), IsError: true},
		OutcomeDenied:    {Denied: true, Err: errors.New("x")},
	} {
		if got := r.Outcome(); got != want {
			t.Errorf("%+v: Outcome = %s, want %s", r, got, want)
		}
	}
}

func TestNewHooks(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "third-ran")
	audit := filepath.Join(dir, "audit.jsonl")
	log, logs := newLogger()
	cfg := config.Default()
	cfg.Hooks = []config.Hook{
		shHook("*", "exit 0"),
		shHook("*", "exit 7"), // logged, allows
		shHook("github::create_*", "echo 'issues are frozen' >&2; exit 2"),
		shHook("*", "touch "+ran),
	}
	cfg.Audit.File = audit
	h, err := NewHooks(&cfg, log)
	if err != nil {
		t.Fatalf("NewHooks: %v", err)
	}
	if h.Len() != 5 {
		t.Errorf("Len = %d, want 4 command hooks and the audit log", h.Len())
	}
	d, _ := h.BeforeCall(context.Background(), testCall)
	if !d.Deny || d.Reason != "issues are frozen" || d.Hook != "command sh" {
		t.Errorf("decision = %+v", d)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the hook after the deny ran")
	}
	if !strings.Contains(logs.String(), "exited with code 7") {
		t.Errorf("exit 7 not logged: %s", logs)
	}
	// Another tool passes every hook, including the fourth.
	other := Call{Server: "fs", Tool: "read_file", Via: trace.ViaDirect}
	if d, _ := h.BeforeCall(context.Background(), other); d.Deny {
		t.Errorf("fs::read_file denied: %+v", d)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the last hook did not run for fs::read_file")
	}
	h.AfterCall(context.Background(), testCall, Result{Denied: true, Reason: d.Reason})
	h.AfterCall(context.Background(), other, Result{Duration: time.Millisecond})
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recs := readAudit(t, audit)
	if len(recs) != 2 || recs[0].Outcome != OutcomeDenied || recs[1].Outcome != OutcomeOK || recs[1].Via != "direct" {
		t.Errorf("audit = %+v", recs)
	}

	bad := config.Default()
	bad.Hooks = []config.Hook{{Command: "sh", Events: []string{"sometimes"}}}
	if _, err := NewHooks(&bad, log); err == nil || !strings.Contains(err.Error(), "hooks[0]") {
		t.Errorf("bad hook: err = %v, want one naming hooks[0]", err)
	}
	bad = config.Default()
	bad.Audit.File = filepath.Join(dir, "missing-dir", "audit.jsonl")
	if _, err := NewHooks(&bad, log); err == nil || !strings.Contains(err.Error(), "opening audit log") {
		t.Errorf("bad audit path: err = %v", err)
	}
}
