package bridge

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// TestCoreNameOnManyServersIsListedOnce: four file servers each have the
// core name read_file; bridge mode lists one of them, and tool_search
// finds the other three.
func TestCoreNameOnManyServersIsListedOnce(t *testing.T) {
	_, c := startGateway(t, bridgeConfig(), map[string]*server.MCPServer{
		"fs1": fileServer(), "fs2": fileServer(), "fs3": fileServer(), "fs4": fileServer(),
	})
	var reads []string
	for _, n := range toolNames(t, c) {
		if strings.Contains(n, "read_file") {
			reads = append(reads, n)
		}
	}
	if len(reads) != 1 {
		t.Errorf("tools/list has %v, want one read_file", reads)
	}
	res, _ := callText(t, c, toolid.MetaSearch, map[string]any{"query": "read file", "limit": 10})
	var sr SearchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range sr.Tools {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	if want := []string{"fs2::read_file", "fs3::read_file", "fs4::read_file"}; !slices.Equal(ids, want) {
		t.Errorf("tool_search finds %v, want %v", ids, want)
	}
}
