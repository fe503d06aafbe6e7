package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stdioExchange is one request over a fresh transport and what the
// server does with it: the lines it writes once it has read the request,
// then whether it ends its stdout (the child exited), and how many lines
// it reads back (the client's answers to its requests).
type stdioExchange struct {
	name    string
	id      any // the request's id; "tb-1" when nil
	params  any
	lines   []string
	end     bool
	cancel  bool // cancel the request once the lines are handled
	replies int
	noHand  bool // no request handler set
	late    []string
}

// stdioTrace is all a client can tell of an exchange.
type stdioTrace struct {
	Request       string
	Response      *transport.JSONRPCResponse
	Err           string
	Notifications []string
	Handled       []string
	Replies       []string
	After         string // SendRequest once the exchange is over
}

// stdioLimit is the stdout bound of the exchanges: lines past it are
// replaced or cut as a server's stdout is (boundedStdout).
const stdioLimit = 400

// runStdioExchange runs x over the transport newTr makes of a bounded
// stdout and a stdin, the way Conn makes them.
func runStdioExchange(t *testing.T, x stdioExchange, newTr func(*BoundedLines, io.WriteCloser, *os.File) transport.BidirectionalInterface) stdioTrace {
	t.Helper()
	outR, outW, err := os.Pipe() // the server's stdout
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe() // the server's stdin
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _, _, _ = outR.Close(), outW.Close(), inR.Close(), inW.Close() }()
	lines := boundedStdout(pipeIO(outR), stdioLimit, func(error) {})
	tr := newTr(lines, closedWritesDropped{pipeIO(inW)}, outR)
	var tr0 stdioTrace
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sentinel := make(chan struct{})
	tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		if n.Method == "test/sentinel" {
			close(sentinel)
			return
		}
		b, _ := json.Marshal(n)
		mu.Lock()
		tr0.Notifications = append(tr0.Notifications, string(b))
		mu.Unlock()
	})
	if !x.noHand {
		tr.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
			b, _ := json.Marshal(req)
			mu.Lock()
			tr0.Handled = append(tr0.Handled, string(b))
			mu.Unlock()
			switch req.Method {
			case string(mcp.MethodListRoots):
				return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"roots":[]}`)), nil
			case string(mcp.MethodSamplingCreateMessage):
				return nil, &unsupportedError{method: req.Method, capability: "sampling"}
			}
			return nil, errors.New("cannot answer that")
		})
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Close() }()

	server := bufio.NewReader(inR)
	served := make(chan struct{})
	go func() {
		defer close(served)
		req, err := server.ReadString('\n')
		if err != nil {
			return
		}
		mu.Lock()
		tr0.Request = req
		mu.Unlock()
		for _, l := range x.lines {
			_, _ = io.WriteString(outW, l)
		}
		if x.cancel {
			_, _ = io.WriteString(outW, `{"jsonrpc":"2.0","method":"test/sentinel"}`+"\n")
		}
		if x.end {
			_ = outW.Close()
		}
	}()
	go func() {
		if x.cancel {
			select {
			case <-sentinel:
				cancel()
			case <-time.After(time.Minute):
			}
		}
	}()
	var id any = "tb-1"
	if x.id != nil {
		id = x.id
	}
	callCtx, callCancel := context.WithTimeout(ctx, time.Minute)
	defer callCancel()
	resp, err := tr.SendRequest(callCtx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: "tools/call", Params: x.params})
	tr0.Response = resp
	if err != nil {
		tr0.Err = err.Error()
	}
	<-served
	for range x.replies {
		done := make(chan string, 1)
		go func() { l, _ := server.ReadString('\n'); done <- l }()
		select {
		case l := <-done:
			tr0.Replies = append(tr0.Replies, l)
		case <-time.After(time.Minute):
			tr0.Replies = append(tr0.Replies, "(none)")
		}
	}
	// A last request, answered after the late lines unless stdout has
	// ended: an answer to a request that gave up is nobody's.
	go func() {
		if _, err := server.ReadString('\n'); err != nil {
			return
		}
		for _, l := range x.late {
			_, _ = io.WriteString(outW, l)
		}
		_, _ = io.WriteString(outW, `{"jsonrpc":"2.0","id":"tb-after","result":{"after":true}}`+"\n")
	}()
	afterCtx, afterCancel := context.WithTimeout(context.Background(), time.Minute)
	defer afterCancel()
	after, err := tr.SendRequest(afterCtx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("tb-after"), Method: "ping"})
	if after != nil {
		tr0.After = string(after.Result)
	}
	if err != nil {
		tr0.After = err.Error()
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(tr0.Handled)
	slices.Sort(tr0.Replies)
	return tr0
}

// TestStdioTransportMatchesMCPGo runs the same exchanges through mcp-go's
// transport.NewIO (with refuseUnsupported around its request handler, as
// the gateway had it) and StdioTransport, over the same bounded stdout,
// and requires the same traces: the request line written, the answer or
// error, the notifications, the server's requests handled and the answers
// written back to it, and what a request gets afterwards.
func TestStdioTransportMatchesMCPGo(t *testing.T) {
	answer := func(id, result string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + "}\n"
	}
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tb-p1","progress":1,"total":2}}` + "\n"
	long := strings.Repeat("x", stdioLimit)
	exchanges := []stdioExchange{
		{name: "answer", lines: []string{answer(`"tb-1"`, `{"content":[{"type":"text","text":"5"}]}`)}},
		{name: "raw params compacted", params: json.RawMessage(`{ "name" : "add", "arguments" : {"a": "<&>", "b": [1, 2.50, "\u00e9"]} }`),
			lines: []string{answer(`"tb-1"`, `{"content":[]}`)}},
		{name: "map params", params: map[string]any{"name": "x", "arguments": map[string]any{"q": "a\u2028b"}}, lines: []string{answer(`"tb-1"`, `{}`)}},
		{name: "id with html", id: "tb-<&>\"", lines: []string{answer(`"tb-\u003c\u0026\u003e\""`, `{}`)}},
		{name: "integer id", id: int64(7), lines: []string{answer(`7`, `{"a":1}`)}},
		{name: "integer id answered as float", id: int64(7), lines: []string{answer(`7.0`, `{"a":1}`)}},
		{name: "integer id answered as string", id: int64(7), lines: []string{answer(`"7"`, `{"a":1}`), answer(`7`, `{"b":2}`)}},
		{name: "spaces and crlf", lines: []string{"  { \"result\" : { \"a\" : [ 1 , 2 ] } , \"id\" : \"tb-1\" , \"jsonrpc\" : \"2.0\" }  \r\n"}},
		{name: "keys out of order", lines: []string{`{"result":{"x":"y"},"id":"tb-1","jsonrpc":"2.0"}` + "\n"}},
		{name: "extra member", lines: []string{`{"jsonrpc":"2.0","id":"tb-1","result":{},"extra":true}` + "\n"}},
		{name: "upper-case key", lines: []string{`{"jsonrpc":"2.0","ID":"tb-1","result":{"a":1}}` + "\n"}},
		{name: "duplicate id", lines: []string{`{"jsonrpc":"2.0","id":"tb-9","id":"tb-1","result":{"a":1}}` + "\n"}},
		{name: "duplicate result", lines: []string{`{"jsonrpc":"2.0","id":"tb-1","result":{"a":1},"result":{"b":2}}` + "\n"}},
		{name: "escaped key", lines: []string{`{"jsonrpc":"2.0","\u0069d":"tb-1","result":{"a":1}}` + "\n"}},
		{name: "escaped id", lines: []string{`{"jsonrpc":"2.0","id":"tb-\u0031","result":{"a":1}}` + "\n"}},
		{name: "escaped jsonrpc", lines: []string{`{"jsonrpc":"2.\u0030","id":"tb-1","result":{"a":1}}` + "\n"}},
		{name: "jsonrpc not a string", lines: []string{`{"jsonrpc":2,"id":"tb-1","result":{"a":1}}` + "\n", answer(`"tb-1"`, `{"b":1}`)}},
		{name: "no jsonrpc", lines: []string{`{"id":"tb-1","result":{"a":1}}` + "\n"}},
		{name: "null result", lines: []string{answer(`"tb-1"`, `null`)}},
		{name: "array result", lines: []string{answer(`"tb-1"`, `[1,2]`)}},
		{name: "string result", lines: []string{answer(`"tb-1"`, `"s"`)}},
		{name: "error answer", lines: []string{`{"jsonrpc":"2.0","id":"tb-1","error":{"code":-32602,"message":"bad <args>","data":{"why":1}}}` + "\n"}},
		{name: "result and error", lines: []string{`{"jsonrpc":"2.0","id":"tb-1","result":{},"error":{"code":1,"message":"m"}}` + "\n"}},
		{name: "null id then answer", lines: []string{`{"jsonrpc":"2.0","id":null,"result":{}}` + "\n", answer(`"tb-1"`, `{}`)}},
		{name: "invalid utf-8 in result", lines: []string{answer(`"tb-1"`, "{\"t\":\"\xff\"}")}},
		{name: "invalid utf-8 in id", lines: []string{answer("\"tb-1\xff\"", `{}`), answer(`"tb-1"`, `{"ok":1}`)}},
		{name: "not json, then the answer", lines: []string{"starting up...\n", "{not json\n", "\n", answer(`"tb-1"`, `{}`)}},
		{name: "answer to someone else first", lines: []string{answer(`"tb-2"`, `{"x":1}`), answer(`"tb-1"`, `{"y":1}`)}},
		{name: "answer twice", lines: []string{answer(`"tb-1"`, `{"x":1}`), answer(`"tb-1"`, `{"y":1}`)}},
		{name: "notifications before the answer", lines: []string{progress,
			`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"<hi>"}}` + "\n",
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n",
			`{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{"k":1},"a":[1]}}` + "\n",
			`{"jsonrpc":"2.0","method":"notifications/bad","params":5}` + "\n",
			answer(`"tb-1"`, `{}`)}},
		{name: "server requests", replies: 4, lines: []string{
			`{"jsonrpc":"2.0","id":90,"method":"roots/list"}` + "\n",
			`{"jsonrpc":"2.0","id":"s-91","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}` + "\n",
			`{"jsonrpc":"2.0","id":92,"method":"elicitation/create","params":{"message":"m"}}` + "\n",
			`{"jsonrpc":"2.0","id":93,"method":"ping"}` + "\n",
			answer(`"tb-1"`, `{}`)}},
		{name: "server request without handler", noHand: true, replies: 1, lines: []string{
			`{"jsonrpc":"2.0","id":90,"method":"roots/list"}` + "\n", answer(`"tb-1"`, `{}`)}},
		{name: "server request with bad params", replies: 1, lines: []string{
			`{"jsonrpc":"2.0","id":94,"method":"roots/list","params":"x"}` + "\n", answer(`"tb-1"`, `{}`)}},
		{name: "request with an object id", lines: []string{
			`{"jsonrpc":"2.0","id":{"a":1},"method":"roots/list"}` + "\n", answer(`"tb-1"`, `{}`)}},
		{name: "answer too long", lines: []string{answer(`"tb-1"`, `{"text":"`+long+`"}`), answer(`"tb-1"`, `{"late":1}`)}},
		{name: "answer just within the bound", lines: []string{answer(`"tb-1"`, `{"text":"`+long[:stdioLimit-len(answer(`"tb-1"`, `{"text":""}`))]+`"}`)}},
		{name: "notification too long", lines: []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + long + `"}}` + "\n"}},
		{name: "child exits mid-call", lines: []string{progress}, end: true},
		{name: "child exits mid-line", lines: []string{`{"jsonrpc":"2.0","id":"tb-1","result":{}}`}, end: true},
		{name: "child exits after answering", lines: []string{answer(`"tb-1"`, `{}`)}, end: true},
		{name: "cancelled", cancel: true, lines: []string{progress}, late: []string{answer(`"tb-1"`, `{}`)}},
	}
	ours := func(l *BoundedLines, w io.WriteCloser, _ *os.File) transport.BidirectionalInterface {
		return NewStdioTransport(l, w)
	}
	// leading: each request's caller reads its own answer, and the reader
	// goroutine never takes the reading back between them.
	leading := func(l *BoundedLines, w io.WriteCloser, stdout *os.File) transport.BidirectionalInterface {
		tr := NewStdioTransport(l, w)
		tr.LeadWith(stdout.SetReadDeadline)
		tr.handBackAfter = time.Hour
		return tr
	}
	mcpgo := func(l *BoundedLines, w io.WriteCloser, _ *os.File) transport.BidirectionalInterface {
		return refusingIO{transport.NewIO(l, w, nil)}
	}
	for _, x := range exchanges {
		t.Run(x.name, func(t *testing.T) {
			want := runStdioExchange(t, x, mcpgo)
			for name, tr := range map[string]func(*BoundedLines, io.WriteCloser, *os.File) transport.BidirectionalInterface{
				"reader goroutine": ours, "caller reading": leading} {
				got := runStdioExchange(t, x, tr)
				if !reflect.DeepEqual(got, want) {
					gb, _ := json.MarshalIndent(got, "", " ")
					wb, _ := json.MarshalIndent(want, "", " ")
					t.Errorf("StdioTransport, %s:\n%s\nmcp-go's:\n%s", name, gb, wb)
				}
			}
		})
	}
}

