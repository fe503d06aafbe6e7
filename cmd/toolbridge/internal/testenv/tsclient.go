package testenv

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// clientSessionJS is npm/client-session.mjs: a whole bridge session played
// with the official TypeScript SDK client. It imports the pinned SDK, so it
// runs from the install directory (see [NPMEnv.ClientSessionScript]).
//
//go:embed npm/client-session.mjs
var clientSessionJS []byte

// Sessions the TypeScript SDK driver plays (the "session" of a [TSSession]).
const (
	// SessionDemo: tools/list, searches with parameterless hits, batched
	// describe, valid, invalid, string-encoded and unknown-tool calls, a
	// structured result through tool_call, a deferred tool called by name.
	SessionDemo = "demo"
	// SessionActivate: with disclosure activate, a search brings
	// tools/list_changed and the found tools are listed and callable.
	SessionActivate = "activate"
	// SessionNPM: the demo's steps against server-filesystem, -memory and
	// -everything, plus resources, prompts, sampling, elicitation and roots
	// passing through.
	SessionNPM = "npm"
	// SessionSearch: each of the spec's Searches finds its tool in the
	// top 5, every answer held to tool_search's outputSchema.
	SessionSearch = "search"
	// SessionOAuth: against a gateway with serve.oauth, the SDK discovers
	// the metadata from the 401, registers, logs in with authorization
	// code + PKCE, gets a token, then searches, describes and calls Want
	// and finds Hidden unknown.
	SessionOAuth = "oauth"
	// SessionCalls: tools/list, then each of the spec's Calls, whose text
	// must hold its Want and whose isError must match.
	SessionCalls = "calls"
)

// TSSessionTimeout bounds one driver run; a hung gateway fails the run
// instead of the test binary's -timeout.
const TSSessionTimeout = 5 * time.Minute

// TSSession tells the driver what to play and how to reach toolbridge.
type TSSession struct {
	// Session is SessionDemo, SessionActivate, SessionNPM or SessionSearch.
	Session string `json:"session"`
	// Transport is "stdio" (the driver starts Command) or "http" (it
	// connects to URL).
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	// Root, Note and NoteText (SessionNPM) are the filesystem server's
	// root, a file in it and that file's text.
	Root     string `json:"root,omitempty"`
	Note     string `json:"note,omitempty"`
	NoteText string `json:"noteText,omitempty"`
	// Searches (SessionSearch) are the queries to run.
	Searches []TSSearch `json:"searches,omitempty"`
	// SearchRetryMs (SessionSearch) is how long, in milliseconds, a query
	// is asked again until its tool is found: a gateway started by the
	// driver embeds its catalog in the background and ranks lexically
	// until then. Zero asks once.
	SearchRetryMs int `json:"searchRetryMs,omitempty"`
	// Want, WantQuery and WantArgs (SessionOAuth) are a tool the caller
	// may use, a query that finds it and its arguments; Hidden and
	// HiddenQuery a tool they may not see and a query for it.
	Want        string         `json:"want,omitempty"`
	WantQuery   string         `json:"wantQuery,omitempty"`
	WantArgs    map[string]any `json:"wantArgs,omitempty"`
	Hidden      string         `json:"hidden,omitempty"`
	HiddenQuery string         `json:"hiddenQuery,omitempty"`
	// Calls (SessionCalls) are the tool calls to make.
	Calls []TSCall `json:"calls,omitempty"`
}

// TSCall is one call of SessionCalls and what its answer must say.
type TSCall struct {
	Name    string         `json:"name"`
	Args    map[string]any `json:"args,omitempty"`
	Want    string         `json:"want"`
	IsError bool           `json:"isError,omitempty"`
}

// TSSearch is one query of SessionSearch and the tool id it must find.
type TSSearch struct {
	Query string `json:"query"`
	Want  string `json:"want"`
}

