package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// leadPipes is a StdioTransport whose callers read their own answers
// (LeadWith), over a server's stdout and stdin that the test plays.
type leadPipes struct {
	tr     *StdioTransport
	stdout *os.File // the server's end: what it writes, the transport reads
	stdin  *bufio.Reader
	mu     sync.Mutex
	notes  []string
	noted  chan struct{} // one for each notification handled
}

// newLeadPipes starts a transport over fresh pipes; handBack is how long
// stdout may go unread between calls (handBackAfter in the gateway).
func newLeadPipes(t *testing.T, handBack time.Duration) *leadPipes {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &leadPipes{stdout: outW, stdin: bufio.NewReader(inR), noted: make(chan struct{}, 100)}
	p.tr = NewStdioTransport(boundedStdout(pipeIO(outR), stdioLimit, func(error) {}), closedWritesDropped{pipeIO(inW)})
	p.tr.LeadWith(outR.SetReadDeadline)
	p.tr.handBackAfter = handBack
	p.tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		p.mu.Lock()
		p.notes = append(p.notes, n.Method)
		p.mu.Unlock()
		p.noted <- struct{}{}
	})
	p.tr.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"roots":[]}`)), nil
	})
	if err := p.tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.tr.Close()
		_, _, _, _ = outR.Close(), outW.Close(), inR.Close(), inW.Close()
	})
	return p
}

// send writes lines to the transport as the server.
func (p *leadPipes) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.stdout, l); err != nil {
			t.Fatal(err)
		}
	}
}

// received reads the next line the transport wrote to the server, within
// a minute.
func (p *leadPipes) received(t *testing.T) string {
	t.Helper()
	got := make(chan string, 1)
	go func() { l, _ := p.stdin.ReadString('\n'); got <- l }()
	select {
	case l := <-got:
		return l
	case <-time.After(time.Minute):
		t.Fatal("the transport wrote nothing in a minute")
		return ""
	}
}

// call sends a request with id in the background; its answer (or error)
// comes on the channel.
func (p *leadPipes) call(ctx context.Context, id string) <-chan string {
	out := make(chan string, 1)
	go func() {
		resp, err := p.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: "tools/call"})
		switch {
		case err != nil:
			out <- "error: " + err.Error()
		default:
			out <- string(resp.Result)
		}
	}()
	return out
}

// within is what comes on ch within a minute.
func within(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(time.Minute):
		t.Fatal("nothing in a minute")
		return ""
	}
}

// waitNoted waits a minute at most for a notification to be handled.
func waitNoted(t *testing.T, p *leadPipes) {
	t.Helper()
	select {
	case <-p.noted:
	case <-time.After(time.Minute):
		t.Fatal("no notification handled in a minute")
	}
}

func (p *leadPipes) leaders() uint64 {
	p.tr.mu.Lock()
	defer p.tr.mu.Unlock()
	return p.tr.leaders
}

// TestStdioCallerReadsAnswersOutOfOrder: a caller reading its own answer
// hands the answers to other requests to their callers, in whatever
// order they come, and notifications among them are handled in order.
func TestStdioCallerReadsAnswersOutOfOrder(t *testing.T) {
	p := newLeadPipes(t, time.Hour)
	ctx := context.Background()
	first := p.call(ctx, "tb-1")
	p.received(t)
	if p.leaders() != 1 {
		t.Fatalf("the first request did not read its own answer (leaders %d)", p.leaders())
	}
	second := p.call(ctx, "tb-2")
	p.received(t)
	third := p.call(ctx, "tb-3")
	p.received(t)
	p.send(t,
		`{"jsonrpc":"2.0","method":"notifications/one"}`+"\n",
		`{"jsonrpc":"2.0","id":"tb-3","result":{"n":3}}`+"\n",
		`{"jsonrpc":"2.0","method":"notifications/two"}`+"\n",
		`{"jsonrpc":"2.0","id":"tb-1","result":{"n":1}}`+"\n")
	if got := within(t, first); got != `{"n":1}` {
		t.Errorf("tb-1 got %s", got)
	}
	if got := within(t, third); got != `{"n":3}` {
		t.Errorf("tb-3 got %s", got)
	}
	// tb-2 still waits: the reading has gone on to the reader goroutine.
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/three"}`+"\n", `{"jsonrpc":"2.0","id":"tb-2","result":{"n":2}}`+"\n")
	if got := within(t, second); got != `{"n":2}` {
		t.Errorf("tb-2 got %s", got)
	}
	for range 3 {
		waitNoted(t, p)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if got := strings.Join(p.notes, " "); got != "notifications/one notifications/two notifications/three" {
		t.Errorf("notifications handled: %s", got)
	}
	if p.leaders() != 1 {
		t.Errorf("leaders %d, want 1: only the first request found nobody reading", p.leaders())
	}
}

