package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// fastSession is an initialized client session for calling a gateway's
// handleMessage and its mcp-go HandleMessage side by side.
type fastSession struct {
	id string
	ch chan mcp.JSONRPCNotification
}

func (s *fastSession) SessionID() string                                   { return s.id }
func (s *fastSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }
func (s *fastSession) Initialize()                                         {}
func (s *fastSession) Initialized() bool                                   { return true }

// fastGateway is a gateway in mode on or off in front of echoServer, with
// access rules for the groups "all" (everything) and "dev" (only up::echo
// and up::progress), spans recorded, and a session; ctx carries the
// session and a caller in "all", devCtx the session and a caller in "dev".
type fastGateway struct {
	g           *Gateway
	spans       *tracetest.InMemoryExporter
	ctx, devCtx context.Context
}

func newFastGateway(tb testing.TB, mode config.Mode) *fastGateway {
	tb.Helper()
	cfg := testConfig()
	cfg.Timeouts.Call = 10 * time.Second
	cfg.StateDir = tb.TempDir()
	cfg.Mode = mode
	cfg.CoreTools = nil
	cfg.Access = []config.AccessRule{
		{Groups: []string{"dev"}, Allow: []string{"up::echo", "up::progress"}},
		{Groups: []string{"all"}, Allow: []string{"*"}},
	}
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	g, err := New(cfg, Options{Telemetry: trace.New(tp, sdkmetric.NewMeterProvider())})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
		tb.Fatal(err)
	}
	sess := &fastSession{id: "fast-" + string(mode), ch: make(chan mcp.JSONRPCNotification, 1024)}
	if err := g.srv.RegisterSession(context.Background(), sess); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for { // progress notifications: not compared here
			select {
			case <-sess.ch:
			case <-done:
				return
			}
		}
	}()
	tb.Cleanup(func() {
		g.srv.UnregisterSession(context.Background(), sess.id)
		close(done)
	})
	ctx := g.srv.WithContext(access.NewContext(context.Background(), &access.Identity{Subject: "a", Groups: []string{"all"}}), sess)
	dev := g.srv.WithContext(access.NewContext(context.Background(), &access.Identity{Subject: "d", Groups: []string{"dev"}}), sess)
	return &fastGateway{g: g, spans: spans, ctx: ctx, devCtx: dev}
}

// both answers msg through mcp-go's HandleMessage and through the fast
// path, and returns the two answers and the spans each made.
func (f *fastGateway) both(ctx context.Context, msg string) (slow, fast string, slowSpans, fastSpans []string) {
	f.spans.Reset()
	a, _ := json.Marshal(f.g.srv.HandleMessage(ctx, json.RawMessage(msg)))
	slowSpans = spanSummary(f.spans.GetSpans())
	f.spans.Reset()
	b, _ := json.Marshal(f.g.handleMessage(ctx, json.RawMessage(msg)))
	fastSpans = spanSummary(f.spans.GetSpans())
	return string(a), string(b), slowSpans, fastSpans
}

// spanSummary is what a test compares of spans: name, kind, status and
// attributes, without ids and times, in a stable order.
func spanSummary(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		attrs := make([]string, 0, len(s.Attributes))
		for _, a := range s.Attributes {
			attrs = append(attrs, string(a.Key)+"="+a.Value.Emit())
		}
		slices.Sort(attrs)
		out = append(out, fmt.Sprintf("%s %s %s %s", s.Name, s.SpanKind, s.Status.Code, strings.Join(attrs, ",")))
	}
	slices.Sort(out)
	return out
}

