package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// peakRSS is a process's peak resident memory (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	return procStatusBytes(t, pid, "VmHWM")
}

// TestStdioBoundsOneMessage writes a 60 MB line to toolbridge's stdin: it
// gets a JSON-RPC error naming serve.max_body_bytes, with its id; the
// session goes on; the gateway's memory grows by far less than the line;
// and closing stdin then ends the gateway.
func TestStdioBoundsOneMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", demoConfig(t, "", ""), "--mode", "off")
	p.initialize(ctx)
	before := peakRSS(t, p.pid())

	const size = 60 << 20
	head := `{"jsonrpc":"2.0","id":"huge-1","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2,"pad":"`
	line := head + strings.Repeat("x", size-len(head)-4) + `"}}}`
	p.send(line)
	m := p.response(ctx, `"huge-1"`)
	if m.Error == nil || !strings.Contains(m.Error.Message, "max_body_bytes") {
		t.Fatalf("the 60 MB line got %+v, want a JSON-RPC error naming serve.max_body_bytes", m)
	}
	// A line without an id before the cut is answered too, with id null.
	p.send(`{"params":{"pad":"` + strings.Repeat("y", 5<<20) + `"},"id":"late","jsonrpc":"2.0","method":"ping"}`)
	if m := p.response(ctx, "null"); m.Error == nil || !strings.Contains(m.Error.Message, "max_body_bytes") {
		t.Fatalf("a long line with its id late got %+v", m)
	}

	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 1, "b": 2}); isErr || text != "3" {
		t.Fatalf("add after the huge line: isError=%v %q", isErr, text)
	}
	after := peakRSS(t, p.pid())
	t.Logf("peak RSS %d MB before the line, %d MB after", before>>20, after>>20)
	if after-before > size/2 {
		t.Errorf("peak RSS grew by %d MB for a %d MB line: the line was held", (after-before)>>20, size>>20)
	}

	p.closeStdin()
	if !p.waitExit(exitWait) {
		t.Fatalf("toolbridge did not exit after stdin closed\nstderr:\n%s", p.stderrText())
	}
}
