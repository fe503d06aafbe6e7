package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixedNow is the clock every test server reads: Friday 2024-03-15 13:30 UTC.
var fixedNow = time.Date(2024, 3, 15, 13, 30, 0, 0, time.UTC)

// toolNamePattern is what Claude accepts as a tool name.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// connect returns an initialized in-process client of the named demo server
// built with the fixed clock; it is closed when the test ends.
func connect(t *testing.T, name string) *client.Client {
	t.Helper()
	for _, s := range newServers(func() time.Time { return fixedNow }) {
		if s.Name == name {
			return connectTo(t, s)
		}
	}
	t.Fatalf("no demo server %q", name)
	return nil
}

func connectTo(t *testing.T, s Server) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(s.MCP)
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("starting client: %v", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "demo-test", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initializing %s: %v", s.Name, err)
	}
	if res.ServerInfo.Name != s.Name {
		t.Fatalf("server reports name %q, want %q", res.ServerInfo.Name, s.Name)
	}
	return c
}

// call calls tool with arguments given as JSON text, so the handler sees
// the same Go types a real client's JSON produces.
func call(t *testing.T, c *client.Client, tool, argsJSON string) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if argsJSON != "" {
		var a any
		if err := json.Unmarshal([]byte(argsJSON), &a); err != nil {
			t.Fatalf("bad test arguments %s: %v", argsJSON, err)
		}
		req.Params.Arguments = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("calling %s(%s): protocol error %v", tool, argsJSON, err)
	}
	return res
}

// textOf joins a result's text content.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structuredOf returns the structured content as generic JSON values.
func structuredOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatalf("result has no structured content: %s", textOf(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("encoding structured content: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content is not an object: %s", b)
	}
	return m
}

// toolCase is one call and what must come back.
type toolCase struct {
	name string
	tool string
	args string // JSON object
	// want holds fields the structured content must have, compared as JSON.
	want map[string]any
	// text must be a substring of the text content (success or error).
	text string
	// errHas, when set, means the call must fail (isError) with a message
	// containing every one of these substrings.
	errHas []string
	// check runs extra assertions on a successful result.
	check func(t *testing.T, got map[string]any)
}

