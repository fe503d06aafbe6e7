package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// Helpers shared by the performance benchmarks (perf_bench_test.go) and the
// load test (load_test.go).

// latencies collects call durations; safe for concurrent use.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// sorted returns a sorted copy of the durations.
func (l *latencies) sorted() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.d)
	slices.Sort(out)
	return out
}

// quantile returns the p-quantile (0..1) of sorted durations, 0 if none.
func quantile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// reportQuantiles reports the p50 and p99 of d as prefix+"p50-ns" and
// prefix+"p99-ns".
func reportQuantiles(b *testing.B, d []time.Duration, prefix string) {
	b.Helper()
	s := slices.Clone(d)
	slices.Sort(s)
	b.ReportMetric(float64(quantile(s, 0.50).Nanoseconds()), prefix+"p50-ns")
	b.ReportMetric(float64(quantile(s, 0.99).Nanoseconds()), prefix+"p99-ns")
}

// cpuQuantiles collects the CPU time of requests made one at a time and
// reports its quantiles: the process's (callCPU: everything the process
// did meanwhile, the garbage collector's background workers included) and,
// for requests served on the caller's goroutine, the request's own
// (threadCPU; the caller locks its goroutine to its thread).
type cpuQuantiles struct {
	// own is set when the request runs on the caller's goroutine.
	own               bool
	proc, thread      []time.Duration
	procFrom, thrFrom time.Duration
	procOK, threadOK  bool
}

// start marks the beginning of a request.
func (q *cpuQuantiles) start() {
	q.procFrom, q.procOK = callCPU()
	if q.own {
		q.thrFrom, q.threadOK = threadCPU()
	}
}

// stop records the CPU time since start.
func (q *cpuQuantiles) stop() {
	if q.own {
		if now, ok := threadCPU(); ok && q.threadOK {
			q.thread = append(q.thread, now-q.thrFrom)
		}
	}
	if now, ok := callCPU(); ok && q.procOK {
		q.proc = append(q.proc, now-q.procFrom)
	}
}

// report reports the process CPU time's p50 and p99 as cpu-p50-ns and
// cpu-p99-ns, the request's own as own-cpu-p50-ns and own-cpu-p99-ns;
// nothing where the clocks are unavailable.
func (q *cpuQuantiles) report(b *testing.B) {
	b.Helper()
	if len(q.proc) > 0 {
		reportQuantiles(b, q.proc, "cpu-")
	}
	if len(q.thread) > 0 {
		reportQuantiles(b, q.thread, "own-cpu-")
	}
}

// synthToolsPerServer is the size of the synthetic servers: real MCP
// servers carry a few to a few dozen tools.
const synthToolsPerServer = 40

// synthUpstreams returns n tools spread over in-process servers of
// synthToolsPerServer tools each. The tools are copies of the 99 tools of
// the MCP reference servers (testdata/reference-servers), schemas and
// descriptions byte for byte, each copy after the first with a suffix on
// its name, so searches and parameter summaries work on real shapes.
func synthUpstreams(tb testing.TB, n int) []upstream.Spec {
	tb.Helper()
	base := referenceTools(tb)
	var specs []upstream.Spec
	var up *server.MCPServer
	names := map[string]bool{}
	for i := range n {
		if i%synthToolsPerServer == 0 {
			name := fmt.Sprintf("srv%04d", i/synthToolsPerServer)
			up = server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
			specs = append(specs, upstream.Spec{Name: name, InProcess: up})
			clear(names)
		}
		tool := base[i%len(base)]
		if copyNo := i / len(base); copyNo > 0 {
			tool.Name += "_v" + strconv.Itoa(copyNo)
		}
		for names[tool.Name] {
			tool.Name += "_2" // the reference servers share some names
		}
		names[tool.Name] = true
		up.AddTool(tool, okHandler)
	}
	return specs
}

func okHandler(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("ok"), nil
}

// keywordQueries are the keyword queries of the search package's
// retrieval set: what a model sends to tool_search.
func keywordQueries(tb testing.TB) []string {
	tb.Helper()
	f, err := os.Open("search/testdata/keyword-queries.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatal(err)
		}
		qs = append(qs, q.Query)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return append(qs, "creat_isue", "slack_post_mesage")
}

// newTestGateway builds a gateway in front of specs with every tool
// deferrable (no built-in core names) and closes it at cleanup.
func newTestGateway(tb testing.TB, mode config.Mode, specs []upstream.Spec) *Gateway {
	tb.Helper()
	cfg := config.Default()
	cfg.Mode = mode
	cfg.CoreTools = nil
	g, err := New(&cfg, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), specs); err != nil {
		tb.Fatal(err)
	}
	return g
}

// startClient starts and initializes c and closes it at cleanup.
func startClient(tb testing.TB, c *client.Client) *client.Client {
	tb.Helper()
	tb.Cleanup(func() { _ = c.Close() })
	initialize(tb, c)
	return c
}

// initialize starts and initializes c.
func initialize(tb testing.TB, c *client.Client) {
	tb.Helper()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		tb.Fatal(err)
	}
}

// stdioPipeClient serves g over a pair of OS pipes with ServeStdio, as the
// toolbridge binary serves its stdin and stdout, and returns a client on
// the other ends. Everything is stopped at cleanup.
func stdioPipeClient(tb testing.TB, g *Gateway) *client.Client {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, done := serveStdioPipes(tb, ctx, g)
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("ServeStdio: %v", err)
		}
	})
	return c
}

// serveStdioPipes serves g with ServeStdio(ctx) over a pair of OS pipes and
// returns a client on the other ends, and ServeStdio's result. Cleanup
// closes the client's end of stdin, which also ends ServeStdio.
func serveStdioPipes(tb testing.TB, ctx context.Context, g *Gateway) (*client.Client, <-chan error) {
	tb.Helper()
	toServerR, toServerW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	toClientR, toClientW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	done, result := make(chan error, 1), make(chan error, 1)
	go func() {
		err := g.ServeStdio(ctx, toServerR, toClientW, io.Discard)
		_ = toClientW.Close()
		done <- err
		result <- err
	}()
	c := client.NewClient(transport.NewIO(toClientR, toServerW, io.NopCloser(strings.NewReader(""))))
	tb.Cleanup(func() {
		_ = toServerW.Close() // EOF on the gateway's stdin ends ServeStdio
		<-done
		_ = toServerR.Close()
		_ = toClientR.Close()
	})
	return startClient(tb, c), result
}

// procStatus returns a field of /proc/self/status in bytes (VmRSS, VmHWM);
// 0 where /proc is not there.
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, _ := strconv.ParseUint(f[0], 10, 64)
		return kb << 10
	}
	return 0
}

// processCPU returns the CPU time (user and system) this process has used
// so far. On a shared machine, CPU per operation moves far less with the
// neighbours' load than wall-clock time does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter reports the process CPU time per operation as cpu-ns/op: what
// the client and the gateway in this process spent, child processes not
// included.
type cpuMeter struct{ start time.Duration }

func startCPU() cpuMeter { return cpuMeter{start: processCPU()} }

func (m cpuMeter) report(b *testing.B, ops int) {
	b.Helper()
	if ops > 0 {
		b.ReportMetric(float64((processCPU()-m.start).Nanoseconds())/float64(ops), "cpu-ns/op")
	}
}

// liveHeap returns HeapInuse+StackInuse after two full collections: the
// memory the Go runtime holds for live objects and goroutine stacks.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
