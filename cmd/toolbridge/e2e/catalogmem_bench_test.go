package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// catalogServers and catalogToolsEach make the 10,000 tools of the
// catalog budget: 25 upstream processes of 400 real tools each.
const catalogServers, catalogToolsEach = 25, 400

// BenchmarkCatalogMemoryProcess measures what a catalog of 10,000 tools costs
// the process a user runs: toolbridge serving streamable HTTP in bridge
// mode with a state directory, its 25 upstreams each a process of its own
// (hostileserver's catalog mode: the 99 tools of the 13 reference servers,
// bridge/testdata/reference-servers, copied round to 400 each). The
// in-process BenchmarkCatalogMemory of ./bridge cannot give this figure
// alone: its upstreams live in the same process and hold their own copy
// of the tools.
//
// One start before the timed ones writes the pins, as a first start does;
// each timed start is then a day-to-day start on that state directory.
// Each reports the gateway's RSS once all 25 servers are listed and a
// tool_search has been answered (rss-bytes), and the peak RSS of the
// whole start (peak-rss-bytes, VmHWM); first-peak-rss-bytes is the peak
// of the start that wrote the pins.
func BenchmarkCatalogMemoryProcess(b *testing.B) {
	catalog, err := filepath.Abs("../../../bridge/testdata/reference-servers/catalog.json")
	if err != nil {
		b.Fatal(err)
	}
	server := hostileServer.Path(b)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "state_dir: %s\nmcpServers:\n", yamlString(b.TempDir()))
	names := make([]string, catalogServers)
	for i := range names {
		names[i] = fmt.Sprintf("s%02d", i)
		fmt.Fprintf(&cfg, "  %s:\n    command: %s\n    args: [catalog, %s, %d, %d]\n",
			names[i], yamlString(server), yamlString(catalog), i*catalogToolsEach, catalogToolsEach)
	}
	path := writeConfig(b, "toolbridge.yaml", cfg.String())

	start := func() (rss, peak int64) {
		h := startHTTPProc(b, "--config", path, "--mode", "on")
		_, r := waitReadyz(b, h.base, names...)
		total := 0
		for _, s := range r.Servers {
			if !s.Connected || s.Tools != catalogToolsEach {
				b.Fatalf("server %s: connected %v with %d tools (%s), want %d\nstderr:\n%s", s.Name, s.Connected, s.Tools, s.Error, catalogToolsEach, h.stderr.String())
			}
			total += s.Tools
		}
		if total != catalogServers*catalogToolsEach {
			b.Fatalf("%d tools listed, want %d", total, catalogServers*catalogToolsEach)
		}
		c := httpMCPClient(b, h.base+"/mcp")
		req := mcp.CallToolRequest{}
		req.Params.Name = "tool_search"
		req.Params.Arguments = map[string]any{"query": "create or update a file in a repository"}
		res, err := c.CallTool(b.Context(), req)
		if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.Content), "::create_or_update_file") {
			b.Fatalf("tool_search found no create_or_update_file: %v %+v", err, res)
		}
		_ = c.Close()
		pid := h.cmd.Process.Pid
		rss, peak = procStatusBytes(b, pid, "VmRSS"), procStatusBytes(b, pid, "VmHWM")
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		select {
		case <-h.exited:
		case <-time.After(time.Minute):
			b.Fatalf("toolbridge did not stop within a minute of SIGTERM\nstderr:\n%s", h.stderr.String())
		}
		return rss, peak
	}

	_, firstPeak := start()
	var rss, peak []int64
	for b.Loop() {
		r, p := start()
		rss, peak = append(rss, r), append(peak, p)
	}
	median := func(v []int64) float64 { v = slices.Clone(v); slices.Sort(v); return float64(v[len(v)/2]) }
	b.ReportMetric(median(rss), "rss-bytes")
	b.ReportMetric(median(peak), "peak-rss-bytes")
	b.ReportMetric(float64(firstPeak), "first-peak-rss-bytes")
}

// procStatusBytes reads a memory field (VmRSS, VmHWM) of /proc/PID/status.
func procStatusBytes(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				tb.Fatalf("parsing %q: %v", line, err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
