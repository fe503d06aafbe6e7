package bridge

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// The load test's size: short by default, so it runs in every CI run; the
// full run is
//
//	go test ./bridge -run '^TestLoad$' -v -load.duration=30s
var (
	loadDuration = flag.Duration("load.duration", 3*time.Second, "how long TestLoad sends load, both phases together")
	loadSessions = flag.Int("load.sessions", 50, "concurrent streamable-HTTP sessions in TestLoad")
)

// slowCallDelay is how long the slow upstream's tool takes.
const slowCallDelay = 200 * time.Millisecond

// slowServer is an upstream whose sleep tool sleeps for slowCallDelay, and
// whose hold tool answers only when release closes (both end early if the
// call is cancelled). held counts the hold calls in progress.
func slowServer(release <-chan struct{}, held *atomic.Int64) *server.MCPServer {
	s := server.NewMCPServer("slow", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("sleep", mcp.WithDescription("Wait a while, then answer")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(slowCallDelay):
				return mcp.NewToolResultText("slept"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	s.AddTool(mcp.NewTool("hold", mcp.WithDescription("Answer when the test says so")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			held.Add(1)
			defer held.Add(-1)
			select {
			case <-release:
				return mcp.NewToolResultText("released"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	return s
}

// loadPhase is what one phase of the load test measured.
type loadPhase struct {
	name                 string
	elapsed              time.Duration
	search, fast, slow   latencies
	errors               atomic.Int64
	firstErr             atomic.Value // string
	searches, fastCalls  atomic.Int64
	slowCalls, slowCount atomic.Int64
}

func (p *loadPhase) fail(what string, err error, res *mcp.CallToolResult) {
	if p.errors.Add(1) == 1 {
		p.firstErr.Store(fmt.Sprintf("%s: %v %+v", what, err, res))
	}
}

// TestLoad puts 50 concurrent streamable-HTTP sessions on one gateway, each
// calling tool_search and then tool_call in a loop, against in-process
// upstreams, in two phases of equal length: first every session calls a
// fast tool; then one session in ten calls instead a tool whose upstream
// takes 200 ms. It logs calls/s, p50/p99 of both phases (the effect of a
// slow upstream on the others), goroutines and RSS before and after.
//
// It asserts that no call fails, that the goroutines and heap come back
// to their baseline once the sessions close, and that there is no
// head-of-line blocking: with one session in ten stuck in a call the slow
// upstream does not answer until told, every other session completes its
// rounds of calls. That check counts calls rather than timing them, so a
// slow, shared machine cannot fail it; a gateway that queued calls behind
// the stuck ones would fail it at every speed.
func TestLoad(t *testing.T) {
	if *loadDuration <= 0 || *loadSessions <= 0 {
		t.Fatalf("-load.duration and -load.sessions must be positive, got %s and %d", *loadDuration, *loadSessions)
	}
	release, held := make(chan struct{}), &atomic.Int64{}
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	specs := append(synthUpstreams(t, 400),
		upstream.Spec{Name: "fast", InProcess: echoServer("fast")},
		upstream.Spec{Name: "slow", InProcess: slowServer(release, held)})
	g := newTestGateway(t, config.ModeOn, specs)
	url := serveHTTPForBench(t, g)
	queries := keywordQueries(t)

	goroutinesBefore := runtime.NumGoroutine()
	heapBefore := liveHeap()
	rssBefore := procStatus("VmRSS")

	hc := loopbackHTTPClient(t, *loadSessions*2)
	sessions := make([]*client.Client, *loadSessions)
	for i := range sessions {
		sessions[i] = httpSession(t, url, hc)
	}

	// One round outside the measurement: connections, first-use caches.
	warm := &loadPhase{name: "warm-up"}
	var wg sync.WaitGroup
	for si, c := range sessions {
		wg.Go(func() { runSession(c, warm, queries, si, false, time.Time{}, 1) })
	}
	wg.Wait()
	if n := warm.errors.Load(); n > 0 {
		t.Fatalf("warm-up: %d calls failed; the first: %v", n, warm.firstErr.Load())
	}

	phases := []*loadPhase{{name: "fast only"}, {name: "with slow upstream"}}
	for pi, p := range phases {
		withSlow := pi == 1
		deadline := time.Now().Add(*loadDuration / time.Duration(len(phases)))
		start := time.Now()
		for si, c := range sessions {
			slowSession := withSlow && si%10 == 0
			wg.Go(func() { runSession(c, p, queries, si, slowSession, deadline, 0) })
		}
		wg.Wait()
		p.elapsed = time.Since(start)
	}

	// Head-of-line blocking: hold one session in ten in a call, then let
	// the others make their rounds while those calls are still held.
	blocked := &loadPhase{name: "while calls are held"}
	var holders sync.WaitGroup
	holding := 0
	for si, c := range sessions {
		if si%10 != 0 {
			continue
		}
		holding++
		holders.Go(func() {
			call := mcp.CallToolRequest{}
			call.Params.Name = toolid.MetaCall
			call.Params.Arguments = map[string]any{"tool_name": "slow::hold", "tool_args": map[string]any{}}
			if res, err := c.CallTool(context.Background(), call); err != nil || res.IsError {
				blocked.fail("slow::hold", err, res)
			}
		})
	}
	for held.Load() < int64(holding) && blocked.errors.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	blockedStart := time.Now()
	for si, c := range sessions {
		if si%10 != 0 {
			wg.Go(func() { runSession(c, blocked, queries, si, false, time.Time{}, 3) })
		}
	}
	wg.Wait()
	blocked.elapsed = time.Since(blockedStart)
	stillHeld := held.Load()
	releaseOnce.Do(func() { close(release) })
	holders.Wait()
	rssPeak := procStatus("VmRSS")

	for _, c := range sessions {
		_ = c.Close()
	}
	hc.CloseIdleConnections()
	goroutinesAfter := waitGoroutines(goroutinesBefore+goroutineSlack, 10*time.Second)
	heapAfter := liveHeap()
	rssAfter := procStatus("VmRSS")

	for _, p := range append(phases, blocked) {
		s, f, sl := p.search.sorted(), p.fast.sorted(), p.slow.sorted()
		calls := p.searches.Load() + p.fastCalls.Load() + p.slowCalls.Load()
		t.Logf("%-19s %d sessions, %.1fs: %d requests (%.0f/s), tool_call fast %.0f/s; "+
			"tool_search p50 %s p99 %s; tool_call fast p50 %s p99 %s; tool_call slow n=%d p50 %s; errors %d",
			p.name+":", len(sessions), p.elapsed.Seconds(), calls, float64(calls)/p.elapsed.Seconds(),
			float64(p.fastCalls.Load())/p.elapsed.Seconds(),
			ms(quantile(s, 0.5)), ms(quantile(s, 0.99)), ms(quantile(f, 0.5)), ms(quantile(f, 0.99)),
			len(sl), ms(quantile(sl, 0.5)), p.errors.Load())
	}
	t.Logf("goroutines %d before, %d after the sessions closed; live heap %.1f MB before, %.1f MB after; RSS %.1f MB before, %.1f MB at the end of the load, %.1f MB after",
		goroutinesBefore, goroutinesAfter, mb(heapBefore), mb(heapAfter), mb(rssBefore), mb(rssPeak), mb(rssAfter))

	for _, p := range phases {
		if n := p.errors.Load(); n > 0 {
			t.Errorf("%s: %d calls failed; the first: %v", p.name, n, p.firstErr.Load())
		}
		if p.fastCalls.Load() == 0 || p.searches.Load() == 0 {
			t.Errorf("%s: no calls were made", p.name)
		}
	}
	if slow := &phases[1].slow; len(slow.sorted()) == 0 {
		t.Error("no call reached the slow upstream")
	}
	// Every round of the other sessions ended (each round is bounded by
	// 2 min, so a call queued behind the held ones would have failed) while all the
	// held calls were still held.
	if n := blocked.errors.Load(); n > 0 {
		t.Errorf("with %d calls held by the slow upstream, %d calls to other tools failed; the first: %v", holding, n, blocked.firstErr.Load())
	}
	if want := int64(3 * (len(sessions) - holding)); blocked.fastCalls.Load() != want || stillHeld != int64(holding) {
		t.Errorf("while %d calls were held (%d still at the end), %d of %d calls to the fast upstream completed: calls wait behind the held ones",
			holding, stillHeld, blocked.fastCalls.Load(), want)
	}
	if goroutinesAfter > goroutinesBefore+goroutineSlack {
		t.Errorf("%d goroutines after the sessions closed, %d before: sessions leave goroutines behind", goroutinesAfter, goroutinesBefore)
	}
	if heapAfter > heapBefore+heapSlack {
		t.Errorf("live heap %.1f MB after the sessions closed, %.1f MB before: sessions or calls leave memory behind", mb(heapAfter), mb(heapBefore))
	}
}

// What may remain after the load without being a leak: a few runtime and
// net/http goroutines that wind down on their own, and heap the runtime
// keeps in partly used spans.
const (
	goroutineSlack = 5
	heapSlack      = 8 << 20
)

// runSession calls tool_search and then tool_call until deadline, or
// rounds times when rounds is positive: the fast upstream's echo, or the
// slow upstream's sleep when slow.
func runSession(c *client.Client, p *loadPhase, queries []string, session int, slow bool, deadline time.Time, rounds int) {
	for i := 0; (rounds > 0 && i < rounds) || (rounds == 0 && time.Now().Before(deadline)); i++ {
		// A hang guard, not a speed bar: at load ~25 on 2 cores with -race
		// a search took 11 s (p50) and a 10 s bound failed the test. A
		// call queued behind the held ones still fails, since those are
		// held until every other round has ended.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		search := mcp.CallToolRequest{}
		search.Params.Name = toolid.MetaSearch
		search.Params.Arguments = map[string]any{"query": queries[(session+i)%len(queries)], "limit": 5}
		start := time.Now()
		res, err := c.CallTool(ctx, search)
		p.search.add(time.Since(start))
		p.searches.Add(1)
		if err != nil || res.IsError {
			p.fail("tool_search", err, res)
		}

		call := mcp.CallToolRequest{}
		call.Params.Name = toolid.MetaCall
		if slow {
			call.Params.Arguments = map[string]any{"tool_name": "slow::sleep", "tool_args": map[string]any{}}
		} else {
			call.Params.Arguments = map[string]any{"tool_name": "fast::echo", "tool_args": map[string]any{"text": "hi"}}
		}
		start = time.Now()
		res, err = c.CallTool(ctx, call)
		took := time.Since(start)
		cancel()
		if slow {
			p.slow.add(took)
			p.slowCalls.Add(1)
		} else {
			p.fast.add(took)
			p.fastCalls.Add(1)
		}
		if err != nil || res.IsError {
			p.fail("tool_call", err, res)
		}
	}
}

// waitGoroutines waits until at most want goroutines run, or until
// timeout, and returns how many run then.
func waitGoroutines(want int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
