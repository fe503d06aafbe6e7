package state_test

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
)

// TestRedisDownLogsNothingPerRequest: while Redis is down, requests write
// nothing to the process's stderr, where go-redis wrote a line per failed
// dial (one per request); the Store logs the outage once, through its
// logger. go-redis writes to file descriptor 2 directly, so the test
// points that descriptor at a pipe for the duration.
func TestRedisDownLogsNothingPerRequest(t *testing.T) {
	srv := statetest.Start(t)
	a, _, _ := openSessions(t, srv, time.Minute, 0)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(w.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	restore := func() { _ = syscall.Dup3(saved, 2, 0) }
	defer restore()
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	srv.Kill()
	for range 5 {
		if _, err := a.Touch(t.Context(), "x", "p"); !errors.Is(err, state.ErrUnavailable) {
			t.Errorf("Touch with Redis down = %v", err)
		}
	}
	restore()
	w.Close()
	if out := <-got; out != "" {
		t.Errorf("requests with Redis down wrote to stderr:\n%s", out)
	}
}
