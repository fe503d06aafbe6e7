package classify

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// refCatalog is the real tools/list of 13 MCP reference servers (see
// testdata/reference-servers/SOURCE).
const refCatalog = "testdata/reference-servers/catalog.json"

type catalogServer struct {
	Name  string
	Tools []mcp.Tool
}

// loadCatalog reads a {"servers":[{"name","tools":[MCP tool]}]} file. Each
// tool's inputSchema and outputSchema are kept verbatim in RawInputSchema
// and RawOutputSchema, as the gateway keeps them: mcp-go's structured
// schema would drop keys such as "$schema" that the client does receive.
func loadCatalog(tb testing.TB, path string) []catalogServer {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading catalog: %v", err)
	}
	var file struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		tb.Fatalf("decoding %s: %v", path, err)
	}
	var out []catalogServer
	for _, s := range file.Servers {
		cs := catalogServer{Name: s.Name}
		for _, raw := range s.Tools {
			tool, err := decodeTool(raw)
			if err != nil {
				tb.Fatalf("decoding a tool of %s: %v", s.Name, err)
			}
			cs.Tools = append(cs.Tools, tool)
		}
		out = append(out, cs)
	}
	return out
}

// decodeTool decodes one MCP tool the way the gateway keeps it.
func decodeTool(raw []byte) (mcp.Tool, error) {
	var tool mcp.Tool
	if err := json.Unmarshal(raw, &tool); err != nil {
		return mcp.Tool{}, err
	}
	var schemas struct {
		In  json.RawMessage `json:"inputSchema"`
		Out json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return mcp.Tool{}, err
	}
	if len(schemas.In) > 0 {
		tool.InputSchema, tool.RawInputSchema = mcp.ToolInputSchema{}, schemas.In
	}
	if len(schemas.Out) > 0 {
		tool.OutputSchema, tool.RawOutputSchema = mcp.ToolOutputSchema{}, schemas.Out
	}
	return tool, nil
}
