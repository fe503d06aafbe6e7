package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
)

// listedTokens counts, with o200k_base, what the client really receives:
// each tool of the gateway's tools/list response as encoded on the wire (a
// client library would decode the schemas into its own types and lose
// keywords, so the count is taken before that).
func listedTokens(t *testing.T, g *Gateway) (tools, tokens int) {
	t.Helper()
	resp := g.MCPServer().HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	wire, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(wire, &msg); err != nil {
		t.Fatal(err)
	}
	counter, err := classify.NewCounter(config.TokenizerO200k)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range msg.Result.Tools {
		tool, err := upstream.DecodeTool(raw) // keeps the schemas' bytes
		if err != nil {
			t.Fatal(err)
		}
		tokens += counter.Count(tool)
	}
	return len(msg.Result.Tools), tokens
}

func gatewayFor(t *testing.T, cfg *config.Config, specs []upstream.Spec) *Gateway {
	t.Helper()
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// TestTokenSavingOnReferenceServers measures the tokens of the client's
// tools/list in bridge mode against pass-through, on the 13 real reference
// servers (99 tools), catalog hint included. With core_tools: [] every
// tool is deferrable; the goal is at least 90% fewer tokens.
func TestTokenSavingOnReferenceServers(t *testing.T) {
	off := config.Default()
	off.Mode = config.ModeOff
	passTools, passTokens := listedTokens(t, gatewayFor(t, &off, referenceUpstreams(t)))
	if passTools != 99 {
		t.Fatalf("pass-through lists %d tools, want 99", passTools)
	}

	allDeferred := config.Default()
	allDeferred.Mode = config.ModeOn
	allDeferred.CoreTools = []string{}
	bridgeTools, bridgeTokens := listedTokens(t, gatewayFor(t, &allDeferred, referenceUpstreams(t)))
	saving := 100 * float64(passTokens-bridgeTokens) / float64(passTokens)
	t.Logf("core_tools: []  pass-through %d tools %d tokens; bridge %d tools %d tokens; saving %.1f%%",
		passTools, passTokens, bridgeTools, bridgeTokens, saving)
	if bridgeTools != 3 {
		t.Errorf("bridge mode lists %d tools, want the 3 meta-tools", bridgeTools)
	}
	if saving < 90 {
		t.Errorf("saving %.1f%% < 90%%", saving)
	}

	defaults := config.Default()
	defaults.Mode = config.ModeOn // at default settings auto stays pass-through (6.9% < 10%)
	defTools, defTokens := listedTokens(t, gatewayFor(t, &defaults, referenceUpstreams(t)))
	defSaving := 100 * float64(passTokens-defTokens) / float64(passTokens)
	t.Logf("default core set, mode on: bridge %d tools %d tokens; saving %.1f%%", defTools, defTokens, defSaving)
	if defTools != 3+7 { // the filesystem server's 7 file tools stay core
		t.Errorf("default settings list %d tools, want 3 meta-tools + 7 core file tools", defTools)
	}
	if defSaving < 80 {
		t.Errorf("default-settings saving %.1f%% < 80%%", defSaving)
	}
}
