package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// runCLI runs toolbridge to completion with stdin closed, bounded by a
// minute, and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = testEnv(t, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	testenv.SetProcessGroup(cmd)
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("toolbridge %v did not finish within a minute\nstderr:\n%s", args, stderr.String())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running toolbridge %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestMalformedConfig: a broken config file stops `serve` and `config
// check` at once, with exit code 1 and an error naming the file and the
// key (or line), and no upstream is ever started.
func TestMalformedConfig(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		want    []string // in stderr besides the file's path
	}{
		{
			name: "yaml syntax", file: "broken.yaml",
			content: "mcpServers:\n  marker:\n    command: /bin/touch\n    args: [STARTED]\n  math:\n    command: [unclosed\n",
			want:    []string{"broken.yaml:", "invalid YAML"},
		},
		{
			name: "json syntax", file: "claude_desktop_config.json",
			content: `{"mcpServers": {"marker": {"command": "/bin/touch", "args": ["STARTED"]}, "math": {"command": "x",}}}`,
			want:    []string{"claude_desktop_config.json:1:", "invalid JSON"},
		},
		{
			name: "wrong types", file: "types.yaml",
			content: "mcpServers:\n  marker:\n    command: /bin/touch\n    args: [STARTED]\n  math:\n    command: x\n    args: not-a-list\ntimeouts:\n  connect: fast\ncontext_window: lots\n",
			want:    []string{"mcpServers.math.args", "expected a list", "timeouts.connect", `"fast"`, "context_window", `"lots"`},
		},
		{
			name: "unknown key", file: "unknown.yaml",
			content: "mcpServers:\n  marker:\n    command: /bin/touch\n    args: [STARTED]\n    comand: x\nthreshhold_pct: 5\n",
			want:    []string{"mcpServers.marker.comand", "unknown key", "did you mean command", "threshhold_pct"},
		},
		{
			name: "missing variable", file: "missing.yaml",
			content: "mcpServers:\n  marker:\n    command: /bin/touch\n    args: [STARTED]\n    env:\n      TOKEN: ${TB_E2E_SURELY_UNSET}\n",
			want:    []string{"mcpServers.marker.env.TOKEN", "TB_E2E_SURELY_UNSET", "not set"},
		},
		{
			name: "toml wrong type", file: "toolbridge.toml",
			content: "[mcpServers.marker]\ncommand = \"/bin/touch\"\nargs = [\"STARTED\"]\n[timeouts]\ncall = \"soon\"\n",
			want:    []string{"timeouts.call", `"soon"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The marker server would create this file if it were ever
			// started: a config error must stop everything before that.
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			path := filepath.Join(dir, tc.file)
			content := strings.ReplaceAll(tc.content, "STARTED", started)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"serve", "--config", path},
				{"config", "check", path},
			} {
				code, stdout, stderr := runCLI(t, nil, args...)
				if code != 1 {
					t.Errorf("%v: exit code %d, want 1\nstderr:\n%s", args, code, stderr)
				}
				for _, w := range append([]string{path}, tc.want...) {
					if !strings.Contains(stderr, w) {
						t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
					}
				}
				if !regexp.MustCompile(regexp.QuoteMeta(path) + `(:\d+)*: `).MatchString(stderr) {
					t.Errorf("%v: no \"FILE[:LINE]: \" prefix on the error:\n%s", args, stderr)
				}
				if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Errorf("%v: stderr shows a crash:\n%s", args, stderr)
				}
				if stdout != "" {
					t.Errorf("%v: wrote to stdout on a config error: %q", args, stdout)
				}
			}
			if _, err := os.Stat(started); err == nil {
				t.Errorf("an upstream was started although the config is invalid")
			}
		})
	}
}

// TestMalformedConfigMarkerWorks proves the "never started" check of
// TestMalformedConfig can fail: with a valid config, toolbridge does run the
// marker command (which then fails to initialize, as touch is no MCP
// server).
func TestMalformedConfigMarkerWorks(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	cfg := writeConfig(t, "ok.yaml", "timeouts:\n  connect: 5s\nmcpServers:\n  marker:\n    command: /bin/touch\n    args: ["+yamlString(started)+"]\n")
	code, _, stderr := runCLI(t, nil, "tools", "--config", cfg)
	if _, err := os.Stat(started); err != nil {
		t.Fatalf("the marker server was not started by a valid config (exit %d): %v\nstderr:\n%s", code, err, stderr)
	}
	if !strings.Contains(stderr, "marker") {
		t.Errorf("no progress line for the marker server:\n%s", stderr)
	}
}

// TestConfigCheckMasksSecrets: `config check` on a valid file prints the
// resolved config with env values, headers and the auth token masked,
// including one that came from ${VAR}.
func TestConfigCheckMasksSecrets(t *testing.T) {
	secrets := map[string]string{
		"env":       "env-secret-5f2a9c",
		"header":    "header-secret-81d3e0",
		"authToken": "auth-secret-c47b12",
		"fromVar":   "var-secret-9e6d44",
	}
	cfg := writeConfig(t, "toolbridge.yaml", fmt.Sprintf(`mcpServers:
  github:
    command: /usr/bin/github-mcp
    env:
      GITHUB_TOKEN: %s
      FROM_VAR: ${TB_E2E_SECRET}
  remote:
    url: http://127.0.0.1:9/mcp
    headers:
      Authorization: Bearer %s
serve:
  auth_token: %s
`, secrets["env"], secrets["header"], secrets["authToken"]))
	env := []string{"TB_E2E_SECRET=" + secrets["fromVar"]}
	for _, format := range []string{"yaml", "json"} {
		code, stdout, stderr := runCLI(t, env, "config", "check", "--format", format, cfg)
		if code != 0 {
			t.Fatalf("config check --format %s: exit %d\nstderr:\n%s", format, code, stderr)
		}
		for what, s := range secrets {
			if strings.Contains(stdout, s) || strings.Contains(stderr, s) {
				t.Errorf("config check --format %s shows the %s secret %q:\n%s", format, what, s, stdout)
			}
		}
		// The structure is there, only the values are hidden.
		for _, want := range []string{"github", "GITHUB_TOKEN", "FROM_VAR", "remote", "Authorization", "auth_token", "/usr/bin/github-mcp", "****"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("config check --format %s lacks %q:\n%s", format, want, stdout)
			}
		}
	}
}

// TestBadUpstreamsNextToWorkingOnes configures every kind of broken
// upstream next to two working ones: a command that does not exist, one
// that exits at once, one that prints garbage, one that never answers
// initialize, an HTTP server whose port refuses connections and one that
// accepts them but never answers. Each gets
// one progress line on stderr naming it with a reason; the working tools
// are listed and callable; stdout carries only JSON-RPC; the processes of
// the broken servers, grandchildren included, are killed; and nothing is
// left after the client closes stdin.
func TestBadUpstreamsNextToWorkingOnes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	garbagePids := filepath.Join(dir, "garbage.pids")
	silentPids := filepath.Join(dir, "silent.pids")
	refused := fmt.Sprintf("http://127.0.0.1:%d/mcp", testenv.FreePort(t))
	blackhole := blackholeURL(t)
	cfg := demoConfig(t, "timeouts:\n  connect: 2s\n", ""+
		"  blackhole:\n    url: "+blackhole+"\n"+
		"  missing:\n    command: /nonexistent/mcp-server\n"+
		"  exits:\n    command: sh\n    args: [-c, "+yamlString("echo 'fatal: MCP_API_KEY is not set' >&2; exit 3")+"]\n"+
		"  garbage:\n    command: sh\n    args: [-c, "+yamlString(pidFileScript(garbagePids, "while true; do echo garbage; sleep 0.1; done"))+"]\n"+
		"  silent:\n    command: sh\n    args: [-c, "+yamlString(pidFileScript(silentPids, "wait"))+"]\n"+
		"  refused:\n    url: "+refused+"\n")

	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	p.initialize(ctx) // answered at once: the servers connect meanwhile

	// Every server's line comes once it connected or failed (the slowest
	// at the 2s connect timeout), through the stderr pipe.
	const servers = 8
	stderr := p.stderr.WaitFor(ctx, func(s string) bool {
		return strings.Count(s, "toolbridge: ✓")+strings.Count(s, "toolbridge: ✗") >= servers
	})
	t.Logf("progress lines:\n%s", stderr)
	lines := strings.Split(stderr, "\n")
	reasons := map[string][]string{
		"missing": {"/nonexistent/mcp-server", "no such file or directory"},
		"exits":   {"exited with status 3", "fatal: MCP_API_KEY is not set"},
		// A process that runs but never answers is named as still starting.
		"garbage":   {"still starting after 2s; raise connect_timeout", `not JSON-RPC: "garbage"`},
		"silent":    {"still starting after 2s; raise connect_timeout"},
		"refused":   {"connection refused"},
		"blackhole": {"2s"},
	}
	for name, want := range reasons {
		var found []string
		for _, l := range lines {
			if regexp.MustCompile(`✗ ` + name + `\s`).MatchString(l) {
				found = append(found, l)
			}
		}
		if len(found) != 1 {
			t.Errorf("want one failure line for %s, got %d:\n%s", name, len(found), stderr)
			continue
		}
		for _, w := range want {
			if !strings.Contains(found[0], w) {
				t.Errorf("the failure line for %s lacks %q: %s", name, w, found[0])
			}
		}
	}
	for _, name := range []string{"math", "text"} {
		if !regexp.MustCompile(`✓ ` + name + `\s+stdio\s+\d+ tools`).MatchString(stderr) {
			t.Errorf("no success line for %s:\n%s", name, stderr)
		}
	}
	// The connect timeout bounds a server that never answers: the progress
	// line reports how long it took, measured by toolbridge itself.
	for _, name := range []string{"garbage", "silent"} {
		m := regexp.MustCompile(`✗ ` + name + `\s.*failed after (\d+) ms`).FindStringSubmatch(stderr)
		if m == nil {
			continue // reported above
		}
		if ms, _ := strconv.Atoi(m[1]); ms > 3500 {
			t.Errorf("%s failed after %d ms with timeouts.connect 2s: the connect timeout does not bound it", name, ms)
		}
	}

	names := p.toolNames(ctx)
	for _, want := range []string{"add", "reverse_text"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list lacks %s: %v", want, names)
		}
	}
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 40, "b": 2}); isErr || text != "42" {
		t.Errorf("add: isError=%v %q", isErr, text)
	}
	if isErr, text := p.callTool(ctx, "reverse_text", map[string]any{"text": "gateway"}); isErr || text != "yawetag" {
		t.Errorf("reverse_text: isError=%v %q", isErr, text)
	}

	// The broken servers' processes, and the sleep each started in the
	// background, are gone: failing servers are stopped with their group.
	waitGone(t, append(readPids(t, garbagePids, 2), readPids(t, silentPids, 2)...))
}

// blackholeURL is an HTTP endpoint on loopback that accepts connections
// and never answers.
func blackholeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// findChild returns the pid of the descendant of pid whose command line
// contains s.
func findChild(t *testing.T, pid int, s string) int {
	t.Helper()
	for child, cmdline := range childCommands(pid) {
		if strings.Contains(cmdline, s) {
			return child
		}
	}
	t.Fatalf("no descendant of %d runs %q: %v", pid, s, childCommands(pid))
	return 0
}

// TestUpstreamDiesMidSession kills an upstream's process during a session:
// a call to its tool must come back quickly as an isError result naming
// the server (not hang, not a protocol error), and the other server's tools
// keep working.
func TestUpstreamDiesMidSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A long restart delay keeps the server down for the whole test; that
	// it comes back is TestCrashedUpstreamIsRestarted's subject.
	p := startRaw(t, nil, "serve", "--config", demoConfig(t, "restart: {initial: 60s, max: 60s}\n", ""), "--mode", "off")
	p.initialize(ctx)
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 1, "b": 2}); isErr || text != "3" {
		t.Fatalf("add before the kill: isError=%v %q", isErr, text)
	}
	waitForDemoChildren(t, p.pid())
	math := findChild(t, p.pid(), "demo-server math")
	if err := testenv.KillProcessGroup(math); err != nil {
		t.Fatal(err)
	}

	// Bounded well below the call timeout (60s): a dead server is known
	// at once, not waited for.
	callCtx, callCancel := context.WithTimeout(ctx, 20*time.Second)
	defer callCancel()
	isErr, text := p.callTool(callCtx, "add", map[string]any{"a": 1, "b": 2})
	t.Logf("add after the kill: isError=%v %q", isErr, text)
	if !isErr || !strings.Contains(text, `"math"`) {
		t.Errorf("add after its server died: isError=%v %q, want an isError result naming server \"math\"", isErr, text)
	}
	// The next call fails the same way: the session is not wedged.
	if isErr, text := p.callTool(callCtx, "multiply", map[string]any{"a": 2, "b": 3}); !isErr || !strings.Contains(text, `"math"`) {
		t.Errorf("multiply after its server died: isError=%v %q", isErr, text)
	}
	if isErr, text := p.callTool(ctx, "reverse_text", map[string]any{"text": "alive"}); isErr || text != "evila" {
		t.Errorf("reverse_text on the surviving server: isError=%v %q", isErr, text)
	}
	if names := p.toolNames(ctx); !slices.Contains(names, "reverse_text") {
		t.Errorf("tools/list lacks the surviving server's tools: %v", names)
	}
}

// TestMalformedJSONRPC writes broken lines to toolbridge's stdin: each
// that has an answer due gets a JSON-RPC error with the right code, none
// crashes or wedges the session, and valid requests afterwards still work.
// startRaw checks that every stdout line is JSON-RPC.
func TestMalformedJSONRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", demoConfig(t, "", ""), "--mode", "off")

	nullID := func(code int) func(rpcMessage) bool {
		return func(m rpcMessage) bool {
			return m.Error != nil && string(m.ID) == "null" && m.Error.Code == code
		}
	}
	// Before initialize, then again after it: neither state is special.
	for round := range 2 {
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"`) // cut short
		p.expect(ctx, "parse error (-32700) for truncated JSON", nullID(-32700))
		p.send(`this is not json`)
		p.expect(ctx, "parse error (-32700) for plain text", nullID(-32700))
		p.send(`[1, 2, "three"]`)
		p.expect(ctx, "an error for a JSON array", func(m rpcMessage) bool {
			return m.Error != nil && string(m.ID) == "null" && (m.Error.Code == -32700 || m.Error.Code == -32600)
		})
		p.send(`{"id":"no-version","method":"tools/list"}`)
		if m := p.response(ctx, `"no-version"`); m.Error == nil || m.Error.Code != -32600 {
			t.Errorf("round %d: request without jsonrpc: %+v, want invalid request (-32600)", round, m.Error)
		}
		p.send(`{"jsonrpc":"2.0","id":"bad-params","method":"tools/call","params":"not an object"}`)
		if m := p.response(ctx, `"bad-params"`); m.Error == nil || m.Error.Code != -32600 && m.Error.Code != -32602 {
			t.Errorf("round %d: tools/call with string params: %+v, want invalid request or params", round, m.Error)
		}
		p.send(`{"jsonrpc":"2.0","id":"bad-cursor","method":"tools/list","params":{"cursor":{"nested":true}}}`)
		if m := p.response(ctx, `"bad-cursor"`); m.Error == nil || m.Error.Code != -32600 && m.Error.Code != -32602 {
			t.Errorf("round %d: tools/list with an object cursor: %+v, want invalid request or params", round, m.Error)
		}
		p.send(`{"jsonrpc":"2.0","id":"unknown","method":"no/such/method","params":{}}`)
		if m := p.response(ctx, `"unknown"`); m.Error == nil || m.Error.Code != -32601 {
			t.Errorf("round %d: unknown method: %+v, want method not found (-32601)", round, m.Error)
		}
		p.send(`{"jsonrpc":"2.0","id":"no-args","method":"tools/call","params":{"name":"add","arguments":{"a":"x"}}}`)
		if m := p.response(ctx, `"no-args"`); m.Error != nil && m.Error.Code != -32602 {
			t.Errorf("round %d: add with bad arguments: %+v, want an isError result or invalid params", round, m.Error)
		}
		// A blank line and an unknown notification: no answer is due for
		// the notification; mcp-go answers the blank line with a parse
		// error, which is allowed too. A ping after them fences them off.
		p.send(``)
		p.send(`{"jsonrpc":"2.0","method":"notifications/no-such-notification"}`)
		if m := p.request(ctx, "ping", nil); m.Error != nil {
			t.Fatalf("round %d: ping after the broken lines: %+v", round, m.Error)
		}
		blank := 0
		p.stash = slices.DeleteFunc(p.stash, func(m rpcMessage) bool {
			if blank == 0 && nullID(-32700)(m) {
				blank++
				return true
			}
			return false
		})
		if round == 0 {
			p.initialize(ctx)
		}
	}
	if names := p.toolNames(ctx); !slices.Contains(names, "add") {
		t.Fatalf("tools/list after the broken lines lacks add: %v", names)
	}
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 20, "b": 22}); isErr || text != "42" {
		t.Fatalf("add after the broken lines: isError=%v %q", isErr, text)
	}
	// Nothing else was answered: every message was asked for. A stray
	// response (to the notification, say) would be a protocol error.
	for _, m := range p.stash {
		if m.Method == "" {
			t.Errorf("unexpected response: id=%s error=%+v result=%.200s", m.ID, m.Error, m.Result)
		}
	}
}

