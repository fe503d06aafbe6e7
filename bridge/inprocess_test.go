package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// inProcessPair is a gateway with two clients on it, initialized alike:
// one on mcp-go's in-process transport (straight to HandleMessage), one
// on the gateway's own.
type inProcessPair struct {
	g           *Gateway
	mcpgo, ours *client.Client
}

func newInProcessPair(t *testing.T, mode config.Mode, version string, h ClientHandlers, up *server.MCPServer) inProcessPair {
	t.Helper()
	cfg := testConfig()
	cfg.Timeouts.Call = 10 * time.Second
	cfg.StateDir = t.TempDir()
	cfg.Mode = mode
	cfg.CoreTools = nil
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: up}}); err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if h.Elicitation != nil {
		opts = append(opts, client.WithElicitationHandler(h.Elicitation))
	}
	if h.Sampling != nil {
		opts = append(opts, client.WithSamplingHandler(h.Sampling))
	}
	if h.Roots != nil {
		opts = append(opts, client.WithRootsHandler(h.Roots))
	}
	mcpgo, err := client.NewInProcessClientWithOptions(g.MCPServer(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	p := inProcessPair{g: g, mcpgo: mcpgo, ours: g.InProcessClient(h)}
	for _, c := range []*client.Client{p.mcpgo, p.ours} {
		t.Cleanup(func() { _ = c.Close() })
		ctx := context.Background()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = version
		init.Params.ClientInfo = mcp.Implementation{Name: "pair", Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
	}
	if !g.fast {
		t.Fatal("the fast path is off: fastPathFits no longer matches mcp-go's set-up")
	}
	return p
}

// TestInProcessTransportMatchesMCPGo sends every message of the fast
// path's corpus that a client can send (a JSON-RPC request with an id)
// through mcp-go's in-process transport and through the gateway's, in
// mode off and on, on a session of 2025-11-25 and one of 2026-07-28, and
// requires the same response: the same id (of the same Go type), result
// bytes and error. It also requires that the gateway's transport took the
// fast path for the calls it takes (as the client encodes them).
func TestInProcessTransportMatchesMCPGo(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeOff, config.ModeOn} {
		for _, version := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION} {
			p := newInProcessPair(t, mode, version, ClientHandlers{}, echoServer("up"))
			for _, c := range fastCorpus {
				var msg struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Method  string          `json:"method"`
					Params  json.RawMessage `json:"params"`
				}
				if json.Unmarshal([]byte(c.msg), &msg) != nil || msg.ID == nil {
					continue // no client sends it
				}
				var id mcp.RequestId
				if json.Unmarshal(msg.ID, &id) != nil {
					id = mcp.NewRequestId(json.RawMessage(msg.ID)) // written as is
				}
				req := transport.JSONRPCRequest{JSONRPC: msg.JSONRPC, ID: id, Method: msg.Method}
				if msg.Params != nil {
					req.Params = msg.Params
				}
				// What the client sends is req encoded: a member it does not
				// know is gone, an escape decoded.
				sent, err := json.Marshal(req)
				if err != nil {
					t.Fatal(err)
				}
				_, take := fastCallOf(sent)
				t.Run(fmt.Sprintf("%s/%s/%s", mode, version, c.name), func(t *testing.T) {
					ctx := context.Background()
					want, werr := p.mcpgo.GetTransport().SendRequest(ctx, req)
					served := p.g.fastServed.Load()
					got, gerr := p.ours.GetTransport().SendRequest(ctx, req)
					if (werr == nil) != (gerr == nil) {
						t.Fatalf("errors differ: mcp-go %v, ours %v", werr, gerr)
					}
					if !reflect.DeepEqual(got, want) {
						w, _ := json.Marshal(want)
						g, _ := json.Marshal(got)
						t.Errorf("responses differ:\nmcp-go: %s (id %T)\nours:   %s (id %T)", w, want.ID.Value(), g, got.ID.Value())
					}
					// On a 2025-11-25 session every call the fast path
					// takes is served by it; a 2026-07-28 session is never
					// initialized, so only 2026-07-28 calls are.
					fast := p.g.fastServed.Load() > served
					if take && version == mcp.LATEST_LEGACY_PROTOCOL_VERSION && !fast {
						t.Error("the gateway's transport did not take the fast path")
					}
					if !take && fast {
						t.Error("the fast path took a message it must leave to mcp-go")
					}
				})
			}
		}
	}
}

