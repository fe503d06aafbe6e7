package main

import (
	"fmt"
	"math"
	"strings"
)

// verdict is how a measurement compares with its budget.
type verdict string

const (
	met    verdict = "met"
	missed verdict = "missed"
	notRun verdict = "not run"
)

// budget is one row of the table: a path users feel, its budget, and how
// to read it from the results.
type budget struct {
	path, limit string
	// measure returns what was measured and whether it is within the
	// limit; ran is false when the input lacks the benchmark.
	measure func(results) (measured string, within, ran bool)
	// cmd is the command that runs the benchmark the row reads, printed
	// next to its figure so that anyone can reproduce it.
	cmd string
}

// goTest is the command that runs the benchmarks of pkg matching bench,
// with flags (-count, -benchtime) after it.
func goTest(pkg, bench, flags string) string {
	return fmt.Sprintf("go test %s -run '^$' -bench '%s' %s", pkg, bench, flags)
}

// startupLimitMS is how much later than the slowest server alone the
// first tools/list may come (issue #25: slowest server + 60 ms; #8 had
// allowed 100 ms).
const startupLimitMS = 60

// callRatioLimit is how many times a direct call's cost a call through
// the gateway may take (issue #25: ≤ 1.3× direct, for the in-process and
// the end-to-end stdio call).
const callRatioLimit = 1.3

// addedAllocsLimit is issue #25's "allocations the gateway adds a call,
// halved": the issue measured 540 allocations through tool_call against
// 325 direct, +215, so the budget is half of that.
const addedAllocsLimit = 215 / 2

