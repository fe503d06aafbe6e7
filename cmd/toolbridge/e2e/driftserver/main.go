// Command driftserver is a stdio MCP server for the trust tests: it serves
// the tools of one server of a catalog file ({"servers":[{"name","tools"}]},
// the format of testdata/reference-servers/catalog.json) exactly as the file
// defines them, and when the file changes it serves the new definitions and
// sends notifications/tools/list_changed: a server whose tool definitions
// drift, within one run or between two. Every call answers
// "called SERVER::TOOL" with its arguments.
//
//	driftserver CATALOG SERVER
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config/toolid"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: driftserver CATALOG SERVER")
		os.Exit(2)
	}
	path, name := os.Args[1], os.Args[2]
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
	raw, err := load(s, path, name, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driftserver:", err)
		os.Exit(1)
	}
	go watch(s, path, name, raw)
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "driftserver:", err)
		os.Exit(1)
	}
}

// watch reloads the catalog whenever its bytes change. Polling keeps the
// server free of dependencies; the tests wait for list_changed, not for time.
func watch(s *server.MCPServer, path, name string, last []byte) {
	for range time.Tick(50 * time.Millisecond) {
		raw, err := os.ReadFile(path)
		if err != nil || bytes.Equal(raw, last) || !json.Valid(raw) {
			continue
		}
		if raw, err = load(s, path, name, raw); err != nil {
			fmt.Fprintln(os.Stderr, "driftserver:", err)
			continue
		}
		last = raw
	}
}

// load reads the catalog (or uses raw) and serves server name's tools,
// replacing the ones served before; mcp-go sends list_changed.
func load(s *server.MCPServer, path, name string, raw []byte) ([]byte, error) {
	if raw == nil {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	var cat struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	for _, srv := range cat.Servers {
		if srv.Name != name {
			continue
		}
		var tools []server.ServerTool
		for _, t := range srv.Tools {
			var tool mcp.Tool
			if err := json.Unmarshal(t, &tool); err != nil {
				return nil, fmt.Errorf("reading a tool of %s: %w", name, err)
			}
			// Serve the schemas byte for byte as the file has them.
			var schemas struct {
				In  json.RawMessage `json:"inputSchema"`
				Out json.RawMessage `json:"outputSchema"`
			}
			_ = json.Unmarshal(t, &schemas)
			tool.InputSchema, tool.OutputSchema = mcp.ToolInputSchema{}, mcp.ToolOutputSchema{}
			tool.RawInputSchema, tool.RawOutputSchema = schemas.In, schemas.Out
			id := toolid.Join(name, tool.Name)
			tools = append(tools, server.ServerTool{Tool: tool, Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args, _ := json.Marshal(req.GetArguments())
				return mcp.NewToolResultText("called " + id + " " + string(args)), nil
			}})
		}
		s.SetTools(tools...)
		return raw, nil
	}
	return nil, fmt.Errorf("%s has no server %q", path, name)
}
