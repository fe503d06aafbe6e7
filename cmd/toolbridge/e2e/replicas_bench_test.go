package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// benchClients is how many agents the replica benchmark runs at once.
const benchClients = 32

// BenchmarkReplicasThroughHAProxy (#23) measures throughput as a team
// gets it: Redis, three real `toolbridge serve` replicas (the demo
// servers over stdio as upstreams) and HAProxy running
// examples/deploy/haproxy.cfg, all on 127.0.0.1. 32 mcp-go clients, each
// with its own connections, speak the stateless 2026-07-28 protocol (no
// session: plain requests, balanced round robin with no stickiness); one
// op is a tool_search then a tool_call of math::add, both checked.
//
// Sub-benchmarks: replicas=1, 2 and 3 through HAProxy (one HAProxy per
// size, in front of the first 1, 2 or 3 replicas), then direct: the same
// clients on replica 1 with no HAProxy, so the balancer's cost shows.
// Each reports calls/s (tool_search and tool_call each count as a call)
// and x-vs-1, its calls/s over replicas=1's in the same run. It also
// reports the CPU each kind of process used while it ran, in cores
// (CPU seconds per wall second): everything shares this machine's cores,
// so these say what limits it.
//
//	go test -run '^$' -bench ReplicasThroughHAProxy -benchtime 5s -count 3 ./cmd/toolbridge/e2e/
//
// Setup (processes, clients, a first op per client) is outside the timer.
func BenchmarkReplicasThroughHAProxy(b *testing.B) {
	redis := statetest.Start(b)
	replicas, ports := startReplicas(b, redis.URL(), 3)
	ctx := b.Context()
	clientsOn := func(url string) []*client.Client {
		cs := make([]*client.Client, benchClients)
		for i := range cs {
			cs[i] = statelessClientVia(ctx, b, url, &http.Transport{}).c
			if err := searchAndAdd(ctx, cs[i], i, 0); err != nil {
				b.Fatalf("warming client %d on %s: %v", i, url, err)
			}
		}
		return cs
	}
	type target struct {
		name    string
		clients []*client.Client
	}
	var targets []target
	for n := 1; n <= len(replicas); n++ {
		targets = append(targets, target{fmt.Sprintf("replicas=%d", n), clientsOn(startReplicasHAProxy(b, ports[:n]))})
	}
	targets = append(targets, target{"direct", clientsOn(replicas[0].url)})

	var one float64 // replicas=1's calls/s in this run
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			cpuBefore := cpuByCommand()
			b.ResetTimer()
			start := time.Now()
			for i, c := range tg.clients {
				wg.Go(func() {
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						if err := searchAndAdd(ctx, c, i, int(n)); err != nil {
							b.Errorf("client %d: %v", i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			cpuAfter := cpuByCommand()
			perSec := float64(2*b.N) / elapsed.Seconds()
			b.ReportMetric(perSec, "calls/s")
			if tg.name == "replicas=1" {
				one = perSec
			}
			if one > 0 {
				b.ReportMetric(perSec/one, "x-vs-1")
			}
			for _, comm := range []string{"toolbridge", "haproxy", "redis-server", "demo-server", "clients"} {
				b.ReportMetric((cpuAfter[comm]-cpuBefore[comm])/elapsed.Seconds(), comm+"-cores")
			}
		})
	}
}

// searchAndAdd is one agent's op: tool_search for math::add, then
// tool_call of it, both answers checked.
func searchAndAdd(ctx context.Context, c *client.Client, a, b int) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_search"
	req.Params.Arguments = map[string]any{"query": "add two numbers"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("tool_search: %w", err)
	}
	if res.IsError || !strings.Contains(textOf(res), "math::add") {
		return fmt.Errorf("tool_search answered isError=%v %q, want math::add", res.IsError, textOf(res))
	}
	return add(ctx, c, a, b)
}

// cpuByCommand is the CPU time (user+system, in seconds) used so far by
// this process (the benchmark's clients, as "clients") and by each
// process it started, directly or not, summed by command name
// (/proc/<pid>/comm: toolbridge, haproxy, redis-server, demo-server). A
// process that has exited is no longer counted: the benchmark starts its
// processes before the first reading and stops none before the last.
func cpuByCommand() map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	if s, ok := procCPU(self); ok {
		out["clients"] = s
	}
	for _, pid := range testenv.DescendantProcesses(self) {
		comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		if err != nil {
			continue
		}
		if s, ok := procCPU(pid); ok {
			out[strings.TrimSpace(string(comm))] += s
		}
	}
	return out
}

// procCPU reads utime+stime from /proc/<pid>/stat, in seconds.
func procCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from the last ')' are state (3) ... utime (14), stime (15).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	// USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
	return (utime + stime) / 100, true
}
