package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/config"
)

// openSessions is a session table on srv, a fresh real server, as two replicas
// see it: two Stores on the same server.
func openSessions(t *testing.T, srv *statetest.Server, idle time.Duration, max int) (a, b *state.Sessions, logs *syncBuffer) {
	t.Helper()
	logs = &syncBuffer{}
	open := func() *state.Store {
		s, err := state.Open(t.Context(), config.Redis{URL: srv.URL(), KeyPrefix: "t:"}, false, slog.New(slog.NewTextHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return open().Sessions(idle, max), open().Sessions(idle, max), logs
}

// TestSharedSessionsAcrossStores: a session created through one Store is
// live through another, only for its principal; fields set on one are read
// on the other; End on one ends it on both.
func TestSharedSessionsAcrossStores(t *testing.T) {
	statetest.ForEach(t, testSharedSessionsAcrossStores)
}

func testSharedSessionsAcrossStores(t *testing.T, srv *statetest.Server) {
	a, b, _ := openSessions(t, srv, time.Minute, 0)
	ctx := t.Context()
	const id = "mcp-session-ABCDEF"
	if _, err := a.Create(ctx, id, "credential:alice"); err != nil {
		t.Fatal(err)
	}
	fields, err := b.Touch(ctx, id, "credential:alice")
	if err != nil {
		t.Fatalf("the other replica refuses the session: %v", err)
	}
	if len(fields) != 0 {
		t.Errorf("a new session has fields %v (the principal must not be one)", fields)
	}
	for name, try := range map[string]struct{ id, principal string }{
		"another principal": {id, "credential:bob"},
		"no principal":      {id, ""},
		"a forged id":       {"mcp-session-FORGED", "credential:alice"},
	} {
		if _, err := b.Touch(ctx, try.id, try.principal); !errors.Is(err, state.ErrNoSession) {
			t.Errorf("%s: Touch = %v, want ErrNoSession", name, err)
		}
	}
	if err := b.Set(ctx, id, map[string]string{"level": "debug", "reveal": `["a::b"]`}); err != nil {
		t.Fatal(err)
	}
	fields, err = a.Touch(ctx, id, "credential:alice")
	if err != nil || fields["level"] != "debug" || fields["reveal"] != `["a::b"]` {
		t.Errorf("fields set on B, read on A: %v, %v", fields, err)
	}
	if err := b.Set(ctx, id, map[string]string{"p": "credential:bob"}); err == nil {
		t.Error("Set let a caller overwrite the principal")
	}
	if n, err := a.Len(ctx); err != nil || n != 1 {
		t.Errorf("Len = %d, %v; want 1", n, err)
	}
	if err := b.End(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Touch(ctx, id, "credential:alice"); !errors.Is(err, state.ErrNoSession) {
		t.Errorf("after End on B, Touch on A = %v, want ErrNoSession", err)
	}
	// A field written after the end must not bring the session back.
	if err := a.Set(ctx, id, map[string]string{"level": "info"}); !errors.Is(err, state.ErrNoSession) {
		t.Errorf("Set on an ended session = %v, want ErrNoSession", err)
	}
	if ok, err := a.Exists(ctx, id); err != nil || ok {
		t.Errorf("Exists after End = %v, %v", ok, err)
	}
	if n, err := a.Len(ctx); err != nil || n != 0 {
		t.Errorf("Len after End = %d, %v; want 0", n, err)
	}
}

// TestSharedSessionIDsAreNotStored: Redis holds a hash of each session id,
// never the id, so a copy of its data opens no session.
func TestSharedSessionIDsAreNotStored(t *testing.T) {
	statetest.ForEach(t, testSharedSessionIDsAreNotStored)
}

func testSharedSessionIDsAreNotStored(t *testing.T, srv *statetest.Server) {
	st, err := state.Open(t.Context(), config.Redis{URL: srv.URL(), KeyPrefix: "t:"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	const id = "mcp-session-SECRETVALUE"
	if _, err := st.Sessions(time.Minute, 10).Create(ctx, id, "credential:alice"); err != nil {
		t.Fatal(err)
	}
	keys, err := st.Redis().Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	for _, k := range keys {
		dump.WriteString(k + "\n")
		switch st.Redis().Type(ctx, k).Val() {
		case "hash":
			for f, v := range st.Redis().HGetAll(ctx, k).Val() {
				dump.WriteString(f + "=" + v + "\n")
			}
		case "zset":
			for _, m := range st.Redis().ZRange(ctx, k, 0, -1).Val() {
				dump.WriteString(m + "\n")
			}
		}
	}
	if strings.Contains(dump.String(), "SECRETVALUE") {
		t.Errorf("Redis holds the session id:\n%s", dump.String())
	}
	if !strings.Contains(dump.String(), "t:session:") {
		t.Errorf("no key under the prefix:\n%s", dump.String())
	}
}

// TestSharedSessionsIdleExpiry: a session expires after the idle timeout
// without use (Redis's TTL), and each use starts the timeout again.
func TestSharedSessionsIdleExpiry(t *testing.T) { statetest.ForEach(t, testSharedSessionsIdleExpiry) }

func testSharedSessionsIdleExpiry(t *testing.T, srv *statetest.Server) {
	const idle = 300 * time.Millisecond
	a, b, _ := openSessions(t, srv, idle, 0)
	ctx := t.Context()
	if _, err := a.Create(ctx, "kept", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, "dropped", "p"); err != nil {
		t.Fatal(err)
	}
	// Use "kept" for three idle timeouts, more often than the timeout.
	for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 6) {
		if _, err := b.Touch(ctx, "kept", "p"); err != nil {
			t.Fatalf("a session in use expired: %v", err)
		}
	}
	// "dropped" had no use for three timeouts: Redis has expired it (its
	// TTL is exact to a millisecond; wait a little more in case the
	// machine is slow to run the expiry).
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := a.Touch(ctx, "dropped", "p")
		if errors.Is(err, state.ErrNoSession) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an idle session did not expire: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSharedSessionsMax: with max sessions live, creating one more evicts
// the least recently used, whichever replica used it.
func TestSharedSessionsMax(t *testing.T) { statetest.ForEach(t, testSharedSessionsMax) }

func testSharedSessionsMax(t *testing.T, srv *statetest.Server) {
	a, b, _ := openSessions(t, srv, time.Hour, 3)
	ctx := t.Context()
	for _, id := range []string{"s1", "s2", "s3"} {
		if _, err := a.Create(ctx, id, "p"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // distinct last-use times (Redis's ms clock)
	}
	// s1 is used on B: s2 is now the least recently used.
	if _, err := b.Touch(ctx, "s1", "p"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	n, err := b.Create(ctx, "s4", "p")
	if err != nil || n != 1 {
		t.Fatalf("Create over max: evicted %d, %v; want 1", n, err)
	}
	for id, live := range map[string]bool{"s1": true, "s2": false, "s3": true, "s4": true} {
		_, err := a.Touch(ctx, id, "p")
		if got := err == nil; got != live {
			t.Errorf("%s live = %v (%v), want %v", id, got, err, live)
		}
	}
	if n, err := a.Len(ctx); err != nil || n != 3 {
		t.Errorf("Len = %d, %v; want 3", n, err)
	}
}

// TestSharedSessionsRedisDown: with Redis killed, every operation fails
// promptly with ErrUnavailable (logged once, not per call); once Redis is
// back, empty, the old session is unknown and a new one works.
func TestSharedSessionsRedisDown(t *testing.T) { statetest.ForEach(t, testSharedSessionsRedisDown) }

func testSharedSessionsRedisDown(t *testing.T, srv *statetest.Server) {
	a, _, logs := openSessions(t, srv, time.Minute, 0)
	ctx := t.Context()
	if _, err := a.Create(ctx, "old", "p"); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	for range 5 {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := a.Touch(callCtx, "old", "p")
		waited := callCtx.Err() != nil
		cancel()
		if !errors.Is(err, state.ErrUnavailable) {
			t.Fatalf("Touch with Redis down = %v, want ErrUnavailable", err)
		}
		if waited {
			t.Fatal("Touch with Redis down waited for the caller's deadline instead of failing by itself")
		}
	}
	if _, err := a.Create(ctx, "new", "p"); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Create with Redis down = %v", err)
	}
	if err := a.Set(ctx, "old", map[string]string{"x": "y"}); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Set with Redis down = %v", err)
	}
	if n := strings.Count(logs.String(), "Redis is unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}
	srv.Restart()
	if _, err := a.Touch(ctx, "old", "p"); !errors.Is(err, state.ErrNoSession) {
		t.Errorf("after Redis came back empty, the old session = %v, want ErrNoSession", err)
	}
	if _, err := a.Create(ctx, "new", "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Touch(ctx, "new", "p"); err != nil {
		t.Errorf("a new session after the restart: %v", err)
	}
	if n := strings.Count(logs.String(), "Redis is reachable again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestSharedSessionListAdds: values added to a session's list through two
// Stores at once are all kept (a read and a whole-list write would let the
// later writer drop the other's), without duplicates, trimmed to the
// newest limit; a broken stored list is replaced, an ended session refused.
func TestSharedSessionListAdds(t *testing.T) { statetest.ForEach(t, testSharedSessionListAdds) }

func testSharedSessionListAdds(t *testing.T, srv *statetest.Server) {
	a, b, _ := openSessions(t, srv, time.Minute, 0)
	ctx := t.Context()
	const id = "mcp-session-LIST"
	if _, err := a.Create(ctx, id, "credential:alice"); err != nil {
		t.Fatal(err)
	}
	const each = 50
	errs := make(chan error, 2*each)
	for i := range each {
		for _, s := range []*state.Sessions{a, b} {
			go func() {
				_, _, err := s.AddToList(ctx, id, "reveal", 0, []string{fmt.Sprintf("s::t%d-%p", i, s), "s::shared"})
				errs <- err
			}()
		}
	}
	for range 2 * each {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	fields, err := b.Touch(ctx, id, "credential:alice")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal([]byte(fields["reveal"]), &got); err != nil {
		t.Fatalf("the stored list %q does not decode: %v", fields["reveal"], err)
	}
	if len(got) != 2*each+1 {
		t.Fatalf("%d values kept of %d added at once through two replicas", len(got), 2*each+1)
	}

	list, changed, err := a.AddToList(ctx, id, "reveal", 3, []string{"s::shared", "s::new"})
	if err != nil || !changed {
		t.Fatalf("AddToList = %v, %v", changed, err)
	}
	if want := []string{got[len(got)-2], got[len(got)-1], "s::new"}; !slices.Equal(list, want) {
		t.Errorf("trimmed list = %q, want %q", list, want)
	}
	if _, changed, err := a.AddToList(ctx, id, "reveal", 3, []string{"s::new"}); err != nil || changed {
		t.Errorf("adding a value already there: changed %v, %v", changed, err)
	}

	for _, broken := range []string{`{"not":"a list"}`, `not json`, `[1, 2, "s::x"]`, ``} {
		if err := a.Set(ctx, id, map[string]string{"reveal": broken}); err != nil {
			t.Fatal(err)
		}
		list, _, err := a.AddToList(ctx, id, "reveal", 0, []string{"s::y"})
		if err != nil {
			t.Fatalf("over %q: %v", broken, err)
		}
		if list[len(list)-1] != "s::y" || slices.Contains(list, "") {
			t.Errorf("over %q: %q", broken, list)
		}
	}
	if _, _, err := a.AddToList(ctx, id, "p", 0, []string{"x"}); err == nil {
		t.Error("AddToList wrote the principal field")
	}
	if err := b.End(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.AddToList(ctx, id, "reveal", 0, []string{"s::z"}); !errors.Is(err, state.ErrNoSession) {
		t.Errorf("AddToList on an ended session = %v, want ErrNoSession", err)
	}
}
