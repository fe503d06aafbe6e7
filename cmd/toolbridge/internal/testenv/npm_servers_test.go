package testenv

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestNPMServersOverStdio starts each pinned npm reference server over stdio
// with mcp-go's client, lists its tools, makes one real call, closes it, and
// checks that the server process is gone.
func TestNPMServersOverStdio(t *testing.T) {
	env := NPM(t)
	fsRoot := t.TempDir()
	memoryFile := filepath.Join(t.TempDir(), "memory.jsonl")
	notePath := filepath.Join(fsRoot, "note.txt")

	tests := []struct {
		name     string
		bin      string
		args     []string
		env      []string
		wantTool string
		args2    map[string]any
		// verify checks the call's effect outside the MCP response.
		verify func(t *testing.T, text string)
	}{
		{
			name:     "filesystem",
			bin:      BinFilesystem,
			args:     []string{fsRoot},
			wantTool: "write_file",
			args2:    map[string]any{"path": notePath, "content": "written by toolbridge testenv"},
			verify: func(t *testing.T, _ string) {
				data, err := os.ReadFile(notePath)
				if err != nil || string(data) != "written by toolbridge testenv" {
					t.Errorf("%s holds %q, %v; want the written content", notePath, data, err)
				}
			},
		},
		{
			name:     "memory",
			bin:      BinMemory,
			env:      []string{"MEMORY_FILE_PATH=" + memoryFile},
			wantTool: "create_entities",
			args2: map[string]any{"entities": []any{map[string]any{
				"name": "toolbridge", "entityType": "project", "observations": []any{"an MCP gateway"},
			}}},
			verify: func(t *testing.T, _ string) {
				data, err := os.ReadFile(memoryFile)
				if err != nil || !strings.Contains(string(data), `"toolbridge"`) || !strings.Contains(string(data), "an MCP gateway") {
					t.Errorf("%s holds %q, %v; want the created entity", memoryFile, data, err)
				}
			},
		},
		{
			name: "everything",
			bin:  BinEverything,
			// The first argument selects the transport; stdio is also the default.
			args:     []string{"stdio"},
			wantTool: "echo",
			args2:    map[string]any{"message": "ping-4711"},
			verify: func(t *testing.T, text string) {
				if !strings.Contains(text, "ping-4711") {
					t.Errorf("echo returned %q, want it to contain ping-4711", text)
				}
			},
		},
	}
	// Sequential on purpose: the leak check compares this process's children
	// before and after, which parallel subtests would blur.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ChildProcesses(os.Getpid())
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()

			c, err := client.NewStdioMCPClient(env.Bin(tt.bin), tt.env, tt.args...)
			if err != nil {
				t.Fatalf("starting %s: %v", tt.bin, err)
			}
			closed := false
			defer func() {
				if !closed {
					_ = c.Close()
				}
			}()
			if err := c.Start(ctx); err != nil {
				t.Fatalf("starting the client: %v", err)
			}
			started := newPids(before, ChildProcesses(os.Getpid()))
			if len(started) == 0 {
				t.Fatalf("no new child process after starting %s: the leak check below could not fail", tt.bin)
			}

			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
			init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge-testenv", Version: "0.0.0"}
			res, err := c.Initialize(ctx, init)
			if err != nil {
				t.Fatalf("initializing %s: %v", tt.bin, err)
			}
			t.Logf("%s: server %s %s, protocol %s", tt.name, res.ServerInfo.Name, res.ServerInfo.Version, res.ProtocolVersion)

			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("listing tools: %v", err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			t.Logf("%s: %d tools: %s", tt.name, len(names), strings.Join(names, " "))
			if !slices.Contains(names, tt.wantTool) {
				t.Fatalf("tools/list lacks %q: %v", tt.wantTool, names)
			}

			call := mcp.CallToolRequest{}
			call.Params.Name = tt.wantTool
			call.Params.Arguments = tt.args2
			out, err := c.CallTool(ctx, call)
			if err != nil {
				t.Fatalf("calling %s: %v", tt.wantTool, err)
			}
			text := resultText(out)
			if out.IsError {
				t.Fatalf("%s returned an error result: %s", tt.wantTool, text)
			}
			tt.verify(t, text)

			if err := c.Close(); err != nil {
				t.Logf("closing %s: %v", tt.bin, err)
			}
			closed = true
			for _, pid := range started {
				if slices.Contains(ChildProcesses(os.Getpid()), pid) || ProcessAlive(pid) {
					t.Errorf("%s (pid %d) still present after Close", tt.bin, pid)
				}
			}
		})
	}
}

// newPids returns the pids in after that are not in before.
func newPids(before, after []int) []int {
	var out []int
	for _, pid := range after {
		if !slices.Contains(before, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// resultText joins a tool result's text content.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
