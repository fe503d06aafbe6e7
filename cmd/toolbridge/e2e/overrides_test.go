package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// overridesYAML overrides tools of the reference catalog: every field on
// github::create_issue, a rename that collides, a rule that matches
// nothing, and a rename of a tool that will be quarantined.
const overridesYAML = `tools:
  - match: "github::create_issue"
    name: open_ticket
    description_append: "Use it for bug reports from the team."
    keywords: [zorblax, ticket]
    args: {owner: acme}
    annotations: {destructiveHint: true}
  - match: "gitlab::create_issue"
    name: search_code
  - match: "github::create_isue"
    description: "never applied"
  - match: "memory::create_entities"
    name: remember
`

// TestToolOverrides plays issue #27's tool overrides as a user meets them:
// real stdio servers (drift servers over the reference catalog), the
// toolbridge binary, and the TypeScript SDK client holding every answer
// to its schema. Each field shows, and each refusal: a fixed argument
// sent by the model, a rename collision, a match that matches nothing,
// an override of a quarantined tool.
func TestToolOverrides(t *testing.T) {
	c := copyCatalog(t)
	env := stateEnv(t)
	// First start pins every tool as the upstreams define it.
	g := startStdio(t, env, "serve", "-c", driftConfig(t, c, "", "github", "gitlab", "memory", "filesystem"), "--mode", "on")
	if !contains(g.toolNames(t), "tool_search") {
		t.Fatalf("first start is not bridged: %v", g.toolNames(t))
	}
	g.close(t)

	// memory changes create_entities upstream: the override renaming it
	// must not hide that from trust.
	tool := c.tool(t, "memory", "create_entities")
	tool["description"] = tool["description"].(string) + poison
	c.write(t)
	cfg := driftConfig(t, c, overridesYAML, "github", "gitlab", "memory", "filesystem")
	g = startStdio(t, env, "serve", "-c", cfg, "--mode", "on")

	// The config errors only the servers' lists reveal are on stderr.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, want := range []string{
		`tools[1]: name \"search_code\" for gitlab::create_issue collides with github::search_code`,
		`tools[2]: match \"github::create_isue\" matches no tool (did you mean \"github::create_issue\"?)`,
	} {
		if line := g.stderr.WaitFor(ctx, func(s string) bool { return strings.Contains(s, want) }); !strings.Contains(line, "config error") {
			t.Errorf("stderr lacks %s:\n%s", want, g.stderr)
		}
	}

	res, text := g.call(t, "tool_call", map[string]any{"tool_name": "open_ticket", "tool_args": map[string]any{"repo": "r", "title": "Crash"}})
	if res.IsError || !strings.Contains(text, `called github::create_issue {"owner":"acme","repo":"r","title":"Crash"}`) {
		t.Errorf("open_ticket = %v %q, want create_issue with owner acme injected", res.IsError, text)
	}
	res, text = g.call(t, "tool_call", map[string]any{"tool_name": "open_ticket", "tool_args": map[string]any{"owner": "evil", "repo": "r", "title": "x"}})
	if !res.IsError || !strings.Contains(text, "owner is fixed") || strings.Contains(text, "called") {
		t.Errorf("a model-sent fixed argument = %v %q, want refused", res.IsError, text)
	}
	res, text = g.call(t, "tool_call", map[string]any{"tool_name": "remember", "tool_args": map[string]any{"entities": []any{}}})
	if !res.IsError || !strings.Contains(text, "memory::create_entities is quarantined") {
		t.Errorf("the quarantined, renamed tool = %v %q, want the quarantine message", res.IsError, text)
	}
	_, text = g.call(t, "tool_search", map[string]any{"query": "zorblax"})
	if !strings.Contains(text, "github::create_issue (or open_ticket) — ") {
		t.Errorf("the keyword finds nothing:\n%s", text)
	}
	res, _ = g.call(t, "tool_describe", map[string]any{"tool_name": "open_ticket"})
	doc, _ := json.Marshal(res.StructuredContent)
	var described struct {
		Tools []struct {
			ID          string          `json:"id"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations map[string]any  `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(doc, &described); err != nil || len(described.Tools) != 1 {
		t.Fatalf("tool_describe open_ticket = %s (%v)", doc, err)
	}
	d := described.Tools[0]
	if !strings.HasSuffix(d.Description, "Use it for bug reports from the team.") || strings.Contains(string(d.InputSchema), "owner") ||
		!strings.Contains(string(d.InputSchema), `"required":["repo","title"]`) || d.Annotations["destructiveHint"] != true {
		t.Errorf("tool_describe open_ticket = %s", doc)
	}
	// The name the model knows, and the real tool.
	if d.Name != "open_ticket" || d.ID != "github::create_issue" {
		t.Errorf("tool_describe open_ticket: name %q, id %q; want open_ticket and github::create_issue", d.Name, d.ID)
	}
	g.close(t)

	// config check judges the file alone; with --connect it lists the
	// servers' tools and says what start-up said, failing.
	if code, _, stderr := runCLI(t, env, "config", "check", cfg); code != 0 {
		t.Errorf("config check without --connect: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, env, "config", "check", "--connect", cfg)
	if code == 0 || !strings.Contains(stdout, "name: open_ticket") ||
		!strings.Contains(stderr, `config error: tools[2]: match "github::create_isue" matches no tool (did you mean "github::create_issue"?)`) ||
		!strings.Contains(stderr, `config error: tools[1]: name "search_code" for gitlab::create_issue collides with github::search_code`) {
		t.Errorf("config check --connect: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// The TypeScript SDK client, strict, over the same gateway, on both
	// transports: the overridden, renamed, already-listed, deprecated and
	// refused answers all hold to the meta-tools' output schema.
	calls := []testenv.TSCall{
		{Name: "tool_search", Args: map[string]any{"query": "zorblax"}, Want: "open_ticket"},
		{Name: "tool_search", Args: map[string]any{"query": "write a file"}, Want: "write_file — already listed: call it directly"},
		{Name: "tool_search", Args: map[string]any{"query": "read_file"}, Want: "DEPRECATED: use filesystem::read_text_file"},
		{Name: "tool_describe", Args: map[string]any{"tool_name": "open_ticket"}, Want: "Use it for bug reports from the team."},
		{Name: "tool_describe", Args: map[string]any{"tool_name": "open_ticket"}, Want: `"id":"github::create_issue","server":"github","name":"open_ticket"`},
		{Name: "tool_call", Args: map[string]any{"tool_name": "open_ticket", "tool_args": map[string]any{"repo": "r", "title": "Crash"}}, Want: `"owner":"acme"`},
		{Name: "tool_call", Args: map[string]any{"tool_name": "open_ticket", "tool_args": map[string]any{"owner": "evil", "repo": "r", "title": "x"}}, Want: "owner is fixed", IsError: true},
		{Name: "tool_call", Args: map[string]any{"tool_name": "remember", "tool_args": map[string]any{}}, Want: "is quarantined", IsError: true},
		{Name: "tool_call", Args: map[string]any{"tool_name": "gitlab::create_issue", "tool_args": map[string]any{"project_id": "1", "title": "t"}}, Want: "called gitlab::create_issue"},
	}
	runTSOverBothTransports(t, testenv.TSSession{Session: testenv.SessionCalls, Calls: calls}, binary, cfg, env)
}
