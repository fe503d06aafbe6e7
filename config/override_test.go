package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolOverrideRules: the override fields of tools: rules decode (with
// ${VAR} in fixed arguments) and every mistake that can be judged without
// the servers is a config error naming its key, with did-you-mean.
func TestToolOverrideRules(t *testing.T) {
	const servers = "mcpServers:\n  github: {command: gh-mcp}\n  jira: {command: jira-mcp}\n"
	tests := []struct {
		name  string
		tools string
		want  []string // substrings of the error; none: valid
	}{
		{"every field", `
  - match: "github::create_issue"
    name: open_ticket
    description: "Open a ticket."
    keywords: [bug report, ticket]
    args: {owner: "${ORG}", labels: [a, b], draft: false, n: 3, meta: {x: 1}}
    annotations: {destructiveHint: true, readOnlyHint: false, title: Ticket}
  - match: "jira::*"
    description_append: "Team tracker."
    class: deferrable`, nil},
		{"class still needed without an override", `
  - match: "github::*"`, []string{"tools[0].class: missing"}},
		{"rename of a glob", `
  - match: "github::create_*"
    name: open_ticket`, []string{"tools[0].name: a rename names one tool"}},
		{"rename not a client name", `
  - match: "github::create_issue"
    name: "open ticket"`, []string{`tools[0].name: "open ticket" is not a name clients accept`}},
		{"rename too long", `
  - match: "github::create_issue"
    name: ` + strings.Repeat("a", 65), []string{"is not a name clients accept"}},
		{"rename to a meta-tool", `
  - match: "github::create_issue"
    name: tool_call`, []string{"tools[0].name: tool_call is a toolbridge meta-tool's name"}},
		{"two renames to one name", `
  - match: "github::create_issue"
    name: open_ticket
  - match: "jira::create_issue"
    name: open_ticket`, []string{"tools[1].name: tools[0] already renames a tool to open_ticket"}},
		{"description and description_append", `
  - match: "github::create_issue"
    description: a
    description_append: b`, []string{"tools[0].description_append: set description or description_append, not both"}},
		{"unknown server", `
  - match: "githb::create_issue"
    description: a`, []string{`tools[0].match: no server "githb" is configured, so this rule can match nothing (did you mean github?)`}},
		{"empty keyword", `
  - match: "github::create_issue"
    keywords: [" "]`, []string{"tools[0].keywords[0]: empty keyword"}},
		{"unknown annotation", `
  - match: "github::create_issue"
    annotations: {destructive: true}`, []string{"tools[0].annotations.destructive: unknown key (did you mean destructiveHint?)"}},
		{"annotation not a bool", `
  - match: "github::create_issue"
    annotations: {readOnlyHint: sometimes}`, []string{"tools[0].annotations.readOnlyHint: expected true or false"}},
		{"unknown field", `
  - match: "github::create_issue"
    nmae: x`, []string{"tools[0].nmae: unknown key (did you mean name?)"}},
		{"unset variable in a fixed argument", `
  - match: "github::create_issue"
    args: {owner: "${NOPE}"}`, []string{"tools[0].args.owner: environment variable NOPE is not set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "c.yaml", servers+"tools:"+tt.tools+"\n")
			cfg, err := Load(LoadOptions{Path: path, Environ: []string{"ORG=acme"}})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load = %+v, want an error", cfg.Tools)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant %q", err, w)
				}
			}
		})
	}

	path := writeFile(t, "c.yaml", servers+"tools:"+tests[0].tools+"\n")
	cfg, err := Load(LoadOptions{Path: path, Environ: []string{"ORG=acme"}})
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Tools[0]
	args, _ := json.Marshal(r.Args)
	if r.Name != "open_ticket" || r.Description != "Open a ticket." || strings.Join(r.Keywords, ",") != "bug report,ticket" ||
		string(args) != `{"draft":false,"labels":["a","b"],"meta":{"x":1},"n":3,"owner":"acme"}` ||
		r.Annotations == nil || r.Annotations.DestructiveHint == nil || !*r.Annotations.DestructiveHint ||
		r.Annotations.ReadOnlyHint == nil || *r.Annotations.ReadOnlyHint || r.Annotations.Title != "Ticket" || r.Annotations.IdempotentHint != nil {
		t.Errorf("decoded rule = %+v, args %s", r, args)
	}
	if !r.Overrides() || cfg.Tools[1].DescriptionAppend != "Team tracker." || cfg.Tools[1].Class != ClassDeferrable {
		t.Errorf("second rule = %+v", cfg.Tools[1])
	}
}

// A fixed argument with a secret-looking name is masked where the config
// is printed (config check), and the original config keeps its value.
func TestRedactedMasksSecretFixedArgs(t *testing.T) {
	c := Default()
	c.Tools = []ToolRule{{Match: "a::b", Args: map[string]any{"api_key": "s3cr3t-value", "owner": "acme", "endpoint": "https://u:s3cr3t-pw@example.com/x"}}}
	r := c.Redacted()
	out, _ := json.Marshal(r.Tools)
	if strings.Contains(string(out), "s3cr3t") || !strings.Contains(string(out), "acme") {
		t.Errorf("redacted tool rules = %s", out)
	}
	if c.Tools[0].Args["api_key"] != "s3cr3t-value" {
		t.Error("Redacted changed the original config")
	}
}

// config check prints overrides as they were written: annotations and
// fixed arguments of every JSON type, in YAML and JSON.
func TestRenderToolOverrides(t *testing.T) {
	path := writeFile(t, "c.yaml", `mcpServers:
  github: {command: gh-mcp}
tools:
  - match: "github::create_issue"
    name: open_ticket
    args: {owner: acme, labels: [a, b], draft: false, n: 3, meta: {x: 1}, api_key: hunter2-secret}
    annotations: {destructiveHint: true}
`)
	cfg, err := Load(LoadOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	y, err := cfg.Render("yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: open_ticket", "destructiveHint: true", "owner: acme", "- a", "draft: false", "x: 1", "api_key: '****'"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("YAML lacks %q:\n%s", want, y)
		}
	}
	j, err := cfg.Render("json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"annotations": {`) || strings.Contains(string(j), "&{") || strings.Contains(string(j)+string(y), "hunter2") {
		t.Errorf("JSON:\n%s", j)
	}
}
