package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/config"
)

var errReached = errors.New("limit reached")

func openInternal(t *testing.T, srv *statetest.Server) *Store {
	t.Helper()
	s, err := Open(t.Context(), config.Redis{URL: srv.URL(), KeyPrefix: "tb:"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLimitsSharedAcrossReplicas: two replicas' limiters count one
// caller's calls together; callers are counted apart; a release frees
// one slot however often it is called; the caller's name is not in the
// key.
func TestLimitsSharedAcrossReplicas(t *testing.T) {
	statetest.ForEach(t, testLimitsSharedAcrossReplicas)
}

func testLimitsSharedAcrossReplicas(t *testing.T, srv *statetest.Server) {
	a, b := NewLimits(openInternal(t, srv), 2, errReached), NewLimits(openInternal(t, srv), 2, errReached)
	ctx := t.Context()
	ra, err := a.Acquire(ctx, "subject alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Acquire(ctx, "subject alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "subject alice@example.com"); !errors.Is(err, errReached) {
		t.Fatalf("a third call across two replicas = %v, want the limit", err)
	}
	rbob, err := a.Acquire(ctx, "subject bob")
	if err != nil {
		t.Fatalf("bob refused for alice's calls: %v", err)
	}
	keys, _ := a.st.Redis().Keys(ctx, "tb:limit:*").Result()
	for _, k := range keys {
		if len(k) < 10 || k == "tb:limit:subject alice@example.com" {
			t.Errorf("key %q names the caller", k)
		}
	}
	ra()
	ra()
	r3, err := b.Acquire(ctx, "subject alice@example.com")
	if err != nil {
		t.Fatalf("after a release on the other replica: %v", err)
	}
	if _, err := b.Acquire(ctx, "subject alice@example.com"); !errors.Is(err, errReached) {
		t.Fatalf("a double release freed two slots: %v", err)
	}
	rb()
	r3()
	rbob()
	if n, _ := a.Running(ctx, "subject alice@example.com"); n != 0 {
		t.Errorf("%d slots left after every release", n)
	}
}

// TestLimitsDeadReplicaSlotsExpire: the slots of a replica that died
// mid-call (never released, never extended) come back after the TTL;
// those of a live call are extended and stay.
func TestLimitsDeadReplicaSlotsExpire(t *testing.T) {
	statetest.ForEach(t, testLimitsDeadReplicaSlotsExpire)
}

func testLimitsDeadReplicaSlotsExpire(t *testing.T, srv *statetest.Server) {
	dead := NewLimits(openInternal(t, srv), 1, errReached)
	dead.ttl = 600 * time.Millisecond
	live := NewLimits(openInternal(t, srv), 1, errReached)
	live.ttl = 3 * time.Second // extended every second: slack for a slow machine
	ctx := t.Context()
	if _, err := dead.Acquire(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	dead.st.Close() // killed: no release, no extension
	if _, err := live.Acquire(ctx, "c"); !errors.Is(err, errReached) {
		t.Fatalf("while the dead replica's slot lives: %v, want the limit", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var release func()
	for {
		var err error
		if release, err = live.Acquire(ctx, "c"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead replica's slot never came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// This live call outlasts its TTL: its slot is extended.
	time.Sleep(live.ttl + time.Second)
	if _, err := live.Acquire(ctx, "c"); !errors.Is(err, errReached) {
		t.Errorf("a live call's slot expired: %v", err)
	}
	release()
}

// TestLimitsWhileRedisIsDown: with Redis down each replica counts on its
// own, so calls go on within the limit per replica; back, it counts in
// Redis again.
func TestLimitsWhileRedisIsDown(t *testing.T) { statetest.ForEach(t, testLimitsWhileRedisIsDown) }

func testLimitsWhileRedisIsDown(t *testing.T, srv *statetest.Server) {
	l := NewLimits(openInternal(t, srv), 1, errReached)
	ctx := t.Context()
	srv.Kill()
	r, err := l.Acquire(ctx, "c")
	if err != nil {
		t.Fatalf("with Redis down: %v, want a local slot", err)
	}
	if _, err := l.Acquire(ctx, "c"); !errors.Is(err, errReached) {
		t.Fatalf("a second call with Redis down: %v, want the limit", err)
	}
	r()
	srv.Restart()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for waitCtx.Err() == nil {
		r, err := l.Acquire(ctx, "c")
		if err == nil {
			if n, _ := l.Running(ctx, "c"); n == 1 {
				r()
				return
			}
			r()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("never counted in Redis again after it came back")
}