// stuckServer is a stdio MCP server in sh: it answers initialize and
// tools/list with two tools and never answers tools/call. stuck_forever
// notes each call in the file named by its first argument; flood_stdout
// writes 3 MB to stdout without a newline.
const stuckServer = `called="$1"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([^,}]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"stuck\",\"version\":\"0\"}}}" ;;
    *'"method":"tools/list"'*)
      printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"tools\":[{\"name\":\"stuck_forever\",\"description\":\"Never answers\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"flood_stdout\",\"description\":\"Floods stdout\",\"inputSchema\":{\"type\":\"object\"}}]}}" ;;
    *'"name":"flood_stdout"'*)
      head -c 3000000 /dev/zero | tr '\0' x ;;
    *'"method":"tools/call"'*)
      echo "$id" >> "$called" ;;
  esac
done
`

// stuckConfig writes the stuck server next to the demo servers and returns
// the config and the file each call is noted in.
func stuckConfig(t *testing.T, top string) (cfg, called string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "stuck.sh")
	if err := os.WriteFile(script, []byte(stuckServer), 0o600); err != nil {
		t.Fatal(err)
	}
	called = filepath.Join(dir, "called")
	cfg = demoConfig(t, top, "  stuck:\n    command: sh\n    args: ["+yamlString(script)+", "+yamlString(called)+"]\n")
	return cfg, called
}

