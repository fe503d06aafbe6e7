package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// TestDemoMetaAnswersMatchOutputSchemas holds the meta-tools' answers
// about every demo tool to the output schemas the client listed, as a
// strict client does: each tool's search hit, and its describe answer in
// both formats.
func TestDemoMetaAnswersMatchOutputSchemas(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.Mode = config.ModeOn
	s, err := openSession(ctx, &cfg, demoSpecs(&cfg), io.Discard, nil, bridge.ClientHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]mcp.Tool{}
	for _, tool := range list.Tools {
		listed[tool.Name] = tool
	}
	checker := bridge.NewResultChecker()
	check := func(name, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := s.call(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		if problems := checker.Check(listed[name], res); len(problems) > 0 {
			t.Fatalf("%s %s: a strict client rejects the answer:\n- %s", name, args, strings.Join(problems, "\n- "))
		}
		return res
	}
	deferred := s.g.Catalog().Deferred
	if len(deferred) != 58 {
		t.Fatalf("%d demo tools deferred, want all 58", len(deferred))
	}
	for _, tool := range deferred {
		res := check(toolid.MetaSearch, `{"query":"`+tool.ID+`","limit":20}`)
		if text := resultText(res); !strings.Contains(text, tool.ID+" — ") {
			t.Errorf("searching %s does not find it:\n%s", tool.ID, text)
		}
		for _, format := range []string{"mcp", "openai"} {
			if res := check(toolid.MetaDescribe, `{"tool_name":"`+tool.ID+`","format":"`+format+`"}`); res.IsError {
				t.Errorf("describing %s: %s", tool.ID, resultText(res))
			}
		}
	}
}