// refusingIO is mcp-go's stdio transport as the gateway used it, with
// refuseUnsupported around the request handler.
type refusingIO struct{ *transport.Stdio }

func (t refusingIO) SetRequestHandler(h transport.RequestHandler) {
	t.Stdio.SetRequestHandler(refuseUnsupported(h))
}

// TestStdioTransportClosed: after Close, requests and notifications get
// transport.ErrTransportClosed, as from mcp-go's, and Close again is
// harmless.
func TestStdioTransportClosed(t *testing.T) {
	r, w := io.Pipe()
	tr := NewStdioTransport(NewBoundedLines(r, 100, nil), closedWritesDropped{w})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
	if _, err := tr.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("tb-1"), Method: "ping"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("request after Close: %v", err)
	}
	if err := tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("notification after Close: %v", err)
	}
	_ = r.Close()
}

// FuzzReadAnswer: whenever readAnswer reads a line, mcp-go's reading of
// it (the envelope, then the whole response) gives an answer, the same.
func FuzzReadAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":"tb-1","result":{"content":[{"type":"text","text":"5"}]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":-7.5e3,"result":{}}`,
		`{"jsonrpc":"2.0","id":"tb-\u0031","result":{}}`,
		` { "result" : { } , "id" : "x" , "jsonrpc" : "1" } `,
		`{"jsonrpc":"2.0","ID":"tb-1","result":{}}`,
		`{"jsonrpc":"2.0","id":"tb-1","result":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":"tb-1","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1e400,"result":{}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":{}}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := readAnswer(line)
		if !ok {
			return
		}
		var base struct {
			JSONRPC string         `json:"jsonrpc"`
			ID      *mcp.RequestId `json:"id,omitempty"`
			Method  string         `json:"method,omitempty"`
		}
		if err := json.Unmarshal(line, &base); err != nil || base.Method != "" {
			t.Fatalf("readAnswer took %q, which mcp-go reads as no answer (%v, method %q)", line, err, base.Method)
		}
		var want transport.JSONRPCResponse
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("readAnswer took %q, which mcp-go cannot decode: %v", line, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("readAnswer(%q) = %+v, mcp-go %+v", line, *got, want)
		}
	})
}

