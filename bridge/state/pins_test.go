package state_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/config"
)

var pinPolicy = config.Trust{Mode: config.TrustPin, NewServers: config.NewServersTrust}

func defs(desc string) []trust.Definition {
	return []trust.Definition{
		{Name: "create_issue", Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "list_issues", Description: "List issues", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
}

func noApprove(string) string { return "approve it" }

// watch runs p.Watch and counts the changes it reports.
func watch(t *testing.T, p *state.Pins) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Watch(ctx, func() { n.Add(1) }) }()
	t.Cleanup(func() { cancel(); <-done })
	return &n
}

// waitFor waits, within a bound far above what the mechanism needs, until
// cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 30s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPinsSharedBetweenStores: two replicas' trust stores on one Redis
// pin once, see each other's approvals, and never undo a pin the other
// made first; the keys are the documented ones.
func TestPinsSharedBetweenStores(t *testing.T) { statetest.ForEach(t, testPinsSharedBetweenStores) }

func testPinsSharedBetweenStores(t *testing.T, srv *statetest.Server) {
	s1, s2 := open(t, srv), open(t, srv)
	a, b := trust.NewSharedStore(state.NewPins(s1)), trust.NewSharedStore(state.NewPins(s2))
	now := time.Now()
	r, err := a.Review(pinPolicy, "repo", defs("Create an issue"), now, noApprove)
	if err != nil || len(r.NewPins) != 2 {
		t.Fatalf("first review = %+v, %v; want 2 first-use pins", r.NewPins, err)
	}
	// Replica b sees another definition: it is held against a's pin,
	// and b's review does not replace that pin.
	r, err = b.Review(pinPolicy, "repo", defs("Create an issue, changed"), now, noApprove)
	if err != nil || !r.Verdicts[0].Held || len(r.NewPins) != 0 {
		t.Fatalf("b's review of the changed tool = %+v, %v; want it held", r.Verdicts[0], err)
	}
	if !strings.Contains(r.Verdicts[0].Reason, "description changed") {
		t.Errorf("reason %q does not name the changed field", r.Verdicts[0].Reason)
	}
	if err := b.Approve("repo", defs("Create an issue, changed")[:1], now); err != nil {
		t.Fatal(err)
	}
	r, err = a.Review(pinPolicy, "repo", defs("Create an issue, changed"), now, noApprove)
	if err != nil || r.Verdicts[0].Held || !r.Verdicts[0].Pin.Approved {
		t.Fatalf("a's review after b approved = %+v, %v", r.Verdicts[0], err)
	}
	ctx := t.Context()
	if n, _ := s1.Redis().HLen(ctx, "tb:pins:repo").Result(); n != 2 {
		t.Errorf("tb:pins:repo holds %d pins, want 2", n)
	}
	if v, _ := s1.Redis().HGet(ctx, "tb:pinver", "repo").Result(); v == "" {
		t.Error("no version in tb:pinver for repo")
	}
	if servers, err := a.Servers(); err != nil || len(servers) != 1 || servers[0] != "repo" {
		t.Errorf("Servers = %v, %v", servers, err)
	}
	removed, err := a.Forget("repo")
	if err != nil || len(removed) != 2 {
		t.Fatalf("Forget = %v, %v", removed, err)
	}
	if n, _ := s1.Redis().Exists(ctx, "tb:pins:repo").Result(); n != 0 {
		t.Error("the pins key is left after forgetting every pin")
	}
	if servers, _ := b.Servers(); len(servers) != 0 {
		t.Errorf("servers after Forget = %v", servers)
	}
}

// TestPinsWatchTellsEveryChange: the watch reports a change made through
// a store at once (pub/sub), a version written without a message (a lost
// message) by polling, a change made while its subscription was cut once
// it is back, and Redis restarting empty.
func TestPinsWatchTellsEveryChange(t *testing.T) { statetest.ForEach(t, testPinsWatchTellsEveryChange) }

