package bridge

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// samplingServer is an upstream whose tool ask asks the client's model
// through sampling/createMessage and answers with what it got, or the
// error.
func samplingServer() *server.MCPServer {
	s := server.NewMCPServer("asker", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{
			CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hello?")}},
				MaxTokens: 10,
			},
		})
		if err != nil {
			return mcp.NewToolResultText("sampling failed: " + err.Error()), nil
		}
		text, _ := res.Content.(mcp.TextContent)
		return mcp.NewToolResultText("model: " + text.Text), nil
	})
	return s
}

type model struct{}

func (model) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("hi there")},
		Model:           "test-model",
	}, nil
}

// TestSamplingReachesOnlyClientsThatDeclareIt: an upstream's sampling
// request during a call reaches the calling client when it declared the
// sampling capability, and is refused at once, naming the capability,
// when it did not (#24, item 10).
func TestSamplingReachesOnlyClientsThatDeclareIt(t *testing.T) {
	g, _ := startGateway(t, testConfig(), map[string]*server.MCPServer{"asker": samplingServer()})
	able := connectClientWith(t, g, mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, ClientHandlers{Sampling: model{}})
	if _, text := callText(t, able, "ask", nil); text != "model: hi there" {
		t.Errorf("a client with sampling: ask answered %q, want the model's answer", text)
	}
	unable := connectClient(t, g, mcp.ClientCapabilities{})
	_, text := callText(t, unable, "ask", nil)
	if !strings.Contains(text, "did not declare the sampling capability") {
		t.Errorf("a client without sampling: ask answered %q, want the upstream told the client cannot", text)
	}
}
