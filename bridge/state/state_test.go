package state_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/config"
)

// syncBuffer is a log sink the Store and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestStoreSurvivesRedisRestart: with a real redis-server, a Store works,
// turns every round trip into ErrUnavailable while Redis is killed (one log
// line, not one per request), and works again once Redis is back, which
// comes back empty.
func TestStoreSurvivesRedisRestart(t *testing.T) { statetest.ForEach(t, testStoreSurvivesRedisRestart) }

func testStoreSurvivesRedisRestart(t *testing.T, srv *statetest.Server) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx := t.Context()
	s, err := state.Open(ctx, config.Redis{URL: srv.URL(), KeyPrefix: "t:"}, false, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Healthy() {
		t.Fatalf("a running Redis is not healthy: %+v", s.Health())
	}
	key := s.Key("probe", "1")
	if key != "t:probe:1" {
		t.Errorf("Key = %q, want t:probe:1", key)
	}
	if err := s.Check(s.Redis().Set(ctx, key, "v", 0).Err()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(s.Redis().Get(ctx, "t:missing").Err()); err != nil {
		t.Errorf("a missing key is an answer, not a failure: %v", err)
	}

	srv.Kill()
	for i := range 5 {
		err := s.Check(s.Redis().Get(ctx, key).Err())
		if !errors.Is(err, state.ErrUnavailable) {
			t.Fatalf("round trip %d with Redis killed: err = %v, want ErrUnavailable", i, err)
		}
	}
	if s.Healthy() {
		t.Error("Healthy with Redis killed")
	}
	if h := s.Health(); h.Up || h.Error == "" {
		t.Errorf("Health with Redis killed = %+v", h)
	}
	if n := strings.Count(logs.String(), "Redis is unavailable"); n != 1 {
		t.Errorf("logged the outage %d times, want once:\n%s", n, logs.String())
	}

	srv.Restart()
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(watchCtx, time.Hour)
	deadline := time.Now().Add(30 * time.Second)
	for !s.Healthy() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !s.Healthy() {
		t.Fatalf("Watch did not notice Redis is back: %+v", s.Health())
	}
	if n := strings.Count(logs.String(), "Redis is reachable again"); n != 1 {
		t.Errorf("logged the recovery %d times, want once:\n%s", n, logs.String())
	}
	if err := s.Check(s.Redis().Get(ctx, key).Err()); err != nil {
		t.Errorf("after the restart: %v (a missing key is nil)", err)
	}
	if got, _ := s.Redis().Exists(ctx, key).Result(); got != 0 {
		t.Error("the restarted Redis kept the key: the test's Redis must come back empty")
	}
}

// TestOpenNeverShowsThePassword: a URL go-redis refuses, and a Redis that
// refuses the password, give errors and logs without it.
func TestOpenNeverShowsThePassword(t *testing.T) {
	const pw = "hunter2-redis-secret"
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, err := state.Open(t.Context(), config.Redis{URL: "redis://:" + pw + "@127.0.0.1:1/notadb", KeyPrefix: "t:"}, true, log)
	if err == nil {
		t.Fatal("Open accepted a URL whose db is not a number")
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("the error shows the password: %v", err)
	}
	// A reachable port with nothing listening: the outage is logged with
	// the URL, masked.
	s, err := state.Open(t.Context(), config.Redis{URL: "redis://:" + pw + "@127.0.0.1:1/0", KeyPrefix: "t:"}, true, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Healthy() {
		t.Error("Healthy with nothing listening")
	}
	if strings.Contains(logs.String(), pw) || strings.Contains(s.Health().URL, pw) {
		t.Errorf("the password reached the log or Health:\n%s\n%+v", logs.String(), s.Health())
	}
	if !strings.Contains(logs.String(), "Redis is unavailable") {
		t.Errorf("the outage was not logged:\n%s", logs.String())
	}
}