// budgets are the performance budgets, stated as a ratio to the upstream
// called directly or as CPU time so that they hold on any machine: issue
// #8's paths, with the limits issue #25 set where it set one.
var budgets = []budget{
	{
		path: "start-up, 13 stdio servers (processes), to the first tools/list",
		// The slowest server is the last of the 13 up when they start at
		// once, as the gateway starts them: issue #25 measured its +187 ms
		// against exactly that ("382 ms, all 13 at once"). The slowest one
		// started alone is printed too; on 2 cores the 13 processes alone
		// take hundreds of ms more than it, gateway or not.
		limit: fmt.Sprintf("slowest of the 13 started at once without toolbridge + %d ms", startupLimitMS),
		cmd:   goTest("./cmd/toolbridge/e2e", "^BenchmarkStartup$", "-benchtime 20x -count 3"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkStartup", "single-max-ms", "parallel-13-ms", "gateway-13-ms", "added-ms", "over-parallel-ms")
			if !ok {
				return "", false, false
			}
			return fmt.Sprintf("slowest alone %.0f ms; all 13 through toolbridge %.0f ms (%s); all 13 at once without toolbridge %.0f ms, toolbridge %s over that",
				v[0], v[2], signed(v[3], numf("%.0f ms")), v[1], signed(v[4], numf("%.0f ms"))), v[4] <= startupLimitMS, true
		},
	},
	startupInProcess("start=10-130ms", "start-up, 13 in-process servers taking 10–130 ms to start"),
	startupInProcess("start=none", "start-up, 13 in-process servers starting at once"),
	startupInProcess("warm-state", "start-up, 13 in-process servers starting at once, warm state directory (pins and review memo)"),
	{
		path:  "tools/list, bridge mode, 10k deferred tools, in-process client",
		limit: "p99 < 1 ms of the request's own CPU time",
		cmd:   goTest("./bridge", "ToolsListBridge", "-count 6"),
		measure: func(r results) (string, bool, bool) {
			return ownCPUQuantiles(r, "BenchmarkToolsListBridge", 1e6)
		},
	},
	toolSearch("client=inprocess", "tool_search, 10k tools, in-process client"),
	toolSearch("client=stdio", "tool_search, 10k tools, stdio client"),
	// The same protocol with a client that does not decode the answers:
	// in one process with the gateway, mcp-go's stdio client allocates
	// four times the gateway's bytes a search, so its garbage sets the
	// row above's p99. This row counts the gateway's work apart from it.
	toolSearch("client=stdio-raw", "tool_search, 10k tools, stdio client that does not decode"),
	{
		path:  "tools/call through tool_call, in-process upstream, CPU a call",
		limit: fmt.Sprintf("≤ %.1f× direct", callRatioLimit),
		cmd:   goTest("./bridge", "ToolCallInProcess$", "-benchmem -count 6"),
		measure: func(r results) (string, bool, bool) {
			d, okD := r.get("BenchmarkToolCallInProcess/direct", "cpu-ns/op")
			p, okP := r.get("BenchmarkToolCallInProcess/passthrough", "cpu-ns/op")
			t, okT := r.get("BenchmarkToolCallInProcess/tool_call", "cpu-ns/op")
			if !okD || !okP || !okT || d[0] <= 0 {
				return "", false, false
			}
			return fmt.Sprintf("tool_call %s (%.2f×), passed through %s (%.2f×), direct %s", dur(t[0]), t[0]/d[0], dur(p[0]), p[0]/d[0], dur(d[0])),
				t[0]/d[0] <= callRatioLimit && p[0]/d[0] <= callRatioLimit, true
		},
	},
	{
		path:  "allocations the gateway adds to a tools/call through tool_call, in-process upstream",
		limit: fmt.Sprintf("≤ +%d (half the +215 of issue #25)", addedAllocsLimit),
		cmd:   goTest("./bridge", "ToolCallInProcess$", "-benchmem -count 6"),
		measure: func(r results) (string, bool, bool) {
			d, okD := r.get("BenchmarkToolCallInProcess/direct", "allocs/op")
			t, okT := r.get("BenchmarkToolCallInProcess/tool_call", "allocs/op")
			if !okD || !okT {
				return "", false, false
			}
			return fmt.Sprintf("%s (tool_call %.0f, direct %.0f)", signed(t[0]-d[0], numf("%.0f")), t[0], d[0]), t[0]-d[0] <= addedAllocsLimit, true
		},
	},
	{
		path:  "tool_call added latency, stdio upstream, in-process client",
		limit: "< 1.1× direct (median)",
		cmd:   goTest("./bridge", "ToolCallAdded/upstream=stdio", "-count 3"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkToolCallAdded/upstream=stdio", "added-%", "added-p50-ns", "direct-p50-ns")
			if !ok {
				return "", false, false
			}
			return fmt.Sprintf("%.2f× direct, %s (direct %s)", 1+v[0]/100, signed(v[1], dur), dur(v[2])), v[0] < 10, true
		},
	},
	endToEnd("upstream=go-demo", "tool_call end to end over stdio, Go upstream"),
	endToEnd("upstream=npm-everything", "tool_call end to end over stdio, npm everything"),
	{
		path:  "catalog + index, 10k tools, in toolbridge's own process (25 upstream processes)",
		limit: "< 100 MB RSS, at its peak",
		cmd:   goTest("./cmd/toolbridge/e2e", "^BenchmarkCatalogMemoryProcess$", "-benchtime 3x -count 3"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkCatalogMemoryProcess", "rss-bytes", "peak-rss-bytes", "first-peak-rss-bytes")
			if !ok {
				return "", false, false
			}
			// The peak is what a container's memory limit meets, and the
			// first start, which writes the pins, peaks highest.
			return fmt.Sprintf("RSS %s once listed; peak %s; first start (writing the pins) peak %s", mb(v[0]), mb(v[1]), mb(v[2])),
				v[1] < 100e6 && v[2] < 100e6, true
		},
	},
	{
		path:  "idle HTTP session",
		limit: "< 64 KB",
		cmd:   goTest("./bridge", "HTTPSessionMemory", "-count 3"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkHTTPSessionMemory", "bytes/session")
			if !ok {
				return "", false, false
			}
			return fmt.Sprintf("%.1f KB", v[0]/1000), v[0] < 64<<10, true
		},
	},
	{
		path:  "HTTP throughput, 50 sessions, one real HTTP upstream, bridge mode's tool_call",
		limit: "≥ 0.9 of the same hops without toolbridge (a plain reverse proxy)",
		cmd:   goTest("./bridge", "HTTPThroughput", "-benchtime 3000x -count 6"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkHTTPThroughput", "gateway-calls/s", "proxy-calls/s", "direct-calls/s", "gateway/proxy", "gateway/direct")
			if !ok {
				return "", false, false
			}
			return fmt.Sprintf("toolbridge %.0f/s; reverse proxy %.0f/s; upstream called directly %.0f/s; ratio %.2f to the proxy, %.2f to direct",
				v[0], v[1], v[2], v[3], v[4]), v[3] >= 0.9, true
		},
	},
	{
		path:  "tool_search scaling, 100 → 100k tools, CPU time a query",
		limit: "p50 ≤ 1 ms at 100k; p50 grows ≤ 3× per 10× tools above 10k",
		cmd:   goTest("./bridge/search", "Scaling", "-count 6"),
		measure: func(r results) (string, bool, bool) {
			sizes := []string{"100", "1000", "10000", "100000"}
			var p50, heap []float64
			for _, n := range sizes {
				v, ok := r.get("BenchmarkScaling/tools="+n, "cpu-p50-ns", "heap-bytes")
				if !ok {
					return "", false, false
				}
				p50, heap = append(p50, v[0]), append(heap, v[1])
			}
			var lat, mem, growth []string
			for i := range sizes {
				lat, mem = append(lat, dur(p50[i])), append(mem, mb(heap[i]))
				if i > 0 {
					growth = append(growth, fmt.Sprintf("%.1f×", p50[i]/p50[i-1]))
				}
			}
			last := len(sizes) - 1
			within := p50[last] <= 1e6 && p50[last] <= 3*p50[last-1]
			return fmt.Sprintf("CPU p50 %s (per 10×: %s); index heap %s", strings.Join(lat, " / "), strings.Join(growth, ", "), strings.Join(mem, " / ")),
				within, true
		},
	},
}

