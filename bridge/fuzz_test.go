package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// fuzzGateway is a bridged gateway over the issues, files, alpha, h and
// evil test servers, shared by one fuzz target's runs and closed after them.
func fuzzGateway(f *testing.F) *Gateway {
	g, err := New(bridgeConfig(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	specs := []upstream.Spec{
		{Name: "issues", InProcess: issueServer()},
		{Name: "files", InProcess: fileServer()},
		{Name: "alpha", InProcess: echoServer("alpha")},
		// h and evil: evil's tools are named like h's alias forms.
		{Name: "h", InProcess: echoServer("h")},
		{Name: "evil", InProcess: hijackServer()},
	}
	if err := g.Connect(context.Background(), specs); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = g.Close() })
	return g
}

// FuzzResolve: any name a model may send resolves to a tool or to a message
// that names it; it never panics.
func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		"issues::create_issue", "create_issue", "`Issues::Create_Issue`", `"create_issue"`,
		"mcp__issues__create_issue", "issues__create_issue", "creat_isue", "", "::", "a::b::c",
		"tool_call", "\x00", "日本語のツール", strings.Repeat("x", 5000), "create_issue()",
		// Alias forms and the look-alikes that must not capture them.
		"mcp__h__echo", "h__echo", "MCP__H__ECHO", "`mcp__h__echo`()", "evil::mcp__h__echo", "evil__mcp__h__echo",
		"mcp__evil__h__echo", "mcp__mcp__h__echo", "h____echo", "__h__echo", "mcp__h__", "mcp____", "h__echo\u200b",
		"mcp__h__ech", "H::ECHO", "h::mcp__h__echo", "mcp__nosuch__echo", "mcp__issues__create_issue()",
	} {
		f.Add(seed)
	}
	g := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, name string) {
		tool, why := g.resolve(g.Catalog(), name)
		if tool == nil && why == "" {
			t.Fatalf("resolve(%q): neither a tool nor a reason", name)
		}
		if tool != nil && why != "" {
			t.Fatalf("resolve(%q): both a tool and a reason", name)
		}
		// The alias rule: a name that reads as an alias form of a known
		// server reaches only a tool of a server it names, unless it is
		// the tool's own id or exposed name.
		clean := toolid.Clean(name)
		if tool == nil || tool.ID == clean || tool.Exposed == clean {
			return
		}
		if _, ok := g.Catalog().shadowedAlias(clean); !ok {
			return
		}
		for _, a := range toolid.SplitAlias(clean) {
			if strings.EqualFold(a.Server, tool.Server) {
				return
			}
		}
		t.Fatalf("resolve(%q) = %s: an alias form reached a server it does not name", name, tool.ID)
	})
}

// FuzzCallArguments: whatever a model puts in tool_call's arguments, the
// gateway finds the real arguments (a JSON object) or says what is wrong,
// and validation answers without panicking.
func FuzzCallArguments(f *testing.F) {
	for _, seed := range []string{
		`{"tool_name":"create_issue","tool_args":{"repo":"a/b","title":"t"}}`,
		`{"tool_name":"create_issue","tool_args":"{\"repo\":\"a/b\"}"}`,
		`{"tool_name":"create_issue","repo":"a/b","title":"t"}`,
		`{"tool_name":"create_issue","tool_args":[1,2]}`,
		`{"tool_name":"create_issue","tool_args":null}`,
		`{"name":"create_issue","arguments":{}}`,
		`{"tool_args":{"x":1},"y":2}`,
		`{"tool_name":"create_issue","tool_args":"not json"}`,
		`{"tool_name":"create_issue","tool_args":{"priority":1e400}}`,
	} {
		f.Add(seed)
	}
	g := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, raw string) {
		var args map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &args) != nil {
			return // argsObject rejects these before callArguments runs
		}
		for _, key := range []string{"tool_args", "arguments"} {
			got, err := callArguments(args, key)
			if err != nil {
				continue
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(got, &obj) != nil {
				t.Fatalf("callArguments(%s) = %s: not a JSON object", raw, got)
			}
			tool, _ := g.Catalog().ByID("issues::create_issue")
			_, _ = g.validators.validateArgs(tool.Tool.RawInputSchema, got)
		}
	})
}

// FuzzJSONRPCInput feeds arbitrary bytes to the gateway's JSON-RPC entry
// point, as a client's transport would: it must answer or ignore, never
// panic, and any answer must be JSON.
func FuzzJSONRPCInput(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"issue"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"create_issue","tool_args":{"repo":"a"}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_issue","arguments":"x"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[]}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"id":1}`, `null`, `{`, ``,
	} {
		f.Add(seed)
	}
	g := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, raw string) {
		ctx, cancel := context.WithTimeout(context.Background(), testConfig().Timeouts.Call*4)
		defer cancel()
		resp := g.MCPServer().HandleMessage(ctx, json.RawMessage(raw))
		if resp == nil {
			return // a notification, or something mcp-go chose not to answer
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("answer to %q does not marshal: %v", raw, err)
		}
	})
}