// runCases runs cases in order on one client: a case may depend on the
// state left by the ones before it (notes).
func runCases(t *testing.T, c *client.Client, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, c, tc.tool, tc.args)
			msg := textOf(res)
			if len(tc.errHas) > 0 {
				if !res.IsError {
					t.Fatalf("%s(%s) succeeded with %s, want an error containing %q", tc.tool, tc.args, msg, tc.errHas)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(msg, s) {
						t.Errorf("%s(%s) error %q does not contain %q", tc.tool, tc.args, msg, s)
					}
				}
				return
			}
			if res.IsError {
				t.Fatalf("%s(%s) failed: %s", tc.tool, tc.args, msg)
			}
			if tc.text != "" && !strings.Contains(msg, tc.text) {
				t.Errorf("%s(%s) text %q does not contain %q", tc.tool, tc.args, msg, tc.text)
			}
			got := structuredOf(t, res)
			for k, want := range tc.want {
				wb, _ := json.Marshal(want)
				gb, _ := json.Marshal(got[k])
				if string(wb) != string(gb) {
					t.Errorf("%s(%s): %s = %s, want %s", tc.tool, tc.args, k, gb, wb)
				}
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestServersCatalog(t *testing.T) {
	servers := Servers()
	if len(servers) < 4 {
		t.Fatalf("Servers() returned %d servers, want at least 4", len(servers))
	}
	total := 0
	seenTool := map[string]string{}
	for _, s := range servers {
		if s.Name == "" || s.Description == "" || s.MCP == nil {
			t.Errorf("server %+v lacks a name, description or MCP server", s)
			continue
		}
		tools := s.MCP.ListTools()
		if len(tools) < 6 {
			t.Errorf("server %s has %d tools, want at least 6", s.Name, len(tools))
		}
		total += len(tools)
		for name, st := range tools {
			tool := st.Tool
			id := s.Name + "::" + name
			if !toolNamePattern.MatchString(name) {
				t.Errorf("%s: name does not match %s", id, toolNamePattern)
			}
			if other, dup := seenTool[name]; dup {
				t.Errorf("%s: name also used by server %s; bare names should stay unique", id, other)
			}
			seenTool[name] = s.Name
			if len(tool.Description) < 20 {
				t.Errorf("%s: description %q is too short to search on", id, tool.Description)
			}
			if tool.InputSchema.Type != "object" {
				t.Errorf("%s: input schema type %q, want object", id, tool.InputSchema.Type)
			}
			if tool.InputSchema.AdditionalProperties != false {
				t.Errorf("%s: input schema should set additionalProperties false", id)
			}
			for _, r := range tool.InputSchema.Required {
				if _, ok := tool.InputSchema.Properties[r]; !ok {
					t.Errorf("%s: required parameter %q is not in properties", id, r)
				}
			}
			for p, raw := range tool.InputSchema.Properties {
				prop, ok := raw.(map[string]any)
				if !ok {
					t.Errorf("%s: property %q is %T, not a schema object", id, p, raw)
					continue
				}
				if d, _ := prop["description"].(string); d == "" {
					t.Errorf("%s: parameter %q has no description", id, p)
				}
				if prop["type"] == nil {
					t.Errorf("%s: parameter %q has no type", id, p)
				}
			}
			if tool.Annotations.ReadOnlyHint == nil {
				t.Errorf("%s: no readOnlyHint annotation", id)
			}
		}
	}
	if total < 40 {
		t.Errorf("the demo servers have %d tools in total, want at least 40", total)
	}
	t.Logf("%d servers, %d tools", len(servers), total)
}

func TestNamesAndLookup(t *testing.T) {
	names := Names()
	servers := Servers()
	if len(names) != len(servers) {
		t.Fatalf("Names() has %d names, Servers() %d servers", len(names), len(servers))
	}
	for i, n := range names {
		if servers[i].Name != n {
			t.Errorf("Names()[%d] = %q, Servers()[%d].Name = %q", i, n, i, servers[i].Name)
		}
		s, ok := Lookup(n)
		if !ok || s.Name != n || s.MCP == nil {
			t.Errorf("Lookup(%q) = %+v, %v", n, s, ok)
		}
	}
	if _, ok := Lookup("no-such-server"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}

// TestServersAreFresh checks that two Servers() calls share no state.
func TestServersAreFresh(t *testing.T) {
	find := func(ss []Server) Server {
		for _, s := range ss {
			if s.Name == "notes" {
				return s
			}
		}
		t.Fatal("no notes server")
		return Server{}
	}
	first := connectTo(t, find(Servers()))
	second := connectTo(t, find(Servers()))
	if res := call(t, first, "create_note", `{"title":"only in the first"}`); res.IsError {
		t.Fatalf("create_note failed: %s", textOf(res))
	}
	got := structuredOf(t, call(t, second, "list_notes", `{}`))
	if got["total"] != float64(0) {
		t.Errorf("a fresh notes server lists %v notes, want 0", got["total"])
	}
}

// allTools lists every server's tools with their schemas.
func allTools(t *testing.T) map[string][]mcp.Tool {
	t.Helper()
	out := map[string][]mcp.Tool{}
	for _, s := range Servers() {
		for _, st := range s.MCP.ListTools() {
			out[s.Name] = append(out[s.Name], st.Tool)
		}
		slices.SortFunc(out[s.Name], func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

// TestBrokenArgumentsEveryTool sends every tool missing, mistyped and
// unknown arguments and expects an isError result naming the argument.
func TestBrokenArgumentsEveryTool(t *testing.T) {
	for server, tools := range allTools(t) {
		c := connect(t, server)
		for _, tool := range tools {
			id := server + "::" + tool.Name
			t.Run(id, func(t *testing.T) {
				if req := tool.InputSchema.Required; len(req) > 0 {
					res := call(t, c, tool.Name, `{}`)
					if !res.IsError || !strings.Contains(textOf(res), "missing required argument") || !containsAny(textOf(res), req) {
						t.Errorf("no arguments: got isError=%v %q, want a missing-argument error naming one of %v", res.IsError, textOf(res), req)
					}
					wrong := map[string]any{}
					for _, r := range req {
						wrong[r] = wrongValue(tool.InputSchema.Properties[r])
					}
					b, _ := json.Marshal(wrong)
					res = call(t, c, tool.Name, string(b))
					if !res.IsError || !strings.Contains(textOf(res), "must be") || !containsAny(textOf(res), req) {
						t.Errorf("wrong types %s: got isError=%v %q, want a type error naming one of %v", b, res.IsError, textOf(res), req)
					}
				}
				res := call(t, c, tool.Name, `{"no_such_arg": 1}`)
				if !res.IsError || !strings.Contains(textOf(res), `"no_such_arg"`) {
					t.Errorf("unknown argument: got isError=%v %q, want an error naming no_such_arg", res.IsError, textOf(res))
				}
				res = call(t, c, tool.Name, `[1, 2]`)
				if !res.IsError || !strings.Contains(textOf(res), "JSON object") {
					t.Errorf("array arguments: got isError=%v %q, want an error saying arguments must be an object", res.IsError, textOf(res))
				}
			})
		}
	}
}

// wrongValue returns a JSON value of a different type than prop declares.
func wrongValue(prop any) any {
	p, _ := prop.(map[string]any)
	switch p["type"] {
	case "string":
		return 42
	case "array", "object":
		return "not a " + fmt.Sprint(p["type"])
	}
	return "not a number"
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, `"`+sub+`"`) {
			return true
		}
	}
	return false
}

// TestHandlerContainsBugs checks that a panicking or result-less handler
// becomes an isError result, not a crash or a protocol error.
func TestHandlerContainsBugs(t *testing.T) {
	tests := []struct {
		name string
		run  handlerFunc
		want string
	}{
		{"panic", func(context.Context, args) (*mcp.CallToolResult, error) { panic("boom") }, "broken: internal error: boom"},
		{"nil result", func(context.Context, args) (*mcp.CallToolResult, error) { return nil, nil }, "broken: internal error: no result"},
		{"error", func(context.Context, args) (*mcp.CallToolResult, error) { return nil, fmt.Errorf("bad input") }, "bad input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := toolDef{newTool("broken", "A tool that misbehaves on purpose."), tt.run}
			res, err := td.handler()(context.Background(), mcp.CallToolRequest{})
			if err != nil {
				t.Fatalf("protocol error %v, want an isError result", err)
			}
			if !res.IsError || textOf(res) != tt.want {
				t.Errorf("got isError=%v %q, want %q", res.IsError, textOf(res), tt.want)
			}
		})
	}
}
