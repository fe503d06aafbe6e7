package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// answersServer is an in-process server whose tools answer in the ways
// a result is encoded: text that encoding/json escapes, structured
// content, a tool error, a handler error, and a prompt besides.
func answersServer() *server.MCPServer {
	s := server.NewMCPServer("answers", "1.0.0", server.WithToolCapabilities(true), server.WithPromptCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("structured"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"html": "<b>&</b>", "n": 1.5, "list": []any{"é", nil}}, "fallback \u2028"), nil
	})
	s.AddTool(mcp.NewTool("tool_error"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it went wrong"), nil
	})
	s.AddTool(mcp.NewTool("fails"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("handler failed")
	})
	s.AddPrompt(mcp.NewPrompt("greet"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("hi", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello <you>"))}), nil
	})
	return s
}

// TestInProcessTransportMatchesMCPGo sends the same requests, with the
// gateway's string ids and with others, through mcp-go's in-process
// transport and the gateway's to one server, and requires the same
// responses.
func TestInProcessTransportMatchesMCPGo(t *testing.T) {
	srv := answersServer()
	ours := newInProcessTransport(srv, peer{})
	mcpgo := transport.NewInProcessTransport(srv)
	ctx := context.Background()
	for _, tr := range []transport.Interface{ours, mcpgo} {
		if err := tr.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
	}
	call := func(name string, args any) mcp.CallToolParams {
		return mcp.CallToolParams{Name: name, Arguments: args}
	}
	requests := []struct {
		method string
		params any
	}{
		{"initialize", map[string]any{"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION, "clientInfo": map[string]any{"name": "t", "version": "1"}, "capabilities": map[string]any{}}},
		{"ping", nil},
		{"tools/list", nil},
		{"tools/call", call("echo", map[string]any{"text": "plain"})},
		{"tools/call", call("echo", map[string]any{"text": "<html> & \"quotes\" \\ \u2028 \x01 😀"})},
		{"tools/call", call("structured", nil)},
		{"tools/call", call("tool_error", nil)},
		{"tools/call", call("fails", nil)},
		{"tools/call", call("nope", nil)},
		{"tools/call", json.RawMessage(`{"name":5}`)},
		{"prompts/list", nil},
		{"prompts/get", map[string]any{"name": "greet"}},
		{"resources/list", nil},
		{"no/such/method", nil},
	}
	ids := []any{"tb-1", "tb-<&>", "", int64(7), 1.5, nil}
	for i, r := range requests {
		for _, id := range ids {
			t.Run(fmt.Sprintf("%d %s/%v", i, r.method, id), func(t *testing.T) {
				req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: r.method, Params: r.params}
				want, werr := mcpgo.SendRequest(ctx, req)
				got, gerr := ours.SendRequest(ctx, req)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("errors differ: mcp-go %v, ours %v", werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					w, _ := json.Marshal(want)
					g, _ := json.Marshal(got)
					t.Errorf("responses differ:\nmcp-go: %s\nours:   %s", w, g)
				}
			})
		}
	}
}

// TestInProcessTransportNotifiesAndCloses: the server's notifications to
// the session reach the handler, Close unregisters the session, and a
// closed transport does not start again.
func TestInProcessTransportNotifiesAndCloses(t *testing.T) {
	srv := answersServer()
	tr := newInProcessTransport(srv, peer{})
	got := make(chan string, 1)
	tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) { got <- n.Method })
	ctx := context.Background()
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("tb-0"), Method: "initialize",
		Params: map[string]any{"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION, "clientInfo": map[string]any{"name": "t", "version": "1"}, "capabilities": map[string]any{}}}
	if _, err := tr.SendRequest(ctx, init); err != nil {
		t.Fatal(err)
	}
	if err := srv.SendNotificationToSpecificClient(tr.sessionID, "notifications/message", map[string]any{"level": "info"}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "notifications/message" {
			t.Errorf("notification %q, want notifications/message", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's notification never reached the handler")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.SendNotificationToSpecificClient(tr.sessionID, "notifications/message", nil); !errors.Is(err, server.ErrSessionNotFound) {
		t.Errorf("after Close: %v, want ErrSessionNotFound", err)
	}
	if err := tr.Start(ctx); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("Start after Close: %v, want ErrTransportClosed", err)
	}
}

// BenchmarkInProcessAnswer is what the gateway's in-process upstream
// transport saves on one answer against mcp-go's: an upstream's tool
// result to one of the gateway's requests, as a response, by
// inProcessResponse (the result encoded) and by mcp-go's round trip (the
// whole answer encoded, then decoded again). BenchmarkToolCallInProcess
// (package bridge) states it beside its ratios.
func BenchmarkInProcessAnswer(b *testing.B) {
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent{Type: "text", Text: "up:hello"}},
		StructuredContent: map[string]any{"server": "up", "text": "hello"},
	}
	answer := mcp.NewJSONRPCResultResponse(mcp.NewRequestId("tb-1"), any(res))
	b.Run("gateway", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := inProcessResponse(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mcp-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() { // what mcp-go's in-process transport does
			if _, err := RoundTripResponse(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
}
