// Command benchtable prints the performance budgets of issue #8 next to
// what one run of the benchmarks measured, as one Markdown table. It reads
// `go test -bench` output (files named as arguments, or stdin) and takes
// the median of each metric over the run's -count repetitions:
//
//	go test -run '^$' -bench . -count 3 ./... | tee bench.txt
//	go run ./cmd/toolbridge/internal/benchtable bench.txt
//
// A budget whose benchmark is not in the input is reported as not run,
// never as met. Each row ends with the command that runs its benchmark,
// so every figure in the table sits next to how to reproduce it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// run reads the benchmark output in the files named by args (stdin if
// none) and writes the table to out.
func run(args []string, stdin io.Reader, out io.Writer) error {
	res := results{}
	if len(args) == 0 {
		if err := res.read(stdin); err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
	for _, path := range args {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("opening benchmark output: %w", err)
		}
		err = res.read(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	if len(res) == 0 {
		return fmt.Errorf("no benchmark results in the input (want `go test -bench` output)")
	}
	_, err := io.WriteString(out, table(res))
	return err
}

// results holds every value measured, by benchmark name (without the
// -GOMAXPROCS suffix) and unit.
type results map[string]map[string][]float64

// read adds the benchmark lines of r. Lines that are not results (test
// logs, PASS, pkg: headers, broken lines) are skipped: go test interleaves
// them with the results.
func (res results) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, metrics, ok := parseLine(sc.Text())
		if !ok {
			continue
		}
		if res[name] == nil {
			res[name] = map[string][]float64{}
		}
		for unit, v := range metrics {
			res[name][unit] = append(res[name][unit], v)
		}
	}
	return sc.Err()
}

// parseLine parses one result line: "BenchmarkName-2  N  v unit  v unit
// ...". ok is false for anything else.
func parseLine(line string) (name string, metrics map[string]float64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return "", nil, false
	}
	if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
		return "", nil, false
	}
	name = f[0]
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	metrics = map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		metrics[f[i+1]] = v
	}
	return name, metrics, true
}

// median returns the median of benchmark name's unit, and whether the
// input has it.
func (res results) median(name, unit string) (float64, bool) {
	vs := slices.Clone(res[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// get returns the medians of units of benchmark name, and whether the
// input has all of them.
func (res results) get(name string, units ...string) ([]float64, bool) {
	out := make([]float64, len(units))
	for i, u := range units {
		v, ok := res.median(name, u)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}