// FuzzAppendRequest: appendRequest writes what json.Marshal writes, and
// fails where it fails.
func FuzzAppendRequest(f *testing.F) {
	f.Add("2.0", "tb-1", int64(0), false, "tools/call", []byte(`{"name":"add","arguments":{"a":2}}`))
	f.Add("2.0", "tb-<&>", int64(0), false, "a\u2028b", []byte(` { "a" : [1, 2.50, "\u00e9<"] } `))
	f.Add("2.0", "", int64(-9), true, "ping", []byte(nil))
	f.Add("\xff", "\x01", int64(1<<53), true, "m", []byte(`{"a":`))
	f.Fuzz(func(t *testing.T, jsonrpc, sid string, nid int64, numeric bool, method string, params []byte) {
		req := transport.JSONRPCRequest{JSONRPC: jsonrpc, ID: mcp.NewRequestId(sid), Method: method}
		if numeric {
			req.ID = mcp.NewRequestId(nid)
		}
		if params != nil {
			req.Params = json.RawMessage(params)
		}
		got, gotErr := appendRequest(nil, req)
		want, wantErr := json.Marshal(req)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("appendRequest error %v, json.Marshal %v", gotErr, wantErr)
		}
		if wantErr == nil && string(got) != string(want)+"\n" {
			t.Fatalf("appendRequest = %s, json.Marshal %s", got, want)
		}
	})
}

