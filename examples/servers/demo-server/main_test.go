package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/toolbridge/toolbridge/examples/demo"
)

// binPath is the demo-server binary built once for the whole test run.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "demo-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "demo-server")
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building demo-server: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func initialize(ctx context.Context, t *testing.T, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "demo-server-test", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return res
}

func callTool(ctx context.Context, t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s failed: %v", name, res.Content)
	}
	return res
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// TestStdioSession runs the binary as a stdio child through mcp-go's stdio
// client and checks the process is gone after Close.
func TestStdioSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	tr := transport.NewStdioWithOptions(binPath, nil, []string{"notes"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd = exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			return cmd, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("starting: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()

	if res := initialize(ctx, t, c); res.ServerInfo.Name != "notes" {
		t.Errorf("server name %q, want notes", res.ServerInfo.Name)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("listing tools: %v", err)
	}
	want, _ := demo.Lookup("notes")
	if got := len(tools.Tools); got != len(want.MCP.ListTools()) || got < 8 {
		t.Errorf("listed %d tools, want %d", got, len(want.MCP.ListTools()))
	}
	if !slices.ContainsFunc(tools.Tools, func(tl mcp.Tool) bool { return tl.Name == "create_note" }) {
		t.Error("create_note is not listed")
	}
	created := structured(t, callTool(ctx, t, c, "create_note", map[string]any{"title": "over stdio", "body": "hello"}))
	got := structured(t, callTool(ctx, t, c, "get_note", map[string]any{"id": created["id"]}))
	if got["title"] != "over stdio" || got["body"] != "hello" {
		t.Errorf("read back %v", got)
	}

	pid := cmd.Process.Pid
	closed = true
	if err := c.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("the child was not waited for")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the child exited with %d, want 0 (clean exit on end of stdin)", code)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Close (kill 0: %v)", pid, err)
	}
}

// TestStdioPipedInput checks that a script piping requests and closing
// stdin at once still gets every answer.
func TestStdioPipedInput(t *testing.T) {
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	for i := range 5 {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add","arguments":{"a":%d,"b":1}}}`, 10+i, i))
	}
	msgs = append(msgs, `{"jsonrpc":"2.0","id":"bad","method":"tools/call","params":{"name":"divide","arguments":{"a":1,"b":0}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "math")
	cmd.Stdin = strings.NewReader(strings.Join(msgs, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running: %v\n%s", err, stderr.String())
	}
	answers := map[string]map[string]any{}
	for line := range strings.Lines(stdout.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line is not JSON-RPC: %q", line)
		}
		answers[fmt.Sprint(m["id"])] = m
	}
	for i := range 5 {
		id := fmt.Sprint(10 + i)
		res, _ := answers[id]["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if sc["result"] != float64(i+1) {
			t.Errorf("answer to id %s = %v, want result %d", id, answers[id], i+1)
		}
	}
	if res, _ := answers["bad"]["result"].(map[string]any); res["isError"] != true {
		t.Errorf("divide by zero answered %v, want isError", answers["bad"])
	}
	if !strings.Contains(stderr.String(), "serving math (14 tools) on stdio") {
		t.Errorf("stderr lacks the startup line: %q", stderr.String())
	}
}

// TestHTTPSession serves over streamable HTTP on a free port, calls a tool
// and stops the server with SIGTERM.
func TestHTTPSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(binPath, "-http", "127.0.0.1:0", "math")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting: %v", err)
	}
	defer func() { _ = cmd.Process.Kill() }() // no-op once it has exited

	urls := make(chan string, 1)
	logDone := make(chan string, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := regexp.MustCompile(`http://\S+/mcp`).FindString(sc.Text()); m != "" {
				select {
				case urls <- m:
				default:
				}
			}
		}
		logDone <- log.String()
	}()
	var url string
	select {
	case url = <-urls:
	case <-ctx.Done():
		t.Fatal("the server never printed its URL")
	}

	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("starting client: %v", err)
	}
	if res := initialize(ctx, t, c); res.ServerInfo.Name != "math" {
		t.Errorf("server name %q, want math", res.ServerInfo.Name)
	}
	got := structured(t, callTool(ctx, t, c, "evaluate_expression", map[string]any{"expression": "2 + 3 * 4"}))
	if got["result"] != float64(14) {
		t.Errorf("2 + 3 * 4 = %v, want 14", got["result"])
	}
	if err := c.Close(); err != nil {
		t.Errorf("closing client: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signalling: %v", err)
	}
	var log string
	select {
	case log = <-logDone:
	case <-ctx.Done():
		t.Fatal("the server did not stop after SIGTERM")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the server exited with %v after SIGTERM, want 0\n%s", err, log)
	}
}

func TestRunCommandLine(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderrHas string
	}{
		{name: "list", args: []string{"-list"}, code: 0, stdout: strings.Join(demo.Names(), "\n") + "\n"},
		{name: "help", args: []string{"-h"}, code: 0, stderrHas: "usage: demo-server"},
		{name: "no name", args: nil, code: 2, stderrHas: "name a demo server"},
		{name: "unknown name", args: []string{"nope"}, code: 2, stderrHas: `unknown demo server "nope"; choose one of: notes, math`},
		{name: "bad flag", args: []string{"-port", "1"}, code: 2, stderrHas: "flag provided but not defined: -port"},
		{name: "two names", args: []string{"notes", "math"}, code: 2, stderrHas: `unexpected arguments after "notes": math`},
		{name: "bad listen address", args: []string{"math", "-http", "127.0.0.1:notaport"}, code: 1, stderrHas: "listening on 127.0.0.1:notaport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if tt.stdout != "" && stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.stdout)
			}
			if tt.stdout == "" && stdout.Len() > 0 {
				t.Errorf("unexpected stdout %q", stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrHas) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderrHas)
			}
		})
	}
}

// TestRunStdioInProcess serves one request through run with an in-memory
// stdin, checking stdout carries only JSON-RPC and stderr the log line.
func TestRunStdioInProcess(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sha256_hash","arguments":{"text":"abc"}}}` + "\n"
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"text"}, strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
		t.Errorf("stdout lacks the sha256 of abc:\n%s", stdout.String())
	}
	for line := range strings.Lines(stdout.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("stdout line is not JSON: %q", line)
		}
	}
	if !strings.Contains(stderr.String(), "serving text") {
		t.Errorf("stderr %q lacks the startup line", stderr.String())
	}
}
