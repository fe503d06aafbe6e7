package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/config"
)

// modernMeta is the _meta of a plain 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// modernCall is a 2026-07-28 tools/call of name with arguments args.
func modernCall(id, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, id, name, args, modernMeta)
}

// httpCase is one POST to /mcp: its body, headers on top of the plain
// 2026-07-28 ones (an empty value deletes one), and whether the fast path
// must answer it itself.
type httpCase struct {
	name    string
	body    string
	headers map[string]string
	take    bool
}

// httpCorpus are POSTs the HTTP front must answer as mcp-go does: the
// plain 2026-07-28 tools/call it takes, and every variation of body and
// headers it leaves to mcp-go.
func httpCorpus() []httpCase {
	call := modernCall(`1`, "echo", `{"text":"hi"}`)
	bridged := modernCall(`"b1"`, "tool_call", `{"tool_name":"up::echo","tool_args":{"text":"hi"}}`)
	return []httpCase{
		{"echo", call, nil, true},
		{"tool_call", bridged, map[string]string{"Mcp-Name": "tool_call"}, true},
		{"tool_call bad arguments", modernCall(`2`, "tool_call", `{"tool_name":"up::echo","tool_args":{"text":5}}`), map[string]string{"Mcp-Name": "tool_call"}, true},
		{"tool_call of a hidden tool", modernCall(`3`, "tool_call", `{"tool_name":"up::raw_schema","tool_args":{"n":1}}`), map[string]string{"Mcp-Name": "tool_call"}, true},
		{"unknown tool", modernCall(`4`, "nope", `{}`), map[string]string{"Mcp-Name": "nope"}, true},
		{"hidden tool", modernCall(`5`, "raw_schema", `{"n":1}`), map[string]string{"Mcp-Name": "raw_schema"}, true},
		{"tool_search", modernCall(`6`, "tool_search", `{"query":"echo"}`), map[string]string{"Mcp-Name": "tool_search"}, true},
		{"name in base64", call, map[string]string{"Mcp-Name": "=?base64?" + base64.StdEncoding.EncodeToString([]byte("echo")) + "?="}, true},
		{"a session id, which 2026-07-28 ignores", call, map[string]string{"Mcp-Session-Id": "mcp-session-whatever"}, true},
		{"client info and elicitation", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`, nil, true},
		{"notifying tool", modernCall(`8`, "raw_schema", `{}`), map[string]string{"Mcp-Name": "raw_schema"}, true},

		// mcp-go's.
		{"progress token", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo","arguments":{"text":"p"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"t"}}}`, nil, false},
		{"log level", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","arguments":{"text":"p"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}}}`, nil, false},
		{"no Mcp-Name", call, map[string]string{"Mcp-Name": ""}, false},
		{"wrong Mcp-Name", call, map[string]string{"Mcp-Name": "tool_call"}, false},
		{"bad base64 Mcp-Name", call, map[string]string{"Mcp-Name": "=?base64?!!!?="}, false},
		{"no Mcp-Method", call, map[string]string{"Mcp-Method": ""}, false},
		{"wrong Mcp-Method", call, map[string]string{"Mcp-Method": "tools/list"}, false},
		{"no protocol header", call, map[string]string{"Mcp-Protocol-Version": ""}, false},
		{"older protocol header", call, map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, false},
		{"unknown protocol header", call, map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, false},
		{"Last-Event-ID", call, map[string]string{"Last-Event-ID": "1"}, false},
		{"content type with charset", call, map[string]string{"Content-Type": "application/json; charset=utf-8"}, false},
		{"content type text", call, map[string]string{"Content-Type": "text/plain"}, false},
		{"no capabilities", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, false},
		{"older request, no session", `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, false},
		{"tools/list", `{"jsonrpc":"2.0","id":24,"method":"tools/list","params":{` + modernMeta + `}}`, map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": ""}, false},
		{"task", `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"task":{"ttl":1000},` + modernMeta + `}}`, nil, false},
		{"bad JSON", `{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"echo"`, nil, false},
		{"header-bound tool, header matches", modernCall(`27`, "bound", `{"region":"eu"}`), map[string]string{"Mcp-Name": "bound", "Mcp-Param-Region": "eu"}, false},
		{"header-bound tool, header differs", modernCall(`28`, "bound", `{"region":"eu"}`), map[string]string{"Mcp-Name": "bound", "Mcp-Param-Region": "us"}, false},
		{"cancel notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,` + modernMeta + `}}`, map[string]string{"Mcp-Method": "notifications/cancelled", "Mcp-Name": ""}, false},
		{"batch", "[" + call + "]", nil, false},
	}
}