// TestInProcessClientMatchesMCPGo drives the two clients through mcp-go's
// client methods (list, call by name, through tool_call, a tool error, an
// unknown tool, a progress token) and requires the same results and
// errors.
func TestInProcessClientMatchesMCPGo(t *testing.T) {
	for _, version := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, mcp.LATEST_PROTOCOL_VERSION} {
		p := newInProcessPair(t, config.ModeOn, version, ClientHandlers{}, echoServer("up"))
		calls := []struct {
			name string
			args any
			meta *mcp.Meta
		}{
			{"tool_call", map[string]any{"tool_name": "up::echo", "tool_args": map[string]any{"text": "hi"}}, nil},
			{"tool_call", map[string]any{"tool_name": "up::echo", "tool_args": map[string]any{"text": 5}}, nil},
			{"tool_call", map[string]any{"tool_name": "up::nope"}, nil},
			{"tool_search", map[string]any{"query": "echo text"}, nil},
			{"tool_describe", map[string]any{"tool_name": "up::raw_schema"}, nil},
			{"echo", map[string]any{"text": "deferred, by its own name"}, nil},
			{"nope", nil, nil},
			{"tool_call", map[string]any{"tool_name": "up::progress"}, &mcp.Meta{ProgressToken: "p1"}},
		}
		for _, call := range calls {
			t.Run(fmt.Sprintf("%s/%s/%v", version, call.name, call.args), func(t *testing.T) {
				req := mcp.CallToolRequest{}
				req.Params.Name = call.name
				req.Params.Arguments = call.args
				req.Params.Meta = call.meta
				want, werr := p.mcpgo.CallTool(context.Background(), req)
				got, gerr := p.ours.CallTool(context.Background(), req)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("errors differ: mcp-go %v, ours %v", werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					w, _ := json.Marshal(want)
					g, _ := json.Marshal(got)
					t.Errorf("results differ:\nmcp-go: %s\nours:   %s", w, g)
				}
			})
		}
		want, werr := p.mcpgo.ListTools(context.Background(), mcp.ListToolsRequest{})
		got, gerr := p.ours.ListTools(context.Background(), mcp.ListToolsRequest{})
		if werr != nil || gerr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: tools/list differs: mcp-go %v %v, ours %v %v", version, want, werr, got, gerr)
		}
	}
}

// rootsServer is an upstream whose tool "roots" asks the client for its
// roots and answers with their URIs.
func rootsServer() *server.MCPServer {
	s := server.NewMCPServer("roots", "1.0.0", server.WithToolCapabilities(true), server.WithRoots())
	s.AddTool(mcp.NewTool("roots"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := server.ServerFromContext(ctx).RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return mcp.NewToolResultError("roots: " + err.Error()), nil
		}
		out, _ := json.Marshal(res)
		return mcp.NewToolResultText(string(out)), nil
	})
	return s
}

type fixedRoots struct{ roots []mcp.Root }

func (r fixedRoots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if r.roots == nil {
		return nil, nil // neither a result nor an error
	}
	return &mcp.ListRootsResult{Roots: r.roots}, nil
}

// TestInProcessClientServerRequestsMatchMCPGo: an upstream's request to
// the client (roots/list, relayed by the gateway to the calling client's
// session) reaches the handler the client was given, and a handler that
// returns nothing fails as it fails on mcp-go's in-process client.
func TestInProcessClientServerRequestsMatchMCPGo(t *testing.T) {
	for name, h := range map[string]fixedRoots{
		"roots":     {roots: []mcp.Root{{URI: "file:///work", Name: "work"}}},
		"no result": {},
	} {
		t.Run(name, func(t *testing.T) {
			p := newInProcessPair(t, config.ModeOff, mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientHandlers{Roots: h}, rootsServer())
			req := mcp.CallToolRequest{}
			req.Params.Name = "roots"
			want, werr := p.mcpgo.CallTool(context.Background(), req)
			got, gerr := p.ours.CallTool(context.Background(), req)
			if werr != nil || gerr != nil || !reflect.DeepEqual(got, want) {
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(got)
				t.Fatalf("results differ:\nmcp-go: %s %v\nours:   %s %v", w, werr, g, gerr)
			}
			text := fmt.Sprint(got.Content)
			if name == "roots" && !json.Valid([]byte(got.Content[0].(mcp.TextContent).Text)) {
				t.Errorf("roots: %s, want the client's roots", text)
			}
			if name == "no result" && !got.IsError {
				t.Errorf("no result: %s, want the handler's failure", text)
			}
		})
	}
}

// TestInProcessTransportLifecycle: the server's notifications reach the
// client's handler, Close unregisters the session, and a closed transport
// does not start again.
func TestInProcessTransportLifecycle(t *testing.T) {
	g := newFastGateway(t, config.ModeOff).g
	c := g.InProcessClient(ClientHandlers{})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION // a session that is initialized
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	tr := c.GetTransport().(*upstream.InProcessTransport)
	if err := tr.Start(context.Background()); err != nil {
		t.Fatalf("second Start: %v, want nothing done", err)
	}
	got := make(chan mcp.JSONRPCNotification, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			got <- n
		}
	})
	if err := g.srv.SendNotificationToSpecificClient(tr.Session().SessionID(), "notifications/message", map[string]any{"level": "info"}); err != nil {
		t.Fatalf("notifying the client's session: %v", err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's notification never reached the client")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.SendNotificationToSpecificClient(tr.Session().SessionID(), "notifications/message", nil); !errors.Is(err, server.ErrSessionNotFound) {
		t.Errorf("notifying the session after Close: %v, want ErrSessionNotFound", err)
	}
	if err := tr.Start(context.Background()); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("Start after Close: %v, want ErrTransportClosed", err)
	}
}