// TestSlowUpstreamTimesOut: a server that never answers a call is cut off
// by timeouts.call with an isError result naming the server and the
// timeout; the session and the other servers go on working.
func TestSlowUpstreamTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, _ := stuckConfig(t, "timeouts:\n  call: 1s\n")
	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	p.initialize(ctx)
	for range 2 { // the second call shows the first left nothing wedged
		callCtx, callCancel := context.WithTimeout(ctx, 30*time.Second)
		isErr, text := p.callTool(callCtx, "stuck_forever", map[string]any{})
		callCancel()
		t.Logf("stuck_forever: isError=%v %q", isErr, text)
		if !isErr || !strings.Contains(text, `"stuck"`) || !strings.Contains(text, "1s") {
			t.Errorf("stuck_forever: isError=%v %q, want an isError result naming server \"stuck\" and the 1s timeout", isErr, text)
		}
	}
	if isErr, text := p.callTool(ctx, "reverse_text", map[string]any{"text": "ok"}); isErr || text != "ko" {
		t.Errorf("reverse_text next to a stuck server: isError=%v %q", isErr, text)
	}
}

// TestUpstreamDiesDuringCall kills a server while a call to it is in
// flight (with a call timeout far away): the waiting call must end at once
// with an isError result naming the server.
func TestUpstreamDiesDuringCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, called := stuckConfig(t, "timeouts:\n  call: 10m\n")
	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	p.initialize(ctx)
	p.send(`{"jsonrpc":"2.0","id":"in-flight","method":"tools/call","params":{"name":"stuck_forever","arguments":{}}}`)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(called); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call never reached the stuck server\nstderr:\n%s", p.stderrText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stuck := findChild(t, p.pid(), "stuck.sh")
	if err := testenv.KillProcessGroup(stuck); err != nil {
		t.Fatal(err)
	}
	callCtx, callCancel := context.WithTimeout(ctx, 20*time.Second)
	defer callCancel()
	isErr, text := p.toolResult("stuck_forever", p.response(callCtx, `"in-flight"`))
	t.Logf("in-flight call after the kill: isError=%v %q", isErr, text)
	if !isErr || !strings.Contains(text, `"stuck"`) {
		t.Errorf("in-flight call when its server died: isError=%v %q, want an isError result naming server \"stuck\"", isErr, text)
	}
	if isErr, text := p.callTool(ctx, "reverse_text", map[string]any{"text": "ok"}); isErr || text != "ko" {
		t.Errorf("reverse_text after the stuck server died: isError=%v %q", isErr, text)
	}
}