// BenchmarkStdioTransport is one tools/call round trip over OS pipes to a
// server that answers at once, through mcp-go's transport.NewIO and
// through StdioTransport: the transport's own cost a call, client and
// server in this process.
//
//	go test ./bridge/upstream -run '^$' -bench StdioTransport -benchmem -count 6
func BenchmarkStdioTransport(b *testing.B) {
	for _, kind := range []string{"mcp-go", "toolbridge"} {
		b.Run("transport="+kind, func(b *testing.B) {
			outR, outW, _ := os.Pipe()
			inR, inW, _ := os.Pipe()
			b.Cleanup(func() { _, _, _, _ = outR.Close(), outW.Close(), inR.Close(), inW.Close() })
			lines := boundedStdout(pipeIO(outR), defaultMaxLine, func(error) {})
			var tr transport.Interface = NewStdioTransport(lines, closedWritesDropped{pipeIO(inW)})
			if kind == "mcp-go" {
				tr = refusingIO{transport.NewIO(lines, closedWritesDropped{pipeIO(inW)}, nil)}
			}
			if err := tr.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = tr.Close() })
			go func() { // the server: each request answered with its id
				r := bufio.NewReader(pipeIO(inR))
				w := pipeIO(outW)
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						return
					}
					i := strings.Index(string(line), `"id":`) + 5
					j := i + strings.IndexByte(string(line[i+1:]), '"') + 2
					answer := `{"jsonrpc":"2.0","id":` + string(line[i:j]) + `,"result":{"content":[{"type":"text","text":"5"}],"structuredContent":{"sum":5}}}` + "\n"
					if _, err := io.WriteString(w, answer); err != nil {
						return
					}
				}
			}()
			params := json.RawMessage(`{"name":"add","arguments":{"a":2,"b":3}}`)
			ctx := context.Background()
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("tb-" + strconv.Itoa(n)), Method: "tools/call", Params: params})
				if err != nil || len(resp.Result) == 0 {
					b.Fatal(resp, err)
				}
			}
		})
	}
}