// httpFastGateway is newFastGateway's gateway served over HTTP (the whole
// chain of httpHandler), with two tools of its own for the corpus:
// raw_schema, which here sends a notification during the call (no
// upstream tool can: see fastpath.go; it takes the name of a tool the
// access filter lets through in mode off, for group all), and bound,
// whose parameter is bound to a header.
type httpFastGateway struct {
	*fastGateway
	h http.Handler
	// session is the session the last call of notify saw.
	mu      sync.Mutex
	session server.ClientSession
}

func newHTTPFastGateway(tb testing.TB, mode config.Mode) *httpFastGateway {
	tb.Helper()
	f := &httpFastGateway{fastGateway: newFastGateway(tb, mode)}
	f.g.srv.AddTool(mcp.NewTool("raw_schema"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.mu.Lock()
		f.session = server.ClientSessionFromContext(ctx)
		f.mu.Unlock()
		_ = f.g.srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "working"})
		return mcp.NewToolResultText("notified"), nil
	})
	f.g.srv.AddTool(mcp.Tool{
		Name:           "bound",
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`),
	}, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("bound"), nil
	})
	// Registered behind the gateway's back (setTools), so the fast path
	// is told.
	f.g.resetFastTools()
	f.h = f.g.HTTPHandler()
	return f
}

// post sends c through the HTTP handler as caller (a group of
// newFastGateway's access rules) and returns the answer and whether the
// fast path answered it.
func (f *httpFastGateway) post(c httpCase, group string, fast bool) (*httptest.ResponseRecorder, bool) {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(c.body))
	r.Host = "127.0.0.1"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "echo")
	for k, v := range c.headers {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	r = r.WithContext(access.NewContext(r.Context(), &access.Identity{Subject: group, Groups: []string{group}}))
	f.g.fast = fast
	before := f.g.fastServed.Load()
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	f.g.fast = true
	return w, f.g.fastServed.Load() != before
}

// TestHTTPFastPathMatchesMCPGo sends each POST of the corpus through the
// gateway's HTTP handler with the fast path off (mcp-go answers) and on,
// in mode off and on, for callers an access rule restricts and not, and
// requires the same status, headers and body, byte for byte, and the
// fast path to answer exactly the ones it is meant to.
func TestHTTPFastPathMatchesMCPGo(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeOff, config.ModeOn} {
		f := newHTTPFastGateway(t, mode)
		if !f.g.fast {
			t.Fatal("the fast path is off: fastPathFits no longer matches mcp-go's set-up")
		}
		for _, group := range []string{"all", "dev"} {
			for _, c := range httpCorpus() {
				t.Run(fmt.Sprintf("%s/%s/%s", mode, group, c.name), func(t *testing.T) {
					slow, tookSlow := f.post(c, group, false)
					fast, took := f.post(c, group, true)
					if tookSlow {
						t.Fatal("the fast path answered with the fast path off")
					}
					if took != c.take {
						t.Errorf("the fast path answered: %v, want %v", took, c.take)
					}
					if slow.Code != fast.Code {
						t.Errorf("status: mcp-go %d, fast %d", slow.Code, fast.Code)
					}
					if !reflect.DeepEqual(slow.Header(), fast.Header()) {
						t.Errorf("headers differ:\nmcp-go: %v\nfast:   %v", slow.Header(), fast.Header())
					}
					if !bytes.Equal(withoutNotifications(slow.Body.Bytes()), withoutNotifications(fast.Body.Bytes())) {
						t.Errorf("bodies differ:\nmcp-go: %q\nfast:   %q", slow.Body, fast.Body)
					}
					if c.name == "echo" && group == "all" && !strings.Contains(fast.Body.String(), `up:hi`) {
						t.Errorf("echo: %d %s, want the upstream's answer", fast.Code, fast.Body)
					}
					if c.name == "hidden tool" && mode == config.ModeOff && group == "dev" && !strings.Contains(fast.Body.String(), "tool 'raw_schema' not found") {
						t.Errorf("hidden tool, for a caller whose access rule hides it: %d %s, want not found", fast.Code, fast.Body)
					}
					if c.name == "notifying tool" && mode == config.ModeOff && group == "all" &&
						!strings.HasPrefix(fast.Body.String(), "event: message\ndata: "+notification) {
						t.Errorf("notifying tool: %q, want an event stream with the notification", fast.Body)
					}
				})
			}
		}
	}
}

// notification is the event data of the notification the test's
// raw_schema sends.
const notification = `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"working","level":"info"}}`

// withoutNotifications is body without the event of the test's
// notification. mcp-go sometimes drops it: its forwarder goroutine can
// take it off the session's channel just before the answer closes the
// request, and then discards it; the fast path always writes it.
func withoutNotifications(body []byte) []byte {
	return bytes.ReplaceAll(body, []byte("event: message\ndata: "+notification+"\n\n"), nil)
}

// TestRequestSessionMatchesMCPGo: the fast path's session of a
// 2026-07-28 request has the methods of mcp-go's own, so that every
// interface a handler or hook asserts (client info, logging, elicitation
// and the rest) answers the same on both paths.
func TestRequestSessionMatchesMCPGo(t *testing.T) {
	f := newHTTPFastGateway(t, config.ModeOff)
	c := httpCase{body: modernCall(`1`, "raw_schema", `{}`), headers: map[string]string{"Mcp-Name": "raw_schema"}}
	if w, took := f.post(c, "all", false); took || w.Code != http.StatusOK {
		t.Fatalf("through mcp-go: %d %s (fast: %v)", w.Code, w.Body, took)
	}
	f.mu.Lock()
	theirs := f.session
	f.mu.Unlock()
	if theirs == nil {
		t.Fatal("the tool saw no session")
	}
	methods := func(v any) []string {
		var names []string
		for m := range reflect.TypeOf(v).Methods() {
			names = append(names, m.Name)
		}
		return names
	}
	if want, got := methods(theirs), methods(&requestSession{}); !slices.Equal(want, got) {
		t.Errorf("mcp-go's session (%T) has %v,\nthe fast path's has %v", theirs, want, got)
	}
	if _, took := f.post(c, "all", true); !took {
		t.Fatal("the fast path did not take the call")
	}
	f.mu.Lock()
	ours := f.session
	f.mu.Unlock()
	if _, ok := ours.(*requestSession); !ok {
		t.Errorf("the fast call's session is %T, want *requestSession", ours)
	}
}

// TestHTTPFastCallCancelled: a 2026-07-28 notifications/cancelled ends a
// tools/call the fast path serves, as it ends one mcp-go serves.
func TestHTTPFastCallCancelled(t *testing.T) {
	f := newHTTPFastGateway(t, config.ModeOff)
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	post := func(body, method, name string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		return srv.Client().Do(req)
	}
	answered := make(chan string, 1)
	go func() {
		resp, err := post(modernCall(`"c1"`, "slow", `{}`), "tools/call", "slow")
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		answered <- b.String()
	}()
	// The call is cancelled once it is in flight: retry until it is.
	deadline := time.After(time.Minute)
	for {
		resp, err := post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1",`+modernMeta+`}}`, "notifications/cancelled", "")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %d, want 202", resp.StatusCode)
		}
		select {
		case body := <-answered:
			if !strings.Contains(body, `"c1"`) {
				t.Errorf("cancelled call's answer: %s", body)
			}
			if f.g.fastServed.Load() != 1 {
				t.Errorf("fast calls: %d, want 1", f.g.fastServed.Load())
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the call was not cancelled")
		}
	}
}