// TestUpstreamFloodsStdout: a server that writes past max_result_bytes
// without a newline, while connecting or in answer to a call, is cut off
// with an error naming it and the limit, instead of growing the gateway's
// memory line by line until the connect or call timeout (or for ever).
func TestUpstreamFloodsStdout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, _ := stuckConfig(t, "max_result_bytes: 1048576\ntimeouts:\n  connect: 1m\n  call: 10m\n")
	// A second config file: the same servers plus one that floods at once.
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	flooding := pidFileScript(filepath.Join(t.TempDir(), "flood.pids"), "head -c 5000000 /dev/zero; wait")
	cfg = writeConfig(t, "flood.yaml", string(data)+"  flood:\n    command: sh\n    args: [-c, "+yamlString(flooding)+"]\n")

	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	initCtx, initCancel := context.WithTimeout(ctx, 30*time.Second) // far below connect: 1m
	p.initialize(initCtx)
	initCancel()
	floodLine := regexp.MustCompile(`✗ flood\s.*`)
	line := floodLine.FindString(p.stderr.WaitFor(ctx, floodLine.MatchString))
	if !strings.Contains(line, "1048576") || !strings.Contains(line, "max_result_bytes") {
		t.Errorf("the failure line for flood does not name the limit: %q\nstderr:\n%s", line, p.stderrText())
	}

	callCtx, callCancel := context.WithTimeout(ctx, 30*time.Second) // far below call: 10m
	defer callCancel()
	isErr, text := p.callTool(callCtx, "flood_stdout", map[string]any{})
	t.Logf("flood_stdout: isError=%v %q", isErr, text)
	if !isErr || !strings.Contains(text, `"stuck"`) || !strings.Contains(text, "max_result_bytes") {
		t.Errorf("flood_stdout: isError=%v %q, want an isError result naming server \"stuck\" and max_result_bytes", isErr, text)
	}
	if isErr, text := p.callTool(ctx, "reverse_text", map[string]any{"text": "ok"}); isErr || text != "ko" {
		t.Errorf("reverse_text after a server flooded: isError=%v %q", isErr, text)
	}
}
