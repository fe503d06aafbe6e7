package upstream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/toolbridge/toolbridge/config"
)

type ctxKey struct{}

// TestRelayLatestIsNewestInFlight checks the relay's calls in flight on
// each upstream, which route a server's sampling, elicitation, roots and
// log messages: latest is always the newest call still running on that
// upstream, whatever order calls end in, and other upstreams' calls never
// count.
func TestRelayLatestIsNewestInFlight(t *testing.T) {
	r := NewRelay(nil, nil)
	a, b := &Conn{relay: r}, &Conn{relay: r}
	begin := func(u *Conn, n int) *ActiveCall {
		return r.Begin(context.WithValue(context.Background(), ctxKey{}, n), u, nil)
	}
	latest := func(u *Conn) int {
		ctx, ok := r.latest(u)
		if !ok {
			return -1
		}
		return ctx.Value(ctxKey{}).(int)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// A model of the calls in flight on a, oldest first.
	var model []int
	calls := map[int]*ActiveCall{}
	other := begin(b, 1000)
	for step := range 2000 {
		if len(model) == 0 || rng.IntN(3) > 0 && len(model) < 20 {
			calls[step] = begin(a, step)
			model = append(model, step)
		} else {
			i := rng.IntN(len(model))
			calls[model[i]].End()
			if step%7 == 0 {
				calls[model[i]].End() // a second End changes nothing
			}
			model = append(model[:i:i], model[i+1:]...)
		}
		want := -1
		if len(model) > 0 {
			want = model[len(model)-1]
		}
		if got := latest(a); got != want {
			t.Fatalf("step %d: latest = %d, want %d (in flight %v)", step, got, want, model)
		}
		if got := latest(b); got != 1000 {
			t.Fatalf("step %d: the other upstream's latest = %d, want 1000", step, got)
		}
	}
	for _, n := range model {
		calls[n].End()
	}
	other.End()
	if _, ok := r.latest(a); ok {
		t.Fatal("a call is still in flight on a after every call ended")
	}
	if _, ok := r.latest(b); ok {
		t.Fatal("a call is still in flight on b after every call ended")
	}
}

// TestRelayProgressRoutesEnd checks that a call's progress token routes
// to its client while it runs and is forgotten when it ends, with calls
// beginning and ending concurrently (run with -race).
func TestRelayProgressRoutesEnd(t *testing.T) {
	r := NewRelay(nil, nil)
	u := &Conn{relay: r}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			for j := range 100 {
				c := r.Begin(context.Background(), u, fmt.Sprint(i, "-", j))
				r.mu.Lock()
				route, ok := r.progress[c.UpstreamToken()]
				r.mu.Unlock()
				if !ok || route.token != fmt.Sprint(i, "-", j) {
					t.Errorf("token %q routes to %v (%v)", c.UpstreamToken(), route.token, ok)
				}
				c.End()
			}
		})
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.progress) != 0 || u.calls.oldest != nil || u.calls.newest != nil {
		t.Fatalf("after every call ended: %d progress routes, calls in flight %v/%v", len(r.progress), u.calls.oldest, u.calls.newest)
	}
}

// TestConnAddress checks the address spans name an upstream by, now read
// once from its URL when the Conn is made.
func TestConnAddress(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		host string
		port int
	}{
		{Spec{Config: config.Server{URL: "http://127.0.0.1:8080/mcp"}}, "127.0.0.1", 8080},
		{Spec{Config: config.Server{URL: "https://mcp.example.com/mcp"}}, "mcp.example.com", 443},
		{Spec{Config: config.Server{URL: "http://mcp.example.com/sse"}}, "mcp.example.com", 80},
		{Spec{Config: config.Server{URL: "http://[::1]:9/mcp"}}, "::1", 9},
		{Spec{Config: config.Server{URL: "://bad"}}, "", 0},
		{Spec{Config: config.Server{Command: "server"}}, "", 0},
	} {
		u := newConn(tc.spec, nil, NewRelay(nil, nil), "test", nil)
		if host, port := u.Address(); host != tc.host || port != tc.port {
			t.Errorf("%+v: Address() = %q, %d; want %q, %d", tc.spec.Config, host, port, tc.host, tc.port)
		}
	}
}
