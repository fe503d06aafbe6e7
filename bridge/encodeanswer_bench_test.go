package bridge

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkEncodeAnswer is the stdio fast path's encoding of a plain
// answer, as go-demo's add gives it (a text block and structured
// content), to a client that numbers its requests.
//
//	go test ./bridge -run '^$' -bench EncodeAnswer -benchmem -count 6
func BenchmarkEncodeAnswer(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent{Type: "text", Text: "5"}},
		RawStructuredContent: json.RawMessage(`{"sum":5}`)}
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(float64(12)), any(res))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeAnswer(resp); err != nil {
			b.Fatal(err)
		}
	}
}
