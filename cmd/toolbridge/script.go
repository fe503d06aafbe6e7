package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
)

// scriptStep is one call of the scripted demo session.
type scriptStep struct {
	say  string
	tool string
	args string
	// want must appear in the result text: the script checks the demo
	// really worked instead of printing whatever came back.
	want string
}

// demoScript is the session `toolbridge demo --script` plays: a few real
// calls across the example servers, as a client would make them.
var demoScript = []scriptStep{
	{"Add two numbers on the math server", "add", `{"a":2,"b":3}`, "5"},
	{"Evaluate an expression", "evaluate_expression", `{"expression":"(2+3)*4^2"}`, "80"},
	{"Store a note", "create_note", `{"title":"Groceries","body":"milk, eggs","tags":["home"]}`, "n1"},
	{"Read it back", "get_note", `{"id":"n1"}`, "milk, eggs"},
	{"Hash a string on the text server", "sha256_hash", `{"text":"abc"}`, "ba7816bf"},
	{"Count words", "word_count", `{"text":"the quick brown fox"}`, "4"},
	{"Ask for a tool that does not exist", "no_such_tool", `{}`, ""},
}

// runScript plays demoScript against the demo servers through an
// in-process MCP client and prints each step. It fails if a step's result
// is not what the demo servers compute.
func runScript(ctx context.Context, cfg *config.Config, specs []bridge.Spec, io stdio, environ []string) error {
	fmt.Fprintf(io.out, "== Connecting to %d demo servers\n", len(specs))
	s, err := openSession(ctx, cfg, specs, io.out, environ)
	if err != nil {
		return err
	}
	defer s.Close()

	list, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	names := make([]string, 0, len(list.Tools))
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	fmt.Fprintf(io.out, "\n== tools/list: the client sees %d tools\n   %s\n", len(names), wrapNames(names, 6))

	failed := 0
	for i, step := range demoScript {
		fmt.Fprintf(io.out, "\n== %d. %s\n-> tools/call %s %s\n", i+1, step.say, step.tool, step.args)
		res, err := s.call(ctx, step.tool, json.RawMessage(step.args))
		switch {
		case err != nil && step.want == "":
			fmt.Fprintf(io.out, "<- error, as expected: %v\n", err)
		case err != nil:
			fmt.Fprintf(io.out, "<- FAILED: %v\n", err)
			failed++
		default:
			text := resultText(res)
			fmt.Fprintf(io.out, "<- %s\n", indent(text))
			if step.want != "" && (res.IsError || !strings.Contains(text, step.want)) {
				fmt.Fprintf(io.out, "   FAILED: expected %q in the result\n", step.want)
				failed++
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("demo script: %d of %d steps failed", failed, len(demoScript))
	}
	fmt.Fprintf(io.out, "\n== All %d steps worked. Serve the demo to a real client with: toolbridge demo\n", len(demoScript))
	return nil
}

func wrapNames(names []string, perLine int) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 && i%perLine == 0 {
			b.WriteString("\n   ")
		} else if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n   ") }
