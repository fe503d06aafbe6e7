package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// BenchmarkToolCallOverStdio measures a tool call as a user's agent makes
// it: an MCP client over stdio to the toolbridge binary, which calls a
// stdio upstream, against the same client calling the same upstream
// directly over stdio. The three ways are interleaved per iteration, so
// they see the same machine; it reports each way's p50 and the added
// median in µs and percent, for pass-through (the tool called by name)
// and bridge mode (tool_call).
//
// Two upstreams: the demo-server written in Go (a tool call costs it a
// few µs: the worst case for the ratio) and the npm reference server
// "everything" (Node.js, as most MCP servers are).
//
//	go test ./cmd/toolbridge/e2e -run '^$' -bench ToolCallOverStdio -benchtime 2000x -count 3
func BenchmarkToolCallOverStdio(b *testing.B) {
	b.Run("upstream=go-demo", func(b *testing.B) {
		demo := demoServerBinary(b)
		runOverStdio(b, "add", map[string]any{"a": 2, "b": 3}, demo, "math")
	})
	b.Run("upstream=npm-everything", func(b *testing.B) {
		everything := testenv.NPM(b).Bin(testenv.BinEverything)
		runOverStdio(b, "echo", map[string]any{"message": "hi"}, everything, "stdio")
	})
}

// runOverStdio benchmarks tool with args on the stdio server command args,
// directly and through toolbridge in both modes.
func runOverStdio(b *testing.B, tool string, args map[string]any, command string, cmdArgs ...string) {
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"up": map[string]any{"command": command, "args": cmdArgs},
	}})
	if err != nil {
		b.Fatal(err)
	}
	path := b.TempDir() + "/config.json"
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	direct, _ := stdioClient(b, command, cmdArgs...)
	pass, passPID := stdioClient(b, binary, "serve", "--config", path, "--mode", "off")
	bridged, bridgedPID := stdioClient(b, binary, "serve", "--config", path, "--mode", "on")

	plain := mcp.CallToolRequest{}
	plain.Params.Name, plain.Params.Arguments = tool, args
	meta := mcp.CallToolRequest{}
	meta.Params.Name = "tool_call"
	meta.Params.Arguments = map[string]any{"tool_name": "up::" + tool, "tool_args": args}
	ctx := context.Background()
	timed := func(c *client.Client, req mcp.CallToolRequest) time.Duration {
		start := time.Now()
		res, err := c.CallTool(ctx, req)
		took := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", req.Params.Name, err, res)
		}
		return took
	}
	for range 50 { // warm-up
		timed(direct, plain)
		timed(pass, plain)
		timed(bridged, meta)
	}
	var d, p, t []time.Duration
	passCPU, bridgedCPU := processCPU(passPID), processCPU(bridgedPID)
	for b.Loop() {
		d = append(d, timed(direct, plain))
		p = append(p, timed(pass, plain))
		t = append(t, timed(bridged, meta))
	}
	// CPU is read in 10 ms ticks: meaningful over a thousand calls or more.
	perCall := func(cpu time.Duration) float64 { return float64(cpu.Nanoseconds()) / 1000 / float64(len(p)) }
	b.ReportMetric(perCall(processCPU(passPID)-passCPU), "pass-gateway-cpu-µs/call")
	b.ReportMetric(perCall(processCPU(bridgedPID)-bridgedCPU), "toolcall-gateway-cpu-µs/call")
	p50 := func(s []time.Duration) time.Duration {
		s = slices.Clone(s)
		slices.Sort(s)
		return s[len(s)/2]
	}
	dm, pm, tm := p50(d), p50(p), p50(t)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(dm), "direct-p50-µs")
	b.ReportMetric(us(pm), "pass-p50-µs")
	b.ReportMetric(us(tm), "toolcall-p50-µs")
	b.ReportMetric(us(pm-dm), "pass-added-µs")
	b.ReportMetric(100*float64(pm-dm)/float64(dm), "pass-added-%")
	b.ReportMetric(us(tm-dm), "toolcall-added-µs")
	b.ReportMetric(100*float64(tm-dm)/float64(dm), "toolcall-added-%")
}

// stdioClient starts command as a stdio MCP server with an initialized
// client on it, and returns the client and the process id; both stop at
// cleanup.
func stdioClient(b *testing.B, command string, args ...string) (*client.Client, int) {
	b.Helper()
	var cmd *exec.Cmd
	tr := transport.NewStdioWithOptions(command, nil, args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd = exec.Command(command, args...)
			cmd.Env = os.Environ()
			return cmd, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		b.Fatalf("starting %s: %v", command, err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatalf("initializing %s: %v", command, err)
	}
	return c, cmd.Process.Pid
}