func testPinsWatchTellsEveryChange(t *testing.T, srv *statetest.Server) {
	s1, s2 := open(t, srv), open(t, srv)
	p1 := state.NewPins(s1)
	n := watch(t, p1)
	// Its first read reports a change (see the next test).
	waitFor(t, "the first read reported", func() bool { return n.Load() >= 1 })
	time.Sleep(100 * time.Millisecond) // let it subscribe (a change before is seen by polling anyway)
	before := n.Load()
	op := trust.NewSharedStore(state.NewPins(s2))
	if err := op.Approve("repo", defs("x")[:1], time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the approval reported", func() bool { return n.Load() > before })

	// A version written with no message, as when the message was lost.
	before = n.Load()
	if err := s2.Redis().HSet(t.Context(), "tb:pinver", "repo", "other").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the silent change found by polling", func() bool { return n.Load() > before })

	// The subscription is cut, and a change is published while it is:
	// the message is lost, the re-subscription reads the versions.
	before = n.Load()
	if err := s2.Redis().Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if err := op.Approve("repo", defs("y")[:1], time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the change during the cut reported", func() bool { return n.Load() > before })

	// Redis restarts empty: every version is gone, which is a change.
	before = n.Load()
	srv.Kill()
	srv.Restart()
	waitFor(t, "the empty restart reported", func() bool { return n.Load() > before })
}

// TestPinsFailClosedWhileRedisIsDown: with Redis down a review uses the
// pins it last read: an unchanged tool stays trusted, a changed one is
// held, a new one is held rather than pinned; a server never read has
// its pins as an error. Back empty, the rules apply as on a first start.
func TestPinsFailClosedWhileRedisIsDown(t *testing.T) {
	statetest.ForEach(t, testPinsFailClosedWhileRedisIsDown)
}

func testPinsFailClosedWhileRedisIsDown(t *testing.T, srv *statetest.Server) {
	s := trust.NewSharedStore(state.NewPins(open(t, srv)))
	now := time.Now()
	if _, err := s.Review(pinPolicy, "repo", defs("Create an issue"), now, noApprove); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	offered := append(defs("Create an issue, changed"), trust.Definition{Name: "close_issue", Description: "Close an issue"})
	r, err := s.Review(pinPolicy, "repo", offered, now, noApprove)
	if err != nil {
		t.Fatalf("review with Redis down: %v", err)
	}
	byName := map[string]trust.Verdict{}
	for _, v := range r.Verdicts {
		byName[v.Name] = v
	}
	if v := byName["list_issues"]; v.Held || v.State != trust.StatePinned {
		t.Errorf("unchanged tool with Redis down = %+v, want it trusted", v)
	}
	if v := byName["create_issue"]; !v.Held || !strings.Contains(v.Reason, "description changed") {
		t.Errorf("changed tool with Redis down = %+v, want it held", v)
	}
	if v := byName["close_issue"]; !v.Held || v.FirstUse || !strings.Contains(v.Reason, "cannot be read") {
		t.Errorf("new tool with Redis down = %+v, want it held, not pinned", v)
	}
	if len(r.NewPins) != 0 {
		t.Errorf("pins to save with Redis down: %v", r.NewPins)
	}
	if !s.Unread("repo") {
		t.Error("Unread is false after a review that could not read the pins")
	}
	if _, err := s.Review(pinPolicy, "other", defs("x"), now, noApprove); err == nil {
		t.Error("a server never read, with Redis down, reviewed without error: its tools would be trusted blindly")
	}

	srv.Restart()
	quarantine := config.Trust{Mode: config.TrustPin, NewServers: config.NewServersQuarantine}
	waitFor(t, "a review once Redis is back", func() bool {
		r, err = s.Review(quarantine, "repo", offered, now, noApprove)
		return err == nil && !s.Unread("repo")
	})
	for _, v := range r.Verdicts {
		if !v.Held || !strings.Contains(v.Reason, "new_servers is quarantine") {
			t.Errorf("after an empty restart under new_servers: quarantine, %s = %+v, want it held as new", v.Name, v)
		}
	}
}

// TestPinsRefuseForeignRecords: a pin someone else wrote into Redis that
// does not decode, or pins another tool than its field, is an error that
// names the key; the review of that server fails (its tools are held),
// and nothing is overwritten.
func TestPinsRefuseForeignRecords(t *testing.T) { statetest.ForEach(t, testPinsRefuseForeignRecords) }

func testPinsRefuseForeignRecords(t *testing.T, srv *statetest.Server) {
	st := open(t, srv)
	s := trust.NewSharedStore(state.NewPins(st))
	ctx := t.Context()
	good := trust.NewPin(defs("x")[1], time.Now(), true)
	moved, _ := json.Marshal(good) // list_issues's pin
	for name, raw := range map[string]string{
		"junk":   "{not json",
		"moved":  string(moved),
		"nohash": `{"hash":"md5:1","pinned_at":"2026-01-01T00:00:00Z","definition":{"name":"create_issue"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			st.Redis().Del(ctx, "tb:pins:repo")
			st.Redis().HSet(ctx, "tb:pins:repo", "create_issue", raw)
			st.Redis().HSet(ctx, "tb:pinver", "repo", "planted-"+name)
			_, err := s.Review(pinPolicy, "repo", defs("x"), time.Now(), noApprove)
			if err == nil || !strings.Contains(err.Error(), "tb:pins:repo") {
				t.Fatalf("review over a planted pin = %v, want an error naming the key", err)
			}
			if got, _ := st.Redis().HGet(ctx, "tb:pins:repo", "create_issue").Result(); got != raw {
				t.Errorf("the planted pin was overwritten with %q", got)
			}
		})
	}
}

// TestPinsWatchReportsWhatChangedBeforeItStarted: the gateway reads the
// pins before its watch's first read, so a change made in between must be
// reported by that first read. It was taken as the starting point, and a
// busy replica held a tool approved just after it started until the next
// change (TestSharedApprovalReleasesOnEveryReplica failed under load).
func TestPinsWatchReportsWhatChangedBeforeItStarted(t *testing.T) {
	statetest.ForEach(t, testPinsWatchReportsWhatChangedBeforeItStarted)
}

func testPinsWatchReportsWhatChangedBeforeItStarted(t *testing.T, srv *statetest.Server) {
	s1, s2 := open(t, srv), open(t, srv)
	op := trust.NewSharedStore(state.NewPins(s2))
	if err := op.Approve("repo", defs("x")[:1], time.Now()); err != nil {
		t.Fatal(err)
	}
	n := watch(t, state.NewPins(s1))
	waitFor(t, "the change before the watch reported", func() bool { return n.Load() >= 1 })
}
