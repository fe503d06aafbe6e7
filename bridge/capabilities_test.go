package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// serverCapabilityKeys are the members of ServerCapabilities in the MCP
// schema (2025-11-25). sampling, elicitation and roots are members of
// ClientCapabilities only.
var serverCapabilityKeys = []string{"experimental", "logging", "completions", "prompts", "resources", "tools", "tasks"}

// TestInitializeAdvertisesOnlyServerCapabilities: the initialize result
// lists only capabilities the spec defines for servers. It used to carry
// sampling and elicitation, which are client capabilities (#24, item 15).
func TestInitializeAdvertisesOnlyServerCapabilities(t *testing.T) {
	g, _ := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha")})
	ctx := context.Background()
	c := g.InProcessClient(ClientHandlers{})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.Capabilities = mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}, Elicitation: &mcp.ElicitationCapability{}}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(res.Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(raw, &caps); err != nil {
		t.Fatal(err)
	}
	for key := range caps {
		if !slices.Contains(serverCapabilityKeys, key) {
			t.Errorf("initialize advertises server capability %q, which the spec defines only for clients: %s", key, raw)
		}
	}
	for _, want := range []string{"tools", "prompts", "resources", "logging", "completions"} {
		if _, ok := caps[want]; !ok {
			t.Errorf("initialize lacks the %q capability: %s", want, raw)
		}
	}
}