// TestStdioMessagesBetweenCallsAreRead: after a caller has read its own
// answer, a notification and a server's request that come before the
// next call are still read and answered (within handBackAfter), not left
// until a next call that may never come.
func TestStdioMessagesBetweenCallsAreRead(t *testing.T) {
	// Nobody takes the reading until the first call, which reads its own
	// answer; after it stdout goes unread for handBackAfter at most.
	p := newLeadPipes(t, time.Hour)
	p.tr.mu.Lock()
	p.tr.handBackAfter = handBackAfter
	p.tr.mu.Unlock()
	done := p.call(context.Background(), "tb-1")
	p.received(t)
	p.send(t, `{"jsonrpc":"2.0","id":"tb-1","result":{}}`+"\n")
	if got := within(t, done); got != `{}` {
		t.Fatalf("tb-1 got %s", got)
	}
	if p.leaders() != 1 {
		t.Fatal("the call did not read its own answer")
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n",
		`{"jsonrpc":"2.0","id":7,"method":"roots/list"}`+"\n")
	select {
	case <-p.noted:
	case <-time.After(time.Minute):
		t.Fatal("a notification between calls was not handled in a minute")
	}
	if got := p.received(t); !strings.Contains(got, `"id":7`) || !strings.Contains(got, `"roots":[]`) {
		t.Errorf("answer to the server's request: %s", got)
	}
}

// TestStdioCallerReadingIsCancelled: a caller reading its own answer
// returns when its context ends, though the server writes nothing; what
// it had read of a line is not lost, and the next caller reads on.
func TestStdioCallerReadingIsCancelled(t *testing.T) {
	p := newLeadPipes(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	first := p.call(ctx, "tb-1")
	p.received(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifi`) // half a line
	// Give the caller time to read the half line (it may not have; the
	// test holds either way), then cancel.
	time.Sleep(20 * time.Millisecond)
	cancel()
	if got := within(t, first); got != "error: "+context.Canceled.Error() {
		t.Fatalf("cancelled call got %s", got)
	}
	second := p.call(context.Background(), "tb-2")
	p.received(t)
	p.send(t, `cations/late"}`+"\n", `{"jsonrpc":"2.0","id":"tb-1","result":{"late":1}}`+"\n",
		`{"jsonrpc":"2.0","id":"tb-2","result":{"n":2}}`+"\n")
	if got := within(t, second); got != `{"n":2}` {
		t.Errorf("tb-2 got %s", got)
	}
	waitNoted(t, p)
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Join(p.notes, " ") != "notifications/late" {
		t.Errorf("notifications: %q", p.notes)
	}
}

// TestStdioCallerReadingIsClosed: Close ends a request whose caller is
// reading its own answer, though the server's stdout stays open.
func TestStdioCallerReadingIsClosed(t *testing.T) {
	p := newLeadPipes(t, time.Hour)
	first := p.call(context.Background(), "tb-1")
	p.received(t)
	if err := p.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if got := within(t, first); got != "error: "+transport.ErrTransportClosed.Error() {
		t.Errorf("got %s", got)
	}
	if _, err := p.tr.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("tb-2"), Method: "ping"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestBoundedLinesAfterADeadline: a read deadline that passes mid-line,
// or in a line being dropped, loses nothing: the next Line goes on where
// the read stopped.
func TestBoundedLinesAfterADeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = r.Close(), w.Close() }()
	const limit = 40
	lines := NewBoundedLines(pipeIO(r), limit, func([]byte) ([]byte, error) { return []byte("dropped\n"), nil })
	interrupted := func() {
		t.Helper()
		if err := r.SetReadDeadline(time.Now()); err != nil {
			t.Fatal(err)
		}
		if l, err := lines.Line(); !errors.Is(err, os.ErrDeadlineExceeded) || l != nil {
			t.Fatalf("Line after the deadline: %q, %v", l, err)
		}
		if err := r.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	next := func(want string) {
		t.Helper()
		if l, err := lines.Line(); err != nil || string(l) != want {
			t.Fatalf("Line: %q, %v; want %q", l, err, want)
		}
	}
	_, _ = io.WriteString(w, "first ")
	interrupted()
	_, _ = io.WriteString(w, "half\nsecond")
	next("first half\n")
	interrupted()
	_, _ = io.WriteString(w, " line\n"+strings.Repeat("x", 30))
	next("second line\n")
	interrupted()
	_, _ = io.WriteString(w, strings.Repeat("y", 30))
	interrupted()
	_, _ = io.WriteString(w, "z\nafter\n")
	next("dropped\n")
	next("after\n")
}
