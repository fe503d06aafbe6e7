package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// wireClient is a downstream client on the wire, speaking streamable HTTP
// (protocol 2025-11-25) the way the TypeScript SDK does: initialize, then
// notifications/initialized, then the GET stream, and an answer to each
// server request POSTed on its own. Every message the gateway sends, on
// the GET stream or on a POST's event stream, arrives on msgs.
type wireClient struct {
	t    *testing.T
	url  string
	sid  string
	msgs chan wireMessage
}

// wireMessage is one JSON-RPC message from the gateway, and where it came
// from ("GET" or "POST").
type wireMessage struct {
	from   string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// dialWire opens a session declaring sampling, elicitation and roots and
// returns once its GET stream is open.
func dialWire(t *testing.T, url string) *wireClient {
	t.Helper()
	c := initWire(t, url)
	c.listen()
	return c
}

// initWire opens a session declaring sampling, elicitation and roots,
// without its GET stream.
func initWire(t *testing.T, url string) *wireClient {
	t.Helper()
	c := &wireClient{t: t, url: url, msgs: make(chan wireMessage, 64)}
	resp := c.send(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":"wire","version":"1"}}}`)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	c.sid = resp.Header.Get(sessionIDHeader)
	if resp.StatusCode != http.StatusOK || c.sid == "" {
		t.Fatalf("initialize: %d, session %q: %s", resp.StatusCode, c.sid, body)
	}
	if status, b := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", status, b)
	}
	return c
}

// listen opens the session's GET stream.
func (c *wireClient) listen() {
	c.t.Helper()
	get := c.send(http.MethodGet, "")
	if get.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(get.Body)
		c.t.Fatalf("GET stream: %d %s", get.StatusCode, b)
	}
	c.t.Cleanup(func() { _ = get.Body.Close() })
	go c.read("GET", get.Body)
}

// send makes one request on the session; the caller reads and closes the
// body.
func (c *wireClient) send(method, body string) *http.Response {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(c.newRequest(method, body))
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// newRequest is a request on the session.
func (c *wireClient) newRequest(method, body string) *http.Request {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.url, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	if c.sid != "" {
		req.Header.Set(sessionIDHeader, c.sid)
	}
	return req
}

// post sends a message whose answer is not a stream (a notification, a
// response) and returns the HTTP status and body.
func (c *wireClient) post(body string) (int, string) {
	c.t.Helper()
	resp := c.send(http.MethodPost, body)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// request sends a request whose answer (JSON, or an event stream with
// server requests before the answer) arrives on msgs. The headers of a
// JSON answer come only with the answer, so it is sent on a goroutine.
func (c *wireClient) request(body string) {
	c.t.Helper()
	req := c.newRequest(http.MethodPost, body)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return // the test ended; next reports what is missing
		}
		defer resp.Body.Close()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			c.read("POST", resp.Body)
			return
		}
		var m wireMessage
		if err := json.NewDecoder(resp.Body).Decode(&m); err == nil {
			m.from = "POST"
			c.msgs <- m
		}
	}()
}

// read passes on every message of an event stream.
func (c *wireClient) read(from string, body io.Reader) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case line == "" && data.Len() > 0:
			var m wireMessage
			if json.Unmarshal(data.Bytes(), &m) == nil {
				m.from = from
				c.msgs <- m
			}
			data.Reset()
		}
	}
}

// next waits for the next message that want accepts, skipping the others.
func (c *wireClient) next(what string, want func(wireMessage) bool) wireMessage {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-c.msgs:
			if want(m) {
				return m
			}
		case <-timeout:
			c.t.Fatalf("no %s from the gateway within 30s", what)
		}
	}
}