// FuzzHTTPFastPathMatchesMCPGo holds the HTTP front to mcp-go on any
// body and any Mcp-Name, Mcp-Method and Mcp-Protocol-Version headers:
// the same status, headers and body.
func FuzzHTTPFastPathMatchesMCPGo(f *testing.F) {
	for _, c := range httpCorpus() {
		f.Add(c.body, c.headers["Mcp-Name"], c.headers["Mcp-Method"], c.headers["Mcp-Protocol-Version"])
	}
	fg := newHTTPFastGateway(f, config.ModeOn)
	f.Fuzz(func(t *testing.T, body, name, method, version string) {
		if strings.Contains(body, `"slow"`) {
			return // would wait for the call timeout
		}
		c := httpCase{body: body, headers: map[string]string{"Mcp-Name": name, "Mcp-Method": method, "Mcp-Protocol-Version": version}}
		for k, v := range c.headers {
			if v == "" || strings.ContainsAny(v, "\r\n\x00") {
				delete(c.headers, k) // keep the plain header
			}
		}
		slow, _ := fg.post(c, "all", false)
		fast, _ := fg.post(c, "all", true)
		if slow.Code != fast.Code || !reflect.DeepEqual(slow.Header(), fast.Header()) ||
			!bytes.Equal(withoutNotifications(slow.Body.Bytes()), withoutNotifications(fast.Body.Bytes())) {
			t.Errorf("answers differ for %q %v:\nmcp-go: %d %v %q\nfast:   %d %v %q", body, c.headers,
				slow.Code, slow.Header(), slow.Body, fast.Code, fast.Header(), fast.Body)
		}
	})
}