func startupInProcess(sub, path string) budget {
	return budget{
		path:  path,
		limit: fmt.Sprintf("slowest alone + %d ms", startupLimitMS),
		cmd:   goTest("./bridge", "StartupInProcess/"+sub, "-benchtime 20x -count 3"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkStartupInProcess/"+sub, "single-max-ms", "gateway-13-ms", "added-ms")
			if !ok {
				return "", false, false
			}
			measured := fmt.Sprintf("slowest alone %.1f ms; all 13 %.1f ms (%s)", v[0], v[1], signed(v[2], numf("%.1f ms")))
			if cpu, ok := r.get("BenchmarkStartupInProcess/"+sub, "gateway-13-cpu-ms"); ok {
				measured += fmt.Sprintf("; CPU %.1f ms", cpu[0])
			}
			return measured, v[2] <= startupLimitMS, true
		},
	}
}

func toolSearch(sub, path string) budget {
	b := budget{
		path:  path,
		limit: "p99 < 2 ms of the request's own CPU time",
		cmd:   goTest("./bridge", "ToolSearch10k/"+sub, "-count 6"),
		measure: func(r results) (string, bool, bool) {
			return ownCPUQuantiles(r, "BenchmarkToolSearch10k/"+sub, 2e6)
		},
	}
	if strings.HasPrefix(sub, "client=stdio") {
		// Over stdio the request crosses goroutines: only the process's
		// CPU time can be read, a stricter measure.
		b.limit = "p99 < 2 ms of the process's CPU time"
		b.measure = func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkToolSearch10k/"+sub, "cpu-p50-ns", "cpu-p99-ns", "p99-ns")
			if !ok {
				return "", false, false
			}
			return fmt.Sprintf("process CPU p50 %s, p99 %s; wall-clock p99 %s", dur(v[0]), dur(v[1]), dur(v[2])), v[1] < 2e6, true
		}
	}
	return b
}

// ownCPUQuantiles reads a benchmark's CPU quantiles (see cpuQuantiles in
// package bridge) and judges the p99 of the request's own CPU time
// against limit (ns). The process's CPU p99, which adds the garbage
// collector's background work, and the wall-clock p99 are shown beside it.
func ownCPUQuantiles(r results, name string, limit float64) (string, bool, bool) {
	v, ok := r.get(name, "own-cpu-p50-ns", "own-cpu-p99-ns", "cpu-p99-ns", "p99-ns")
	if !ok {
		return "", false, false
	}
	return fmt.Sprintf("own CPU p50 %s, p99 %s; process CPU p99 %s; wall-clock p99 %s", dur(v[0]), dur(v[1]), dur(v[2]), dur(v[3])), v[1] < limit, true
}

// endToEnd is the call an agent makes: its client over stdio to the
// toolbridge binary, which calls a stdio upstream, against the same client
// calling the upstream directly; judged on the interleaved medians' ratio
// and on the gateway process's CPU time a call.
func endToEnd(sub, path string) budget {
	return budget{
		path:  path,
		limit: fmt.Sprintf("≤ %.1f× direct (median); gateway CPU ≤ 250 µs a call", callRatioLimit),
		cmd:   goTest("./cmd/toolbridge/e2e", "ToolCallOverStdio/"+sub, "-benchtime 2000x -count 6"),
		measure: func(r results) (string, bool, bool) {
			v, ok := r.get("BenchmarkToolCallOverStdio/"+sub, "toolcall-added-µs", "toolcall-added-%", "direct-p50-µs", "toolcall-gateway-cpu-µs/call")
			if !ok {
				return "", false, false
			}
			ratio := 1 + v[1]/100
			return fmt.Sprintf("%.2f× direct, %s (direct %.0f µs); gateway CPU %.0f µs/call", ratio, signed(v[0], numf("%.0f µs")), v[2], v[3]),
				ratio <= callRatioLimit && v[3] <= 250, true
		},
	}
}

// table renders every budget as one Markdown table.
func table(r results) string {
	var b strings.Builder
	b.WriteString("| path | budget | measured | verdict | reproduce with |\n|---|---|---|---|---|\n")
	for _, bg := range budgets {
		measured, within, ran := bg.measure(r)
		v := missed
		switch {
		case !ran:
			v, measured = notRun, "—"
		case within:
			v = met
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` |\n", bg.path, bg.limit, measured, v, bg.cmd)
	}
	return b.String()
}

// dur formats nanoseconds for a latency column.
func dur(ns float64) string {
	switch {
	case math.Abs(ns) >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case math.Abs(ns) >= 1e3:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// signed is format(|v|) after + or − (U+2212), so that a gateway that
// measured faster than direct in a noisy sitting reads "−21 µs", not
// "+-21 µs".
func signed(v float64, format func(float64) string) string {
	if v < 0 {
		return "−" + format(-v)
	}
	return "+" + format(v)
}

// numf returns a formatter of one number with layout, for signed.
func numf(layout string) func(float64) string {
	return func(v float64) string { return fmt.Sprintf(layout, v) }
}

// mb formats bytes in megabytes (10^6, as the budgets are written).
func mb(bytes float64) string { return fmt.Sprintf("%.1f MB", bytes/1e6) }
