package upstream

import (
	"context"
	"testing"
	"time"
)

func TestActivityWaitsForWorkInProgress(t *testing.T) {
	var a Activity
	if err := a.Wait(context.Background()); err != nil {
		t.Fatalf("wait with nothing running: %v", err)
	}
	a.Begin()
	a.Begin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.Wait(ctx); err == nil {
		t.Fatal("wait returned nil with two pieces of work running")
	}
	done := make(chan error, 2)
	for range 2 { // two waiters share one channel
		go func() { done <- a.Wait(context.Background()) }()
	}
	a.End()
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) with one piece of work still running", err)
	case <-time.After(10 * time.Millisecond):
	}
	a.End()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("wait after the work ended: %v", err)
		}
	}
	// Idle again, then busy again: a new wait waits for the new work.
	a.Begin()
	waited := make(chan error, 1)
	go func() { waited <- a.Wait(context.Background()) }()
	select {
	case err := <-waited:
		t.Fatalf("wait returned (%v) while the new work runs", err)
	case <-time.After(10 * time.Millisecond):
	}
	a.End()
	if err := <-waited; err != nil {
		t.Errorf("wait after the new work ended: %v", err)
	}
	if n := a.Running(); n != 0 {
		t.Errorf("running() = %d, want 0", n)
	}
}

func BenchmarkActivityBeginEnd(b *testing.B) {
	var a Activity
	b.ReportAllocs()
	for b.Loop() {
		a.Begin()
		a.End()
	}
}