// TestKeyOfMatchesString: two ids share a key of pending exactly when
// their RequestId.String, mcp-go's key, is the same.
func TestKeyOfMatchesString(t *testing.T) {
	ids := []mcp.RequestId{
		mcp.NewRequestId("tb-1"), mcp.NewRequestId("tb-2"), mcp.NewRequestId("1"), mcp.NewRequestId(""),
		mcp.NewRequestId(int64(1)), mcp.NewRequestId(float64(1)), mcp.NewRequestId(int64(-3)), mcp.NewRequestId(-3.0),
		mcp.NewRequestId(1.5), mcp.NewRequestId(1.5), mcp.NewRequestId(math.Copysign(0, -1)), mcp.NewRequestId(int64(0)),
		mcp.NewRequestId(math.NaN()), mcp.NewRequestId(1), mcp.NewRequestId(nil), mcp.NewRequestId(nil),
		mcp.NewRequestId(1e300), mcp.NewRequestId(int64(math.MinInt64)),
	}
	for _, a := range ids {
		for _, b := range ids {
			same := a.String() == b.String()
			if got := keyOf(a) == keyOf(b); got != same {
				t.Errorf("keyOf(%s) == keyOf(%s) is %v, their String equal %v", a.String(), b.String(), got, same)
			}
		}
	}
}