// lateAsker is an upstream whose tool ask_later sends method to the client
// on a goroutine of its own and returns as soon as the client has the
// request (asked is closed), without waiting for the answer: the way
// server-everything's roots/list, sent 350 ms after initialize, is
// relayed through whichever call is in flight then. What the request got,
// the answer or the error, goes to got.
func lateAsker(method mcp.MCPMethod, asked <-chan struct{}, got chan<- string) *server.MCPServer {
	s := server.NewMCPServer("late", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("ask_later"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := server.ServerFromContext(ctx)
		detached := context.WithoutCancel(ctx) // the request outlives the call
		go func() { got <- ask(detached, srv, method) }()
		select {
		case <-asked:
			return mcp.NewToolResultText("returned"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return s
}

// ask sends one server-to-client request and describes its outcome.
func ask(ctx context.Context, srv *server.MCPServer, method mcp.MCPMethod) string {
	var res any
	var err error
	switch method {
	case mcp.MethodSamplingCreateMessage:
		res, err = srv.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hello?")}},
			MaxTokens: 10,
		}})
	case mcp.MethodElicitationCreate:
		res, err = srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         "name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		}})
	case mcp.MethodListRoots:
		res, err = srv.RequestRoots(ctx, mcp.ListRootsRequest{})
	}
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// TestLateAnswerToARelayedRequest: an upstream's sampling, elicitation or
// roots request is relayed to the client of the call in flight, and that
// call may end before the client answers (server-everything asks for
// roots 350 ms after initialize, from no call at all). The client's answer
// must still reach the upstream: it used to get 400 "No pending sampling
// request found for the given request ID", because the relayed request
// was cancelled with the call that happened to carry it (the CI flake of
// TestTypeScriptSDKClient/npm_servers_over_http, request 3 being the
// startup roots/list).
func TestLateAnswerToARelayedRequest(t *testing.T) {
	answers := map[mcp.MCPMethod]string{
		mcp.MethodSamplingCreateMessage: `{"role":"assistant","content":{"type":"text","text":"late model answer"},"model":"m"}`,
		mcp.MethodElicitationCreate:     `{"action":"accept","content":{"name":"late name"}}`,
		mcp.MethodListRoots:             `{"roots":[{"uri":"file:///late-root","name":"late"}]}`,
	}
	wants := map[mcp.MCPMethod]string{
		mcp.MethodSamplingCreateMessage: "late model answer",
		mcp.MethodElicitationCreate:     "late name",
		mcp.MethodListRoots:             "file:///late-root",
	}
	for _, method := range []mcp.MCPMethod{mcp.MethodSamplingCreateMessage, mcp.MethodElicitationCreate, mcp.MethodListRoots} {
		t.Run(string(method), func(t *testing.T) {
			asked := make(chan struct{})
			got := make(chan string, 1)
			cfg := testConfig()
			cfg.Timeouts.Call = 2 * time.Minute // the call ends by itself, not by its timeout
			g, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Connect(t.Context(), []upstream.Spec{{Name: "late", InProcess: lateAsker(method, asked, got)}}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = g.Close() })
			srv := httptest.NewServer(g.HTTPHandler())
			t.Cleanup(srv.Close)

			c := dialWire(t, srv.URL+"/mcp")
			c.request(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_later","arguments":{}}}`)
			req := c.next(string(method), func(m wireMessage) bool { return m.Method == string(method) })
			close(asked)
			res := c.next("the tools/call answer", func(m wireMessage) bool { return string(m.ID) == "7" })
			if !strings.Contains(string(res.Result), "returned") {
				t.Fatalf("ask_later answered %s %s", res.Result, res.Error)
			}
			// The call is over, its POST handled and its context ended
			// (net/http ends it before the answer is written out).
			waitIdle(t, g)

			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, answers[method])
			if status, b := c.post(answer); status != http.StatusAccepted {
				t.Errorf("the client's answer to %s (sent on the %s stream) after the call ended: HTTP %d %q, want 202", method, req.from, status, b)
			}
			select {
			case outcome := <-got:
				if !strings.Contains(outcome, wants[method]) {
					t.Errorf("the upstream's %s got %s, want the client's answer", method, outcome)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the upstream's %s got nothing within 30s", method)
			}
		})
	}
}

// waitIdle waits until no POST is being handled.
func waitIdle(t *testing.T, g *Gateway) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := g.requests.Wait(ctx); err != nil {
		t.Fatalf("the gateway still handles %d requests after 30s", g.requests.Running())
	}
}

// TestSamplingSentBeforeTheGETStreamOpens: a call that asks the client
// for sampling before the client opened its GET stream waits for it: the
// request goes out once the stream opens, and the answer is taken. (mcp-go
// registers the session when initialize is answered, and the GET stream
// serves that same session, so the request waits in its queue.)
func TestSamplingSentBeforeTheGETStreamOpens(t *testing.T) {
	cfg := testConfig()
	cfg.Timeouts.Call = 2 * time.Minute
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// ask, as samplingServer's, but saying when it asks.
	asking := make(chan struct{})
	asker := server.NewMCPServer("asker", "1.0.0", server.WithToolCapabilities(true))
	asker.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(asking)
		return mcp.NewToolResultText(ask(ctx, server.ServerFromContext(ctx), mcp.MethodSamplingCreateMessage)), nil
	})
	if err := g.Connect(t.Context(), []upstream.Spec{{Name: "asker", InProcess: asker}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)

	c := initWire(t, srv.URL+"/mcp")
	c.request(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	select {
	case <-asking:
	case <-time.After(30 * time.Second):
		t.Fatal("ask was not called within 30s")
	}
	c.listen()
	req := c.next("sampling/createMessage", func(m wireMessage) bool { return m.Method == string(mcp.MethodSamplingCreateMessage) })
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"early bird"},"model":"m"}}`, req.ID)
	if status, b := c.post(answer); status != http.StatusAccepted {
		t.Errorf("the answer to a sampling request sent before the GET stream opened: HTTP %d %q, want 202", status, b)
	}
	res := c.next("the tools/call answer", func(m wireMessage) bool { return string(m.ID) == "7" })
	if !strings.Contains(string(res.Result), "early bird") {
		t.Errorf("ask answered %s %s, want the client's answer", res.Result, res.Error)
	}
}