// TSStep is one step of a driver run.
type TSStep struct {
	Name   string `json:"step"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// TSReport is what a driver run printed.
type TSReport struct {
	// Plan lists the steps the driver meant to run, in order.
	Plan []string
	// Steps are the steps it reported, in order.
	Steps []TSStep
	// Done is true when the driver reached its end.
	Done bool
}

// Problems lists everything wrong with a run, one line each: steps that
// failed, planned steps that never reported, a run that did not finish.
// A run with no plan at all is a problem too.
func (r TSReport) Problems() []string {
	var out []string
	if len(r.Plan) == 0 {
		out = append(out, "the driver printed no plan")
	}
	reported := map[string]bool{}
	for _, s := range r.Steps {
		reported[s.Name] = true
		if !s.OK {
			out = append(out, fmt.Sprintf("step %q failed: %s", s.Name, s.Error))
		}
	}
	for _, name := range r.Plan {
		if !reported[name] {
			out = append(out, fmt.Sprintf("step %q never reported", name))
		}
	}
	if !r.Done {
		out = append(out, "the driver did not finish")
	}
	return out
}

// ParseTSOutput reads the driver's stdout: JSON lines of a plan, steps and
// a done marker. Blank lines are skipped; any other line is an error, as
// is a step named twice or outside the plan.
func ParseTSOutput(out string) (TSReport, error) {
	var r TSReport
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var msg struct {
			Plan []string `json:"plan"`
			TSStep
			Done bool `json:"done"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			return r, fmt.Errorf("line %d: %w: %.200s", n, err, line)
		}
		switch {
		case msg.Plan != nil:
			if r.Plan != nil {
				return r, fmt.Errorf("line %d: a second plan", n)
			}
			r.Plan = msg.Plan
		case msg.Name != "":
			if seen[msg.Name] {
				return r, fmt.Errorf("line %d: step %q reported twice", n, msg.Name)
			}
			if !slices.Contains(r.Plan, msg.Name) {
				return r, fmt.Errorf("line %d: step %q is not in the plan", n, msg.Name)
			}
			seen[msg.Name] = true
			r.Steps = append(r.Steps, msg.TSStep)
		case msg.Done:
			r.Done = true
		default:
			return r, fmt.Errorf("line %d: neither plan, step nor done: %.200s", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("reading driver output: %w", err)
	}
	return r, nil
}

// ClientSessionScript returns the path of the TypeScript SDK driver inside
// the install directory (see writeScript).
func (e *NPMEnv) ClientSessionScript() string {
	e.tb.Helper()
	path, err := e.writeScript("client-session", clientSessionJS)
	if err != nil {
		e.tb.Fatalf("testenv: %v", err)
	}
	return path
}

// writeScript puts an embedded node script into the install directory, where
// node resolves the pinned packages, as name-HASH.mjs: named by its content's
// hash and written atomically, so concurrent test processes and edits of the
// script never see a stale or partial copy.
func (e *NPMEnv) writeScript(name string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	path := filepath.Join(e.Dir, name+"-"+hex.EncodeToString(sum[:6])+".mjs")
	if err := writeFileAtomic(path, data); err != nil {
		return "", err
	}
	return path, nil
}

// writeFileAtomic writes data to path unless path already holds it.
func writeFileAtomic(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// RunTSSession plays s with the TypeScript SDK driver and returns what it
// reported, with the driver's stderr (where toolbridge's own stderr goes
// over stdio). An error means the driver could not run or printed
// something unreadable; failed steps are in the report's Problems.
func (e *NPMEnv) RunTSSession(ctx context.Context, s TSSession) (TSReport, string, error) {
	e.tb.Helper()
	script := e.ClientSessionScript()
	spec, err := json.Marshal(s)
	if err != nil {
		return TSReport{}, "", fmt.Errorf("encoding the session spec: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, TSSessionTimeout)
	defer cancel()
	cmd := commandContext(ctx, "node", script, string(spec))
	cmd.Dir = e.Dir
	var stdout, stderr SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	report, parseErr := ParseTSOutput(stdout.String())
	if parseErr != nil {
		return report, stderr.String(), fmt.Errorf("parsing the driver's output: %w", parseErr)
	}
	var exit interface{ ExitCode() int }
	if runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 1 && report.Done) {
		// Exit 1 after the done marker is failed steps, in the report;
		// anything else is the driver itself failing.
		if ctx.Err() != nil {
			runErr = fmt.Errorf("%w (timed out after %s)", runErr, TSSessionTimeout)
		}
		return report, stderr.String(), fmt.Errorf("running the TypeScript SDK driver: %w", runErr)
	}
	return report, stderr.String(), nil
}
