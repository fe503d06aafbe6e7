package e2e

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// recordingTB is a testing.TB whose failures and cleanups are recorded
// instead of acted on, so a test can check how a helper fails. Fatal and
// Fatalf end the calling goroutine, as testing.T's do.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func (r *recordingTB) Error(args ...any)                 { r.record(fmt.Sprint(args...)) }
func (r *recordingTB) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }

func (r *recordingTB) Fatal(args ...any) {
	r.record(fmt.Sprint(args...))
	runtime.Goexit()
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// runCleanups runs the recorded cleanups, last registered first.
func (r *recordingTB) runCleanups() {
	r.mu.Lock()
	cleanups := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
}

// TestStartGatewayFailsFastWhenGatewayExits checks that a gateway that
// exits before serving fails the start with its stderr, and that the
// cleanup then returns instead of waiting for an exit it already missed
// (it used to block forever: the start loop had taken the only exit value).
func TestStartGatewayFailsFastWhenGatewayExits(t *testing.T) {
	rec := &recordingTB{TB: t}
	started := make(chan *httpGateway, 1)
	go func() {
		defer close(started)
		// An invalid mode makes serve exit with a validation error before
		// it listens.
		started <- startGateway(rec, testEnv(t, nil), testenv.FreePort(t), "serve", "--mode", "sideways")
	}()
	if g, ok := <-started; ok {
		t.Fatalf("startGateway returned %+v for a gateway that cannot start", g)
	}

	rec.mu.Lock()
	failures := append([]string(nil), rec.failures...)
	rec.mu.Unlock()
	if len(failures) != 1 {
		t.Fatalf("want 1 failure from the start, got %d: %q", len(failures), failures)
	}
	msg := failures[0]
	if !strings.Contains(msg, "exited before serving") {
		t.Errorf("failure does not say the gateway exited: %q", msg)
	}
	_, stderr, _ := strings.Cut(msg, "stderr:\n")
	if !strings.Contains(stderr, "mode") {
		t.Errorf("failure does not carry the gateway's stderr (which names the bad mode): %q", msg)
	}

	// The bound only tells a hang from a slow machine; the fixed cleanup
	// returns at once.
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		rec.runCleanups()
	}()
	select {
	case <-cleaned:
	case <-time.After(2 * time.Minute):
		t.Fatal("the cleanup of a gateway that exited before serving is still waiting after 2 minutes")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.failures) != 1 {
		t.Errorf("the cleanup reported failures for a gateway that was already gone: %q", rec.failures[1:])
	}
}
