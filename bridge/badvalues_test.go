package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config/toolid"
)

func TestHugeInputIsNotEchoedWhole(t *testing.T) {
	_, c := startBridge(t, bridgeConfig())
	huge := strings.Repeat("x", 1<<20)
	long := strings.Repeat("n", 10<<10)
	tests := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"1 MB query", toolid.MetaSearch, map[string]any{"query": huge}, "No tool matches"},
		{"1 MB query of words", toolid.MetaSearch, map[string]any{"query": strings.Repeat("create issue ", 80000)}, "issues::create_issue"},
		{"10 KB name in tool_call", toolid.MetaCall, map[string]any{"tool_name": long}, "Unknown tool"},
		{"10 KB name in tool_describe", toolid.MetaDescribe, map[string]any{"tool_name": long}, "Unknown tool"},
	}
	for _, tt := range tests {
		res, text := callText(t, c, tt.tool, tt.args)
		if !strings.Contains(text, tt.want) {
			t.Errorf("%s: %.300q, want it to contain %q", tt.name, text, tt.want)
		}
		// The answer repeats at most a bounded prefix of what was sent.
		if strings.Contains(text, strings.Repeat("x", 200)) || strings.Contains(text, strings.Repeat("n", 200)) || len(text) > 8<<10 {
			t.Errorf("%s: the answer (%d bytes) echoes the input: %.300q", tt.name, len(text), text)
		}
		structured, _ := json.Marshal(res.StructuredContent)
		if bytes.Contains(structured, bytes.Repeat([]byte("x"), 200)) || bytes.Contains(structured, bytes.Repeat([]byte("n"), 200)) {
			t.Errorf("%s: structured content echoes the input: %.300s", tt.name, structured)
		}
	}
}

func TestAmbiguousBareNameListsCandidates(t *testing.T) {
	_, c := startGateway(t, bridgeConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha"), "beta": echoServer("beta")})
	for _, tool := range []string{toolid.MetaCall, toolid.MetaDescribe} {
		res, text := callText(t, c, tool, map[string]any{"tool_name": "echo", "tool_args": map[string]any{"text": "x"}})
		if !res.IsError || !strings.Contains(text, "ambiguous") || !strings.Contains(text, "alpha::echo") || !strings.Contains(text, "beta::echo") {
			t.Errorf("%s of a bare name two servers have: isError=%v %q; want it called ambiguous with both ids", tool, res.IsError, text)
		}
	}
	// A unique bare name still resolves.
	if res, text := callText(t, c, toolid.MetaCall, map[string]any{"tool_name": "alpha::echo", "tool_args": map[string]any{"text": "x"}}); res.IsError {
		t.Fatalf("canonical id: %q", text)
	}
}

func TestToolsWithBadNamesAreSkipped(t *testing.T) {
	up := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("fine"), nil
	}
	up.AddTool(mcp.NewTool("good"), ok)
	up.AddTool(mcp.Tool{Name: "", InputSchema: mcp.ToolInputSchema{Type: "object"}}, ok)
	up.AddTool(mcp.Tool{Name: "bell\a", InputSchema: mcp.ToolInputSchema{Type: "object"}}, ok)
	up.AddTool(mcp.Tool{Name: strings.Repeat("l", 300), InputSchema: mcp.ToolInputSchema{Type: "object"}}, ok)
	up.AddTool(mcp.NewTool("also_good"), ok)

	var progress bytes.Buffer
	g, err := New(testConfig(), Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: up}}); err != nil {
		t.Fatalf("one bad tool failed the server: %v", err)
	}
	var names []string
	for _, tool := range g.Catalog().Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "also_good good" && strings.Join(names, " ") != "good also_good" {
		t.Errorf("catalog %v, want the two good tools", names)
	}
	out := progress.String()
	for _, want := range []string{"has no name", "control characters", "more than 128"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks a warning with %q:\n%s", want, out)
		}
	}
}
