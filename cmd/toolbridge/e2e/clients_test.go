package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// The clients people run, in front of the real binary: the official
// TypeScript SDK client (what Claude Desktop and most hosts build on) and
// MCP Inspector's CLI. Both check answers more strictly than mcp-go's
// client: structuredContent against the tool's outputSchema, every message
// against the protocol's schemas.

// TestTypeScriptSDKClient plays whole sessions with the TypeScript SDK
// client (testenv's client-session.mjs) over stdio and streamable HTTP:
// against the demo, the demo with disclosure activate, and the npm
// reference servers. Every step the driver planned must report success;
// a failure names the step.
func TestTypeScriptSDKClient(t *testing.T) {
	env := testenv.NPM(t)
	t.Setenv("TOOLBRIDGE_STATE_DIR", t.TempDir())
	ref := referenceServers(t)
	const noteText = "hello from the TypeScript SDK session"
	note := filepath.Join(ref.root, "note.txt")
	if err := os.WriteFile(note, []byte(noteText), 0o600); err != nil {
		t.Fatal(err)
	}
	npmFiles := testenv.TSSession{Root: ref.root, Note: note, NoteText: noteText}

	tests := []struct {
		name    string
		session string
		command string // the toolbridge command; its args follow
		args    []string
	}{
		{"demo", testenv.SessionDemo, "demo", nil},
		{"activate", testenv.SessionActivate, "demo", []string{"--disclosure", "activate"}},
		{"npm servers", testenv.SessionNPM, "serve", []string{"-c", ref.config, "--mode", "on"}},
	}
	for _, tt := range tests {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(tt.name+" over "+transport, func(t *testing.T) {
				s := npmFiles
				s.Session, s.Transport = tt.session, transport
				var stderr *testenv.SyncBuffer
				if transport == "stdio" {
					s.Command, s.Args = binary, append([]string{tt.command}, tt.args...)
				} else {
					g := startHTTPCommand(t, tt.command, tt.args...)
					s.URL, stderr = g.url, g.stderr
				}
				report, driverErr, err := env.RunTSSession(t.Context(), s)
				if stderr != nil {
					driverErr += "\n--- toolbridge stderr ---\n" + stderr.String()
				}
				if err != nil {
					t.Fatalf("%v\n--- stderr ---\n%s", err, driverErr)
				}
				for _, p := range report.Problems() {
					t.Error(p)
				}
				if t.Failed() {
					t.Logf("--- stderr ---\n%s", driverErr)
				}
				t.Logf("%d steps passed", len(report.Steps))
			})
		}
	}
}

// inspector runs MCP Inspector's CLI against toolbridge over stdio: args
// are Inspector's own, after the toolbridge command line. It returns the
// JSON answer Inspector prints.
func inspector(t *testing.T, env *testenv.NPMEnv, toolbridge []string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Inspector starts the server with a default environment of its own
	// (HOME, PATH…), not the test's: the state directory is passed with -e,
	// or toolbridge would pin into the user's real one.
	cmdline := append(append([]string{"--cli", "-e", "TOOLBRIDGE_STATE_DIR=" + os.Getenv("TOOLBRIDGE_STATE_DIR"), binary}, toolbridge...), args...)
	cmd := testenv.CommandContext(ctx, env.Bin(testenv.BinInspector), cmdline...)
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	var answer map[string]any
	if err := json.Unmarshal(out, &answer); err != nil {
		t.Fatalf("inspector %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	if answer["error"] != nil {
		t.Fatalf("inspector %s: %v", strings.Join(args, " "), answer["error"])
	}
	return answer
}

// TestInspectorCLI does what a user of MCP Inspector's CLI does: list the
// tools, search (a parameterless hit among the answers), describe and call,
// against the npm reference servers. toolbridge gets its config with -c:
// Inspector keeps --config for itself.
func TestInspectorCLI(t *testing.T) {
	env := testenv.NPM(t)
	t.Setenv("TOOLBRIDGE_STATE_DIR", t.TempDir())
	ref := referenceServers(t)
	note := filepath.Join(ref.root, "note.txt")
	if err := os.WriteFile(note, []byte("read through Inspector"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Inspector lists once and gives up: the first tools/list must wait
	// for the npm servers however long node takes to start them on a
	// loaded machine (once at load ~20 the 5 s default answered an empty
	// list). On an idle machine they are up in about 2 s, so it waits no
	// longer there.
	toolbridge := []string{"serve", "-c", ref.config, "--mode", "on", "--startup-wait", "3m"}
	call := func(tool string, args ...string) (string, map[string]any) {
		t.Helper()
		argv := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			argv = append(argv, "--tool-arg", a)
		}
		answer := inspector(t, env, toolbridge, argv...)
		if answer["isError"] == true {
			t.Fatalf("%s %v: isError: %v", tool, args, answer["content"])
		}
		var text []string
		for _, c := range answer["content"].([]any) {
			if c, ok := c.(map[string]any); ok && c["type"] == "text" {
				text = append(text, c["text"].(string))
			}
		}
		sc, _ := answer["structuredContent"].(map[string]any)
		return strings.Join(text, "\n"), sc
	}

	list := inspector(t, env, toolbridge, "--method", "tools/list")
	var names []string
	for _, tool := range list["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	for _, want := range []string{"tool_search", "tool_describe", "tool_call"} {
		if !contains(names, want) {
			t.Fatalf("tools/list lacks %s: %v", want, names)
		}
	}

	_, found := call("tool_search", "query=list allowed directories")
	var hit map[string]any
	for _, h := range found["tools"].([]any) {
		if h := h.(map[string]any); h["id"] == "filesystem::list_allowed_directories" {
			hit = h
		}
	}
	if params, ok := hit["parameters"].([]any); hit == nil || !ok || len(params) != 0 {
		t.Fatalf("tool_search: filesystem::list_allowed_directories missing or without parameters []: %v", found)
	}

	text, _ := call("tool_describe", `tool_names=["filesystem::read_text_file","filesystem::list_allowed_directories"]`)
	var described []map[string]any
	if err := json.Unmarshal([]byte(text), &described); err != nil || len(described) != 2 || described[0]["inputSchema"] == nil {
		t.Fatalf("tool_describe: %v\n%s", err, text)
	}

	text, _ = call("tool_call", "tool_name=filesystem::read_text_file", `tool_args={"path":`+jsonString(note)+`}`)
	if !strings.Contains(text, "read through Inspector") {
		t.Fatalf("tool_call read_text_file: %s", text)
	}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
