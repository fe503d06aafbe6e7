package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/table.golden.md")

// TestTable renders testdata/bench.txt, go test -bench output with every
// kind of line go test prints (the numbers are a sample, not a
// measurement), and compares it with the golden table.
func TestTable(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"testdata/bench.txt"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/table.golden.md"
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("table differs from %s (go test -run TestTable -update to accept):\n%s", golden, out.String())
	}
}

// rowOf renders the table of the benchmark lines in input and returns
// its row for path.
func rowOf(t *testing.T, input, path string) string {
	t.Helper()
	r := results{}
	if err := r.read(strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(table(r)) {
		if strings.HasPrefix(line, "| "+path+" |") {
			return line
		}
	}
	t.Fatalf("no row %q", path)
	return ""
}

// TestVerdicts checks that each verdict follows the numbers: the same
// benchmark line is met or missed by which side of the limit it falls,
// and a budget without its benchmark is not run, never met.
func TestVerdicts(t *testing.T) {
	const listPath = "tools/list, bridge mode, 10k deferred tools, in-process client"
	// The verdict reads the p99 of the request's own CPU time, whatever
	// the process's CPU time and the wall clock say.
	list := func(ownP99 string) string {
		return "BenchmarkToolsListBridge-2 10 1 ns/op 1 cpu-p50-ns 5000000 cpu-p99-ns 1 own-cpu-p50-ns " + ownP99 + " own-cpu-p99-ns 1 p50-ns 5000000 p99-ns\n"
	}
	cases := []struct {
		name, input, want string
	}{
		{"under the limit", list("999999"), "| met |"},
		{"at the limit", list("1000000"), "| missed |"},
		{"median of three", list("3000000") + list("500000") + list("400000"), "own CPU p50 1 ns, p99 500 µs; process CPU p99 5.00 ms; wall-clock p99 5.00 ms | met |"},
		{"metric missing", "BenchmarkToolsListBridge-2 10 1 ns/op 1 p50-ns 1 p99-ns\n", "| not run |"},
		{"benchmark missing", "BenchmarkOther-2 10 1 ns/op\n", "| not run |"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(t, tc.input, listPath); !strings.Contains(got, tc.want) {
				t.Errorf("row = %q, want it to contain %q", got, tc.want)
			}
		})
	}

	// Both stdio rows are judged on the process's CPU p99, each on its own
	// benchmark: the raw client's figures never stand in for mcp-go's.
	const (
		stdioSearchPath = "tool_search, 10k tools, stdio client"
		rawSearchPath   = "tool_search, 10k tools, stdio client that does not decode"
	)
	search := func(sub string, cpuP99 float64) string {
		return fmt.Sprintf("BenchmarkToolSearch10k/%s-2 10 1 ns/op 400000 cpu-p50-ns %g cpu-p99-ns 1 p50-ns 1300000 p99-ns\n", sub, cpuP99)
	}
	for _, tc := range []struct {
		name, input, path, want string
	}{
		{"raw under the limit", search("client=stdio-raw", 1999999), rawSearchPath, "process CPU p50 400 µs, p99 2.00 ms; wall-clock p99 1.30 ms | met |"},
		{"raw at the limit", search("client=stdio-raw", 2e6), rawSearchPath, "| missed |"},
		{"raw alone leaves stdio not run", search("client=stdio-raw", 1e6), stdioSearchPath, "| not run |"},
		{"stdio alone leaves raw not run", search("client=stdio", 1e6), rawSearchPath, "| not run |"},
		{"each on its own", search("client=stdio", 3e6) + search("client=stdio-raw", 1e6), stdioSearchPath, "p99 3.00 ms; wall-clock p99 1.30 ms | missed |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(t, tc.input, tc.path); !strings.Contains(got, tc.want) {
				t.Errorf("row = %q, want it to contain %q", got, tc.want)
			}
		})
	}

	// Start-up is judged against the 13 servers started at once without
	// the gateway, not against the slowest one started alone.
	const startupPath = "start-up, 13 stdio servers (processes), to the first tools/list"
	startup := func(added, overParallel float64) string {
		return fmt.Sprintf("BenchmarkStartup-2 20 1 ns/op %g added-ms 300 gateway-13-ms 280 parallel-13-ms 30 single-max-ms %g over-parallel-ms\n", added, overParallel)
	}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"at the limit over all 13 at once", startup(270, 60), "toolbridge +60 ms over that | met |"},
		{"over all 13 at once", startup(50, 61), "| missed |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(t, tc.input, startupPath); !strings.Contains(got, tc.want) {
				t.Errorf("row = %q, want it to contain %q", got, tc.want)
			}
		})
	}

	// The memory budget is judged on the peak of both kinds of start.
	const memoryPath = "catalog + index, 10k tools, in toolbridge's own process (25 upstream processes)"
	memory := func(rss, peak, first int) string {
		return fmt.Sprintf("BenchmarkCatalogMemoryProcess-2 3 1 ns/op %d rss-bytes %d peak-rss-bytes %d first-peak-rss-bytes\n", rss, peak, first)
	}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"both peaks under", memory(80e6, 99e6, 99e6), "RSS 80.0 MB once listed; peak 99.0 MB; first start (writing the pins) peak 99.0 MB | met |"},
		{"day-to-day peak over", memory(80e6, 100e6, 90e6), "| missed |"},
		{"first start over", memory(80e6, 90e6, 101e6), "| missed |"},
		{"metric missing", "BenchmarkCatalogMemoryProcess-2 3 1 ns/op 80000000 rss-bytes\n", "| not run |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(t, tc.input, memoryPath); !strings.Contains(got, tc.want) {
				t.Errorf("row = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

// TestRatioVerdicts checks the budgets stated as a ratio to direct: the
// verdict follows the ratio of the two measurements, not either alone.
func TestRatioVerdicts(t *testing.T) {
	inProcess := func(direct, toolCall, pass float64) string {
		return fmt.Sprintf("BenchmarkToolCallInProcess/direct-2 10 1 ns/op %g cpu-ns/op 325 allocs/op\n", direct) +
			fmt.Sprintf("BenchmarkToolCallInProcess/passthrough-2 10 1 ns/op %g cpu-ns/op 400 allocs/op\n", pass) +
			fmt.Sprintf("BenchmarkToolCallInProcess/tool_call-2 10 1 ns/op %g cpu-ns/op %g allocs/op\n", toolCall, 325+float64(addedAllocsLimit))
	}
	stdio := func(addedPct, cpu float64) string {
		return fmt.Sprintf("BenchmarkToolCallOverStdio/upstream=go-demo-2 10 1 ns/op 100 toolcall-added-µs %g toolcall-added-%% 400 direct-p50-µs %g toolcall-gateway-cpu-µs/call\n", addedPct, cpu)
	}
	const (
		inProcessPath = "tools/call through tool_call, in-process upstream, CPU a call"
		allocsPath    = "allocations the gateway adds to a tools/call through tool_call, in-process upstream"
		stdioPath     = "tool_call end to end over stdio, Go upstream"
	)
	for _, tc := range []struct {
		name, input, path, want string
	}{
		{"in-process at the ratio", inProcess(100e3, 130e3, 120e3), inProcessPath, "(1.30×)"},
		{"in-process at the ratio is met", inProcess(100e3, 130e3, 120e3), inProcessPath, "| met |"},
		{"in-process over, fast machine", inProcess(10e3, 14e3, 12e3), inProcessPath, "| missed |"},
		{"pass-through over", inProcess(100e3, 120e3, 140e3), inProcessPath, "| missed |"},
		{"allocations at the limit", inProcess(1, 1, 1), allocsPath, "| met |"},
		{"end to end within", stdio(30, 250), stdioPath, "1.30× direct"},
		{"end to end within is met", stdio(30, 250), stdioPath, "| met |"},
		{"end to end ratio over", stdio(31, 200), stdioPath, "| missed |"},
		{"end to end CPU over", stdio(10, 251), stdioPath, "| missed |"},
		// A sitting where the gateway measured faster than direct: a
		// minus sign, not "+-21 µs".
		{"end to end faster than direct", "BenchmarkToolCallOverStdio/upstream=go-demo-2 10 1 ns/op -21 toolcall-added-µs -5 toolcall-added-% 400 direct-p50-µs 100 toolcall-gateway-cpu-µs/call\n", stdioPath, "0.95× direct, −21 µs (direct 400 µs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(t, tc.input, tc.path); !strings.Contains(got, tc.want) {
				t.Errorf("row = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestParseLine(t *testing.T) {
	cases := []struct {
		line string
		name string
		ok   bool
	}{
		{"BenchmarkX-2 10 5 ns/op", "BenchmarkX", true},
		{"BenchmarkX/sub=a-b-16 10 5 ns/op 3 p50-ns", "BenchmarkX/sub=a-b", true},
		{"BenchmarkNoProcs 10 5 ns/op", "BenchmarkNoProcs", true},
		{"", "", false},
		{"PASS", "", false},
		{"ok  \tpkg\t1.2s", "", false},
		{"--- BENCH: BenchmarkX-2", "", false},
		{"BenchmarkX-2 ten 5 ns/op", "", false},
		{"BenchmarkX-2 10 five ns/op", "", false},
		{"BenchmarkX-2 10 5", "", false},
		{"BenchmarkX-2 10 5 ns/op 7", "", false},
		{"BenchmarkX-2 -1 5 ns/op", "", false},
		{"goos: linux", "", false},
	}
	for _, tc := range cases {
		name, _, ok := parseLine(tc.line)
		if ok != tc.ok || name != tc.name {
			t.Errorf("parseLine(%q) = %q, %v; want %q, %v", tc.line, name, ok, tc.name, tc.ok)
		}
	}
}

func TestRunRejectsEmptyInput(t *testing.T) {
	var out bytes.Buffer
	err := run(nil, strings.NewReader("PASS\nok  \tpkg\t0.1s\n"), &out)
	if err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Errorf("run on output without results: %v, want an error saying so", err)
	}
	if err := run([]string{"testdata/does-not-exist.txt"}, nil, &out); err == nil || !strings.Contains(err.Error(), "does-not-exist") {
		t.Errorf("run on a missing file: %v, want an error naming it", err)
	}
}

// FuzzParseLine: any line either parses into a Benchmark name with
// metrics, or is skipped; nothing panics, and the table renders.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"BenchmarkX-2 10 5 ns/op 3 p50-ns",
		"BenchmarkScaling/tools=100-2 10 1 ns/op 1 p50-ns 1 heap-bytes",
		"BenchmarkX-2 10 NaN ns/op",
		"BenchmarkX-2 10 -Inf p99-ns",
		"Benchmark 1 1 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		name, metrics, ok := parseLine(line)
		if ok && (!strings.HasPrefix(name, "Benchmark") || len(metrics) == 0) {
			t.Errorf("parseLine(%q) accepted %q with %d metrics", line, name, len(metrics))
		}
		r := results{}
		if err := r.read(strings.NewReader(line)); err != nil {
			return
		}
		_ = table(r)
	})
}

// TestEveryRowSaysHowToReproduce checks each row's command: it runs a
// package of this module whose tests define a benchmark that the
// command's -bench pattern selects, so a renamed or moved benchmark
// cannot leave a command that reproduces nothing.
func TestEveryRowSaysHowToReproduce(t *testing.T) {
	const root = "../../../.."
	cmdRE := regexp.MustCompile(`^go test (\./\S+) -run '\^\$' -bench '([^']+)' `)
	funcRE := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)
	for _, bg := range budgets {
		m := cmdRE.FindStringSubmatch(bg.cmd)
		if m == nil {
			t.Errorf("%s: command %q is not `go test ./pkg -run '^$' -bench '...' ...`", bg.path, bg.cmd)
			continue
		}
		// go test matches the pattern's first slash-separated part
		// against the top-level benchmark names.
		top, err := regexp.Compile(strings.SplitN(m[2], "/", 2)[0])
		if err != nil {
			t.Errorf("%s: -bench pattern: %v", bg.path, err)
			continue
		}
		files, err := filepath.Glob(filepath.Join(root, m[1], "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no test files in %s", bg.path, m[1])
			continue
		}
		found := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, fn := range funcRE.FindAllStringSubmatch(string(src), -1) {
				found = found || top.MatchString(fn[1])
			}
		}
		if !found {
			t.Errorf("%s: %q selects no benchmark in %s", bg.path, m[2], m[1])
		}
	}
}
