package access

import (
	"context"
	"errors"
	"testing"
)

func TestLocalLimiter(t *testing.T) {
	ctx := context.Background()
	l := NewLocalLimiter(2).(*localLimiter)
	r1, err := l.Acquire(ctx, "subject alice")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.Acquire(ctx, "subject alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "subject alice"); !errors.Is(err, ErrLimitReached) {
		t.Fatalf("third call: %v, want ErrLimitReached", err)
	}
	// Another caller has its own slots.
	rb, err := l.Acquire(ctx, "subject bob")
	if err != nil {
		t.Fatalf("bob refused for alice's calls: %v", err)
	}
	// A release called twice frees one slot, not two.
	r1()
	r1()
	r3, err := l.Acquire(ctx, "subject alice")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := l.Acquire(ctx, "subject alice"); !errors.Is(err, ErrLimitReached) {
		t.Fatalf("a double release freed two slots: %v", err)
	}
	r2()
	r3()
	rb()
	if n := len(l.calls); n != 0 {
		t.Errorf("%d callers left in the map after every release, want 0 (it would grow with every caller seen)", n)
	}
}

func TestLocalLimiterOff(t *testing.T) {
	l := NewLocalLimiter(0)
	for range 1000 {
		if _, err := l.Acquire(context.Background(), "x"); err != nil {
			t.Fatalf("limit 0 refused a call: %v", err)
		}
	}
}
