package bridge

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// BenchmarkStartupInProcess measures the start-up budget of issue #8 with
// its second set of upstreams, 13 in-process ones: the gateway must answer
// its first tools/list within the slowest single server's start time plus
// 100 ms. The 13 servers are the MCP reference servers of
// testdata/reference-servers, each serving its real tools (99 in all).
// Unlike 13 processes (BenchmarkStartup in cmd/toolbridge/e2e), they do not
// compete for the machine's 2 cores while they start, so what is left over
// the slowest server is the gateway's own work.
//
// Each server takes a start time before it answers, so that
// connecting in series would show: with start=10-130ms, server i takes
// 10·(i+1) ms (in series, 910 ms in all); with start=none, none. Each
// iteration measures, back to back:
//
//   - single-max: each server alone, from creating its client to its
//     tools/list answer; the slowest of them
//   - gateway-13: from creating the gateway (config, classifier, counter,
//     index) to the first tools/list answer of a client on it, with all 13
//
// and reports the median of each and added, gateway-13 minus single-max,
// which the budget caps at 100 ms:
//
//	go test ./bridge -run '^$' -bench StartupInProcess -benchtime 20x -count 3
//
// Those two start without a state directory (pins in memory, every tool
// reviewed afresh). warm-state is start=none with a state directory that
// an earlier start filled (pins and the trust review's memo), as a user's
// gateway starts every day.
func BenchmarkStartupInProcess(b *testing.B) {
	servers := referenceServers(b)
	for _, c := range []struct {
		step time.Duration
		warm bool
	}{{0, false}, {10 * time.Millisecond, false}, {0, true}} {
		step := c.step
		name := "start=none"
		if step > 0 {
			name = fmt.Sprintf("start=%d-%dms", step.Milliseconds(), step.Milliseconds()*int64(len(servers)))
		}
		if c.warm {
			name = "warm-state"
		}
		b.Run(name, func(b *testing.B) {
			// Fresh servers for every measurement: a server waits its
			// start time only once.
			specs := func() []upstream.Spec {
				specs := make([]upstream.Spec, len(servers))
				for i, s := range servers {
					specs[i] = upstream.Spec{Name: s.name, InProcess: s.serve(step * time.Duration(i+1))}
				}
				return specs
			}
			stateDir := ""
			if c.warm {
				stateDir = b.TempDir()
				timeGateway(b, specs(), stateDir) // fills it
			}
			var single, gw13, added, cpu []time.Duration
			for b.Loop() {
				var slowest time.Duration
				for _, spec := range specs() {
					slowest = max(slowest, timeDirect(b, spec.InProcess))
				}
				fresh := specs()
				used := processCPU()
				took := timeGateway(b, fresh, stateDir)
				single, gw13, added = append(single, slowest), append(gw13, took), append(added, took-slowest)
				cpu = append(cpu, processCPU()-used)
			}
			median := func(d []time.Duration) float64 {
				s := slices.Clone(d)
				slices.Sort(s)
				return float64(quantile(s, 0.5).Microseconds()) / 1000
			}
			b.ReportMetric(median(single), "single-max-ms")
			b.ReportMetric(median(gw13), "gateway-13-ms")
			b.ReportMetric(median(added), "added-ms")
			// The CPU the whole process used for gateway-13 (the gateway,
			// the servers' answers, the collector): unlike the wall
			// times, it does not grow with the neighbours' load.
			b.ReportMetric(median(cpu), "gateway-13-cpu-ms")
		})
	}
}

// timeDirect returns how long a client takes from its creation to the
// tools/list answer of srv.
func timeDirect(b *testing.B, srv *server.MCPServer) time.Duration {
	b.Helper()
	start := time.Now()
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	listAfterInit(b, c)
	return time.Since(start)
}

// timeGateway returns how long a gateway in front of specs, with its
// state in stateDir ("": none), takes from its creation to its first
// tools/list answer, and closes it.
func timeGateway(b *testing.B, specs []upstream.Spec, stateDir string) time.Duration {
	b.Helper()
	start := time.Now()
	cfg := config.Default()
	cfg.StateDir = stateDir
	g, err := New(&cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := g.Connect(context.Background(), specs); err != nil {
		b.Fatal(err)
	}
	c := g.InProcessClient(ClientHandlers{})
	defer c.Close()
	if n := listAfterInit(b, c); n < len(specs) {
		b.Fatalf("the gateway lists %d tools for %d servers", n, len(specs))
	}
	return time.Since(start)
}

// listAfterInit starts and initializes c, lists its tools and returns how
// many there are.
func listAfterInit(b *testing.B, c *client.Client) int {
	b.Helper()
	initialize(b, c)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		b.Fatal(err)
	}
	return len(res.Tools)
}
