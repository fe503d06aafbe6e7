package bridge

import (
	"context"
	"testing"
	"time"
)

func TestActivityWaitsForWorkInProgress(t *testing.T) {
	var a activity
	if err := a.wait(context.Background()); err != nil {
		t.Fatalf("wait with nothing running: %v", err)
	}
	a.begin()
	a.begin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.wait(ctx); err == nil {
		t.Fatal("wait returned nil with two pieces of work running")
	}
	done := make(chan error, 2)
	for range 2 { // two waiters share one channel
		go func() { done <- a.wait(context.Background()) }()
	}
	a.end()
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) with one piece of work still running", err)
	case <-time.After(10 * time.Millisecond):
	}
	a.end()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("wait after the work ended: %v", err)
		}
	}
	// Idle again, then busy again: a new wait waits for the new work.
	a.begin()
	waited := make(chan error, 1)
	go func() { waited <- a.wait(context.Background()) }()
	select {
	case err := <-waited:
		t.Fatalf("wait returned (%v) while the new work runs", err)
	case <-time.After(10 * time.Millisecond):
	}
	a.end()
	if err := <-waited; err != nil {
		t.Errorf("wait after the new work ended: %v", err)
	}
	if n := a.running(); n != 0 {
		t.Errorf("running() = %d, want 0", n)
	}
}

func BenchmarkActivityBeginEnd(b *testing.B) {
	var a activity
	b.ReportAllocs()
	for b.Loop() {
		a.begin()
		a.end()
	}
}
