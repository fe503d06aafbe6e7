package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// scriptStep is one call of the scripted demo session.
type scriptStep struct {
	say  string
	tool string
	args string
	// want must appear in the result text, and wantError says whether the
	// result must be an error: the script checks the demo really worked
	// instead of printing whatever came back.
	want      string
	wantError bool
}

// demoScript is the session `toolbridge demo --script` plays: what a model
// does in bridge mode, including the mistakes models make.
var demoScript = []scriptStep{
	{"Find a tool by what it does", "tool_search", `{"query":"convert temperature units"}`, "math::convert_units", false},
	{"A tool without parameters is found too", "tool_search", `{"query":"list tags"}`, "(no parameters)", false},
	{"Read its full schema", "tool_describe", `{"tool_name":"math::convert_units"}`, `"inputSchema"`, false},
	{"Call it through tool_call", "tool_call", `{"tool_name":"math::convert_units","tool_args":{"value":100,"from":"celsius","to":"fahrenheit"}}`, "212", false},
	{"A wrong unit: the model gets the schema violation, not a crash", "tool_call", `{"tool_name":"math::convert_units","tool_args":{"value":100,"from":"celsius","to":"parsecs"}}`, "at /to", true},
	{"A typo in the tool name gets a did-you-mean", "tool_call", `{"tool_name":"creat_note","tool_args":{"title":"x"}}`, "notes::create_note", true},
	{"Store a note (arguments given as a JSON string, a common slip)", "tool_call", `{"tool_name":"create_note","tool_args":"{\"title\":\"Groceries\",\"body\":\"milk, eggs\"}"}`, `"id":"n1"`, false},
	{"A client with an old tool list calls a deferred tool by name", "get_note", `{"id":"n1"}`, "milk, eggs", false},
	{"Browse the catalog", "tool_search", `{"query":""}`, "- notes (", false},
}

// runScript plays demoScript against the demo servers through an
// in-process MCP client and prints each step. It fails if a step's result
// is not what the demo servers compute, or if a strict client (the
// TypeScript SDK, MCP Inspector) would reject it: an answer of a tool that
// declares an output schema must carry structuredContent that validates
// against it.
func runScript(ctx context.Context, cfg *config.Config, specs []upstream.Spec, io stdio, environ []string) error {
	fmt.Fprintf(io.out, "== Connecting to %d demo servers\n", len(specs))
	s, err := openSession(ctx, cfg, specs, io.out, environ, bridge.ClientHandlers{})
	if err != nil {
		return err
	}
	defer s.Close()

	report := s.g.Report()
	fmt.Fprintf(io.out, "\n== %s\n", report.Decision.Reason)
	list, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	names := make([]string, 0, len(list.Tools))
	listed := map[string]mcp.Tool{}
	for _, t := range list.Tools {
		names = append(names, t.Name)
		listed[t.Name] = t
	}
	checker := bridge.NewResultChecker()
	fmt.Fprintf(io.out, "== tools/list: the client sees %d tools (%s), %d tokens instead of %d for all %d tools (%.0f%% less)\n",
		len(names), strings.Join(names, ", "), report.ClientTokens, report.PassThroughTokens, len(report.Tools),
		100*float64(report.PassThroughTokens-report.ClientTokens)/float64(max(1, report.PassThroughTokens)))

	failed := 0
	for i, step := range demoScript {
		fmt.Fprintf(io.out, "\n== %d. %s\n-> %s %s\n", i+1, step.say, step.tool, step.args)
		res, err := s.call(ctx, step.tool, json.RawMessage(step.args))
		if err != nil {
			fmt.Fprintf(io.out, "<- FAILED: %v\n", err)
			failed++
			continue
		}
		text := resultText(res)
		marker := "<-"
		if res.IsError {
			marker = "<- (isError)"
		}
		fmt.Fprintf(io.out, "%s %s\n", marker, indent(clipLines(text, 12)))
		if res.IsError != step.wantError || !strings.Contains(text, step.want) {
			fmt.Fprintf(io.out, "   FAILED: expected isError=%v and %q in the result\n", step.wantError, step.want)
			failed++
		}
		// A tool the client never listed (the old-list step) has no
		// schema the client could hold the answer to.
		if problems := checker.Check(listed[step.tool], res); len(problems) > 0 {
			fmt.Fprintf(io.out, "   FAILED: a strict client rejects this answer against %s's output schema:\n   - %s\n", step.tool, strings.Join(problems, "\n   - "))
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("demo script: %d of %d steps failed", failed, len(demoScript))
	}
	fmt.Fprintf(io.out, "\n== All %d steps worked. Serve the demo to a real client with: toolbridge demo\n", len(demoScript))
	return nil
}

// maxLineShown is where a printed result line is cut: compact JSON puts
// a whole schema on one line.
const maxLineShown = 600

// clipLines keeps the first n lines of s, each cut at maxLineShown runes.
func clipLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	more := len(lines) - n
	lines = lines[:min(n, len(lines))]
	for i, l := range lines {
		if r := []rune(l); len(r) > maxLineShown {
			lines[i] = string(r[:maxLineShown]) + fmt.Sprintf("… (%d more characters)", len(r)-maxLineShown)
		}
	}
	out := strings.Join(lines, "\n")
	if more > 0 {
		out += fmt.Sprintf("\n… (%d more lines)", more)
	}
	return out
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