// TestDecodedID holds decodedID to what encoding an id and decoding it
// into an mcp.RequestId gives, for the ids the fast path decodes (string
// or float64) and ones it leaves to the decoder.
func TestDecodedID(t *testing.T) {
	for _, v := range []any{
		"abc", "", "é \u2028 😀", `quote " and \`,
		0.0, 1.0, -1.0, 1.5, -1500.0, math.Copysign(0, -1), 1e300, 12345678901234567890.0, 9007199254740993.0,
		float64(math.MaxInt64), float64(math.MinInt64), 5e-324,
		int64(7), true, nil,
	} {
		id := mcp.NewRequestId(v)
		b, err := json.Marshal(id)
		if err != nil {
			t.Fatal(err)
		}
		var want mcp.RequestId
		werr := json.Unmarshal(b, &want)
		got, ok := decodedID(id)
		switch v.(type) {
		case string, float64:
			if !ok || werr != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("decodedID(%#v) = %#v %v, decoding gives %#v %v", v, got.Value(), ok, want.Value(), werr)
			}
		default:
			if ok {
				t.Errorf("decodedID(%#v) took an id it must leave to the decoder", v)
			}
		}
	}
}

// TestInProcessResponseMatchesRoundTrip holds inProcessResponse to
// mcp-go's round trip (encode the message, decode it again) for answers
// of every kind: results it encodes alone, a plain tool result it writes
// as stdio does, and what it leaves to the round trip (errors, ids the
// decoder must read).
func TestInProcessResponseMatchesRoundTrip(t *testing.T) {
	tool := mcp.NewTool("send_<mail>", mcp.WithDescription("Sends mail & more \u2028 to <b>\"someone\"</b> é 😀"),
		mcp.WithString("to", mcp.Required(), mcp.Description("who")), mcp.WithNumber("n"))
	tool.Annotations.Title = "Send"
	list := &mcp.ListToolsResult{Tools: []mcp.Tool{tool, mcp.NewTool("b")}}
	list.NextCursor = "c<1>"
	notPlain := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent("AAAA", "image/png")}, IsError: true}
	plain := &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent{Type: "text", Text: "hello <there>"}}}
	results := []any{
		list, // tools/list
		&mcp.InitializeResult{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ServerInfo: mcp.Implementation{Name: "x", Version: "1"}},
		notPlain,
		plain,
		&mcp.EmptyResult{},
		map[string]any{"b": 1.5, "a": []any{"<", nil, true}},
		nil,
	}
	ids := []mcp.RequestId{mcp.NewRequestId("s<1>"), mcp.NewRequestId(float64(7)), mcp.NewRequestId(1.5), mcp.NewRequestId(int64(9)), mcp.NewRequestId(nil)}
	var answers []mcp.JSONRPCMessage
	for _, res := range results {
		for _, id := range ids {
			answers = append(answers, mcp.NewJSONRPCResultResponse(id, res))
		}
	}
	answers = append(answers,
		mcp.NewJSONRPCError(mcp.NewRequestId(float64(3)), mcp.INVALID_PARAMS, "bad <thing>", nil),
		mcp.JSONRPCResponse{JSONRPC: "1.0", ID: mcp.NewRequestId("x"), Result: list})
	for _, answer := range answers {
		got, gerr := inProcessResponse(answer)
		want, werr := upstream.RoundTripResponse(answer)
		if (gerr != nil) != (werr != nil) {
			t.Errorf("%#v: error %v, round trip %v", answer, gerr, werr)
			continue
		}
		if gerr != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%#v:\n got %+v (result %s)\nwant %+v (result %s)", answer, got, got.Result, want, want.Result)
		}
	}
}

// BenchmarkInProcessResponse is what the gateway's InProcessTransport
// saves on one answer against mcp-go's in-process transport: a tool's
// plain answer of 2026-07-28 (text, structured content, resultType and
// the server's identity) handed to the client as a response, by
// inProcessResponse (encoded once) and by mcp-go's round trip (encoded,
// then decoded again). BenchmarkToolCallInProcess's gateway paths have
// the first, its direct path the second; the difference is part of
// their ratio, and this states how large it is.
func BenchmarkInProcessResponse(b *testing.B) {
	res := &mcp.CallToolResult{
		Content:              []mcp.Content{mcp.TextContent{Type: "text", Text: "up:hello"}},
		RawStructuredContent: json.RawMessage(`{"server":"up","text":"hello"}`),
		StructuredContent:    map[string]any{"server": "up", "text": "hello"},
	}
	res.ResultType = mcp.ResultTypeComplete
	res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: serverName, Version: Version})
	answer := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(float64(3)), any(res))
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
			if _, err := upstream.RoundTripResponse(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
}
