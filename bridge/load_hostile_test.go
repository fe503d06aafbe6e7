package bridge

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// TestLoadHostile runs -load.sessions streamable-HTTP sessions (on the
// pre-2026 protocol, which has sessions), each with a credential of its
// own, calling an in-process server and a stdio server, for
// -load.duration; meanwhile an attacker posts forged session ids and the
// ids of the real sessions under another credential, and the stdio server
// is killed mid-run. It asserts that every call is answered (an isError
// result for the killed server is an answer; a transport error or a
// timeout is not), that no forged or stolen id is ever served, and that
// goroutines, file descriptors and heap come back to their baseline once
// the sessions close. The longer run:
//
//	go test ./bridge -run '^TestLoadHostile$' -v -load.duration=60s -load.sessions=50
func TestLoadHostile(t *testing.T) {
	script := filepath.Join(t.TempDir(), "big.sh")
	if err := os.WriteFile(script, []byte(bigStdioServer), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Mode = config.ModeOff
	cfg.Timeouts.Call = 10 * time.Second
	cfg.Restart.Initial = 50 * time.Millisecond
	g, err := New(&cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	specs := []upstream.Spec{
		{Name: "fast", InProcess: echoServer("fast")},
		{Name: "big", Config: config.Server{Command: "sh", Args: []string{script, "10"}}},
	}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	url := serveHTTPForBench(t, g)

	goroutinesBefore := runtime.NumGoroutine()
	fdsBefore := openFDs(t)
	heapBefore := liveHeap()

	hc := loopbackHTTPClient(t, *loadSessions*2)
	sessions := make([]*client.Client, *loadSessions)
	ids := make([]string, *loadSessions)
	for i := range sessions {
		tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(map[string]string{"Authorization": fmt.Sprintf("Bearer client-%d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr)
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		if _, err := c.Initialize(context.Background(), init); err != nil {
			t.Fatal(err)
		}
		sessions[i], ids[i] = c, tr.GetSessionId()
		if ids[i] == "" {
			t.Fatal("a session on the pre-2026 protocol got no session id")
		}
	}

	var calls, answered, unanswered, toolErrors, probes, served atomic.Int64
	var firstUnanswered, firstServed atomic.Value
	deadline := time.Now().Add(*loadDuration)
	var wg sync.WaitGroup
	for i, c := range sessions {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "hi"}
				if n%2 == 1 {
					req.Params.Name, req.Params.Arguments = "small", nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := c.CallTool(ctx, req)
				cancel()
				calls.Add(1)
				switch {
				case err != nil:
					unanswered.Add(1)
					firstUnanswered.CompareAndSwap(nil, fmt.Sprintf("session %d, %s: %v", i, req.Params.Name, err))
				case res.IsError:
					answered.Add(1)
					toolErrors.Add(1)
				default:
					answered.Add(1)
				}
			}
		})
	}
	// The attacker: forged ids, and real ids under another credential.
	wg.Go(func() {
		for n := 0; time.Now().Before(deadline); n++ {
			id := fmt.Sprintf("mcp-session-%08x-0000-4000-8000-%012x", n, n)
			if n%2 == 1 {
				id = ids[n%len(ids)]
			}
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			req.Header.Set(sessionIDHeader, id)
			req.Header.Set("Authorization", "Bearer thief")
			resp, err := hc.Do(req)
			if err != nil {
				continue
			}
			_ = resp.Body.Close()
			probes.Add(1)
			if resp.StatusCode != http.StatusNotFound {
				served.Add(1)
				firstServed.CompareAndSwap(nil, fmt.Sprintf("id %s: status %d", id, resp.StatusCode))
			}
		}
	})
	// Kill the stdio server halfway through.
	time.Sleep(*loadDuration / 2)
	if u, ok := g.pool.Get("big"); ok && u.PID() > 0 {
		_ = syscall.Kill(-u.PID(), syscall.SIGKILL)
	} else {
		t.Error("the stdio server is not running halfway through")
	}
	wg.Wait()

	for _, c := range sessions {
		_ = c.Close()
	}
	hc.CloseIdleConnections()
	goroutinesAfter := waitGoroutines(goroutinesBefore+goroutineSlack, 10*time.Second)
	fdsAfter := openFDs(t)
	heapAfter := liveHeap()
	t.Logf("%d sessions, %s: %d calls, %d answered (%d isError), %d unanswered; %d attacker requests, %d served; goroutines %d -> %d, fds %d -> %d, live heap %.1f -> %.1f MB",
		len(sessions), *loadDuration, calls.Load(), answered.Load(), toolErrors.Load(), unanswered.Load(), probes.Load(), served.Load(),
		goroutinesBefore, goroutinesAfter, fdsBefore, fdsAfter, mb(heapBefore), mb(heapAfter))

	if n := unanswered.Load(); n > 0 {
		t.Errorf("%d calls got no answer; the first: %v", n, firstUnanswered.Load())
	}
	if answered.Load() == 0 || probes.Load() == 0 {
		t.Error("no load was made")
	}
	if n := served.Load(); n > 0 {
		t.Errorf("%d forged or stolen session ids were served; the first: %v", n, firstServed.Load())
	}
	if goroutinesAfter > goroutinesBefore+goroutineSlack {
		t.Errorf("%d goroutines after the sessions closed, %d before", goroutinesAfter, goroutinesBefore)
	}
	// The stdio server was restarted, with new pipes (and a watchdog):
	// a few descriptors more than before is the new process, not a leak.
	if fdsAfter > fdsBefore+fdSlack {
		t.Errorf("%d open fds after the sessions closed, %d before", fdsAfter, fdsBefore)
	}
	if heapAfter > heapBefore+heapSlack {
		t.Errorf("live heap %.1f MB after the sessions closed, %.1f MB before", mb(heapAfter), mb(heapBefore))
	}
}

// fdSlack is what a restarted stdio server may hold beyond its
// predecessor: none, plus the idle keep-alive sockets not yet closed.
const fdSlack = 4
