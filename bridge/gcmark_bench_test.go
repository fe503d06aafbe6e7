package bridge

import (
	"runtime"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/config"
)

// BenchmarkGCMark10k measures what one full garbage collection costs in
// CPU time with 10,000 tools in the process, and whose heap it is:
//
//   - heap=upstreams: only the benchmarks' 250 in-process upstream
//     servers holding the 10,000 tools (a real upstream keeps them in its
//     own process);
//   - heap=gateway: those, and a gateway in front of them (catalog,
//     upstream connections' tool lists, search index, pins, summaries);
//   - heap=gateway-no-index: the same gateway with its search index
//     replaced by an empty one, for the index's share.
//
// Every request's p99 on process CPU time is decided by how often a
// request overlaps a mark phase (see docs/performance.md, "p99 on CPU
// time"); gc-cpu-ns/op is that phase's cost, the process CPU time of one
// runtime.GC (mark and sweep, all workers), measured before the case's
// heap is built and after: gc-cpu-added-ns/op and live-added-bytes are
// the case's own, whatever earlier runs left in the test process.
//
//	go test ./bridge -run '^$' -bench GCMark10k -benchtime 20x -count 6
func BenchmarkGCMark10k(b *testing.B) {
	for _, tc := range []struct {
		name    string
		gateway bool
		noIndex bool
	}{
		{"heap=upstreams", false, false},
		{"heap=gateway", true, false},
		{"heap=gateway-no-index", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var before, after time.Duration
			liveBefore := liveHeap()
			for range 20 {
				before += gcCPU(b)
			}
			before /= 20
			specs := synthUpstreams(b, catalogSize)
			var g *Gateway
			if tc.gateway {
				g = newTestGateway(b, config.ModeOn, specs)
				if tc.noIndex {
					g.index = search.New(search.Options{MaxLimit: searchIndexMaxHits})
				}
				// Let the start's background work (memo writes, the
				// review of late servers) end before measuring.
				time.Sleep(time.Second)
			}
			live := liveHeap()
			for b.Loop() {
				after += gcCPU(b)
			}
			after /= time.Duration(b.N)
			b.ReportMetric(float64(after.Nanoseconds()), "gc-cpu-ns/op")
			b.ReportMetric(float64((after - before).Nanoseconds()), "gc-cpu-added-ns/op")
			b.ReportMetric(float64(int64(live)-int64(liveBefore)), "live-added-bytes")
			runtime.KeepAlive(specs)
			runtime.KeepAlive(g)
		})
	}
}

// gcCPU is the process CPU time of one full collection.
func gcCPU(b *testing.B) time.Duration {
	from, ok := callCPU()
	runtime.GC()
	to, ok2 := callCPU()
	if !ok || !ok2 {
		b.Skip("no process CPU clock")
	}
	return to - from
}