// fastCorpus are tools/call messages, the fast path's and others; take
// says which ones the fast path must take itself.
var fastCorpus = []struct {
	name string
	msg  string
	take bool
}{
	{"ok call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, true},
	{"string id", `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, true},
	{"big numeric id", `{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, true},
	{"fraction id", `{"jsonrpc":"2.0","id":-1.5e3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, true},
	{"members reordered, spaces", ` { "params" : { "arguments" : { "text" : "a b" } , "name" : "echo" } , "method" : "tools/call" , "id" : 7 , "jsonrpc" : "2.0" } `, true},
	{"tool_call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::echo","tool_args":{"text":"hi"}}}}`, true},
	{"tool_call bad arguments", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::echo","tool_args":{"text":5}}}}`, true},
	{"tool_call unknown tool", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::nope"}}}`, true},
	{"tool_call arguments not an object", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_call","arguments":[1,2]}}`, true},
	{"unknown tool", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, true},
	{"deferred tool by its own name", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"deferred"}}}`, true},
	{"alias form", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mcp__up__echo","arguments":{"text":"alias"}}}`, true},
	{"missing required argument", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, true},
	{"no arguments", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"raw_schema"}}`, true},
	{"null arguments", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"raw_schema","arguments":null}}`, true},
	{"arguments a string", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":"{\"text\":\"x\"}"}}`, true},
	{"progress token", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok-1"}}}`, true},
	{"numeric progress token", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo","arguments":{"text":"p"},"_meta":{"progressToken":42}}}`, true},
	{"meta extras", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","x":{"y":[1,2]}}}}`, true},
	{"null meta", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"},"_meta":null}}`, true},
	{"escaped name", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"ec\u0068o","arguments":{"text":"e"}}}`, true},
	{"unicode argument", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo \u2028 \ud83d\ude00"}}}`, true},
	{"isError from validation", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::raw_schema","tool_args":{"n":0}}}}`, true},
	{"meta-tool through tool_call", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"tool_search"}}}`, true},
	{"tool_search", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"echo"}}}`, true},

	// mcp-go's own.
	{"bad JSON", `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"echo"`, false},
	{"name not a string", `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":5}}`, false},
	{"no name", `{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"arguments":{}}}`, false},
	{"no params", `{"jsonrpc":"2.0","id":33,"method":"tools/call"}`, false},
	{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}`, false},
	{"bool id", `{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}`, false},
	{"old jsonrpc", `{"jsonrpc":"1.0","id":34,"method":"tools/call","params":{"name":"echo"}}`, false},
	{"task", `{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"task":{"ttl":1000}}}`, false},
	{"multi round-trip", `{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"requestState":"s"}}`, false},
	{"old version in _meta", `{"jsonrpc":"2.0","id":37,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, true},
	{"2026-07-28", `{"jsonrpc":"2.0","id":38,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, true},
	{"2026-07-28 tool_call", `{"jsonrpc":"2.0","id":"m2","method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"up::echo","tool_args":{"text":"m"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"debug","progressToken":1}}}`, true},
	{"2026-07-28 unknown tool", `{"jsonrpc":"2.0","id":"m3","method":"tools/call","params":{"name":"nope","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, true},
	{"2026-07-28 tool error", `{"jsonrpc":"2.0","id":"m4","method":"tools/call","params":{"name":"tool_call","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, true},
	{"2026-07-28 without capabilities", `{"jsonrpc":"2.0","id":"m5","method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
	{"unknown later version", `{"jsonrpc":"2.0","id":"m6","method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, false},
	{"capabilities not an object", `{"jsonrpc":"2.0","id":"m7","method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":5}}}`, false},
	{"duplicate name", `{"jsonrpc":"2.0","id":39,"method":"tools/call","params":{"name":"nope","name":"echo","arguments":{"text":"d"}}}`, false},
	{"upper-case key", `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"Name":"echo","arguments":{"text":"u"}}}`, false},
	{"extra member", `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}},"extra":1}`, false},
	{"meta not an object", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":[1]}}`, false},
	{"other method", `{"jsonrpc":"2.0","id":43,"method":"tools/list"}`, false},
	{"escaped method", `{"jsonrpc":"2.0","id":44,"method":"tools\/call","params":{"name":"echo","arguments":{"text":"x"}}}`, false},
	{"invalid UTF-8 in name", "{\"jsonrpc\":\"2.0\",\"id\":45,\"method\":\"tools/call\",\"params\":{\"name\":\"ec\xffho\"}}", false},
}

// TestFastPathMatchesMCPGo sends each message of the corpus through
// mcp-go's HandleMessage and through the fast path, in mode off and on,
// with and without an access rule that hides tools, and requires the same
// answer byte for byte and the same spans.
func TestFastPathMatchesMCPGo(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeOff, config.ModeOn} {
		f := newFastGateway(t, mode)
		if !f.g.fast {
			t.Fatal("the fast path is off: fastPathFits no longer matches mcp-go's set-up")
		}
		for _, caller := range []string{"anyone", "dev"} {
			ctx := f.ctx
			if caller == "dev" {
				ctx = f.devCtx
			}
			for _, c := range fastCorpus {
				t.Run(fmt.Sprintf("%s/%s/%s", mode, caller, c.name), func(t *testing.T) {
					if _, took := fastCallOf([]byte(c.msg)); took != c.take {
						t.Errorf("fast path takes it: %v, want %v", took, c.take)
					}
					slow, fast, slowSpans, fastSpans := f.both(ctx, c.msg)
					if slow != fast {
						t.Errorf("answers differ:\nmcp-go: %s\nfast:   %s", slow, fast)
					}
					if c.name == "ok call" && caller == "anyone" && !strings.Contains(fast, `"text":"up:hi"`) {
						t.Errorf("ok call: %s, want the upstream's answer", fast)
					}
					if !slices.Equal(slowSpans, fastSpans) {
						t.Errorf("spans differ:\nmcp-go: %q\nfast:   %q", slowSpans, fastSpans)
					}
				})
			}
		}
	}
}

// TestFastPathHiddenToolAnswersAsUnknown: a tool an access rule hides is,
// on the fast path too, mcp-go's unknown tool.
func TestFastPathHiddenToolAnswersAsUnknown(t *testing.T) {
	f := newFastGateway(t, config.ModeOff)
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"raw_schema","arguments":{"n":1}}}`
	out, _ := json.Marshal(f.g.handleMessage(f.devCtx, json.RawMessage(msg)))
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"tool 'raw_schema' not found: tool not found"}}`
	if string(out) != want {
		t.Errorf("hidden tool: %s, want %s", out, want)
	}
	out, _ = json.Marshal(f.g.handleMessage(f.ctx, json.RawMessage(msg)))
	if !strings.Contains(string(out), `"text":"ok"`) {
		t.Errorf("the same tool without the rule: %s, want its result", out)
	}
}

// TestFastPathFits: New's mcp-go set-up is the one the fast path was
// written for; an mcp-go upgrade that renames what fastPathFits reads, or
// an option that adds a middleware, filter, validator or tracer, turns
// the fast path off, and this test says so.
func TestFastPathFits(t *testing.T) {
	f := newFastGateway(t, config.ModeOff)
	if !f.g.fast {
		t.Fatal("fastPathFits: false for New's own server")
	}
	for name, opt := range map[string]server.ServerOption{
		"middleware":   server.WithToolHandlerMiddleware(recoverToolPanic),
		"validator":    server.WithInputSchemaValidation(),
		"filter":       server.WithToolFilter(func(_ context.Context, t []mcp.Tool) []mcp.Tool { return t }),
		"no tools cap": nil,
	} {
		opts := []server.ServerOption{server.WithToolHandlerMiddleware(recoverToolPanic)}
		if opt != nil {
			opts = append(opts, opt, server.WithToolCapabilities(false))
		}
		srv := server.NewMCPServer("t", "1", opts...)
		if fastPathFits(srv, 0, 1) {
			t.Errorf("%s: fastPathFits true for a server the fast path does not fit", name)
		}
	}
}

// FuzzFastPathMatchesMCPGo holds the fast path to mcp-go's HandleMessage
// on any message: the same answer, byte for byte, and no panic.
func FuzzFastPathMatchesMCPGo(f *testing.F) {
	for _, c := range fastCorpus {
		f.Add(c.msg)
	}
	fg := newFastGateway(f, config.ModeOn)
	f.Fuzz(func(t *testing.T, msg string) {
		if strings.Contains(msg, `"slow"`) {
			return // would wait for the call timeout
		}
		slow, fast, _, _ := fg.both(fg.ctx, msg)
		if slow != fast {
			t.Errorf("answers differ for %q:\nmcp-go: %s\nfast:   %s", msg, slow, fast)
		}
	})
}

// FuzzIDKey holds idKey's shortcuts to the decoder's reading of an id.
func FuzzIDKey(f *testing.F) {
	for _, seed := range []string{`1`, `-0`, `1.0`, `1e400`, `12345678901234567890`, `"a"`, `"a\"b"`, `"é"`, `null`, `{}`, ` 1`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		k1, ok1 := idKey(json.RawMessage(raw))
		k2, ok2 := decodedIDKey(json.RawMessage(raw))
		if k1 != k2 || ok1 != ok2 {
			t.Errorf("idKey(%s) = %q %v, the decoder's %q %v", raw, k1, ok1, k2, ok2)
		}
	})
}

// FuzzEncodeAnswer holds encodeAnswer to json.Marshal (and its newline)
// for answers of text blocks, isError and structured content, the ones
// it writes itself, and for ids of every kind.
func FuzzEncodeAnswer(f *testing.F) {
	f.Add(`1`, "hello", "", false, `{"a":1}`)
	f.Add(`"x<y>"`, "a&b <c> \u2028 \xff \x01 \"q\" \\", "second", true, ` { "s" : "<&>" , "n" : [1, 2.50, -0] } `)
	f.Add(`12345678901234567890`, "", "", false, ``)
	f.Add(`-1.5e3`, "é😀", "x", true, `"not an object"`)
	// appendID's float64 range edges, and structured content compactAsIs
	// takes as is or leaves to json.Marshal.
	f.Add(`1e-7`, "a", "", false, `{"s":"a b\"c\\","n":[1,-0.5e3]}`)
	f.Add(`0.000001`, "a", "", false, `{"s":"x y"}`)
	f.Add(`1e21`, "a", "", false, `{"s":"\u003c"}`)
	f.Add(`-0`, "a", "", false, `[1,{"a":"\t"},"tab	in"]`)
	f.Add(`999999999999999999999`, "a", "", false, `{"a":1}`+"\n")
	f.Add(`"<id>"`, "a", "", false, `{"é":"😀","\"k":null}`)
	f.Fuzz(func(t *testing.T, id, text1, text2 string, isError bool, structured string) {
		for _, modern := range []bool{false, true} {
			encodeAnswerCase(t, id, text1, text2, isError, structured, modern)
		}
	})
}

// encodeAnswerCase is one case of FuzzEncodeAnswer; modern adds what a
// 2026-07-28 answer has: resultType and the server's identity in _meta.
func encodeAnswerCase(t *testing.T, id, text1, text2 string, isError bool, structured string, modern bool) {
	{
		var idv any
		if json.Unmarshal([]byte(id), &idv) != nil {
			return
		}
		res := &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{mcp.TextContent{Type: "text", Text: text1}}}
		switch {
		case text1 == "" && text2 == "":
			res.Content = nil // mcp-go writes "content":[]
		case text2 != "":
			res.Content = append(res.Content, mcp.TextContent{Type: "text", Text: text2})
		}
		if structured != "" {
			if !json.Valid([]byte(structured)) {
				return // never decoded from an upstream's answer
			}
			res.RawStructuredContent = json.RawMessage(structured)
		}
		if modern {
			res.ResultType = mcp.ResultTypeComplete
			res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: serverName, Version: text2})
		}
		resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idv), any(res))
		want, err := json.Marshal(resp)
		if err != nil {
			t.Skip()
		}
		got, err := encodeAnswer(resp)
		if err != nil || string(got) != string(want)+"\n" {
			t.Errorf("encodeAnswer: %q %v\njson.Marshal: %q", got, err, want)
		}
	}
}
