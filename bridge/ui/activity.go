package ui

import (
	"sync"
	"sync/atomic"
	"time"
)

// Capacities of the rings of recent activity: enough to fill a screen
// several times, small enough that the memory is fixed and negligible.
const (
	CallCapacity   = 200
	SearchCapacity = 100
	// MaxHits is how many of a search's top hits are kept.
	MaxHits = 3
	// maxErrorBytes bounds the error text kept per call.
	maxErrorBytes = 300
)

// Call is one tool call as the page shows it.
type Call struct {
	// Seq orders all activity; Record sets it.
	Seq uint64
	At  time.Time
	// Tool is the canonical id server::tool, Server its server, Via how the
	// client called it (direct or tool_call).
	Tool, Server, Via string
	Latency           time.Duration
	// Error is the error text, empty when the call succeeded.
	Error string
	// Caller is the caller's identity, when the transport knows one.
	Caller string
	// TraceID is the call's trace, all zero when telemetry is off.
	TraceID [16]byte
}

// Search is one tool_search as the page shows it.
type Search struct {
	Seq   uint64
	At    time.Time
	Query string
	// Hits are the ids of the top hits (NHits of them at most MaxHits are
	// kept); Total is how many the search returned.
	Hits  [MaxHits]string
	Total int
	// Partial says no tool matched the query's words as written: the hits
	// only share part of a word with it. The page counts it as a miss.
	Partial bool
	Caller  string
	// TraceID is the search's trace, all zero when telemetry is off.
	TraceID [16]byte
}

// ring is a fixed-size buffer that keeps the newest entries.
type ring[T any] struct {
	buf  []T
	next int
	n    int
}

func newRing[T any](size int) ring[T] { return ring[T]{buf: make([]T, size)} }

func (r *ring[T]) put(v T) {
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
}

// each calls f on the entries, oldest first.
func (r *ring[T]) each(f func(*T)) {
	start := (r.next - r.n + len(r.buf)) % len(r.buf)
	for i := range r.n {
		f(&r.buf[(start+i)%len(r.buf)])
	}
}

// Activity keeps the recent calls and searches in bounded rings and wakes
// the page's viewers when one is added. Recording costs a lock and a copy
// and allocates nothing, so the call path pays nothing for a page no one
// watches; the work of encoding an entry is done by the viewer's own
// goroutine, and only while one is connected.
type Activity struct {
	mu       sync.Mutex
	seq      uint64
	calls    ring[Call]
	searches ring[Search]

	viewers atomic.Int32
	subMu   sync.Mutex
	subs    map[*viewer]struct{}
}

// viewer is one connected event stream.
type viewer struct {
	wake chan struct{} // capacity 1: a pending wake-up is enough
	end  chan struct{} // closed by EndStreams
}

// NewActivity returns an empty Activity.
func NewActivity() *Activity {
	return &Activity{
		calls:    newRing[Call](CallCapacity),
		searches: newRing[Search](SearchCapacity),
		subs:     map[*viewer]struct{}{},
	}
}

// RecordCall adds a call. It does not allocate.
func (a *Activity) RecordCall(c Call) {
	if len(c.Error) > maxErrorBytes {
		c.Error = clipUTF8(c.Error, maxErrorBytes)
	}
	a.mu.Lock()
	a.seq++
	c.Seq = a.seq
	a.calls.put(c)
	a.mu.Unlock()
	a.notify()
}

// RecordSearch adds a search. It does not allocate.
func (a *Activity) RecordSearch(s Search) {
	if len(s.Query) > maxQueryBytes {
		s.Query = clipUTF8(s.Query, maxQueryBytes)
	}
	a.mu.Lock()
	a.seq++
	s.Seq = a.seq
	a.searches.put(s)
	a.mu.Unlock()
	a.notify()
}

// maxQueryBytes bounds the query text kept per search.
const maxQueryBytes = 200

// Watched reports whether a viewer is connected.
func (a *Activity) Watched() bool { return a.viewers.Load() > 0 }

func (a *Activity) notify() {
	if a.viewers.Load() == 0 {
		return
	}
	a.subMu.Lock()
	for v := range a.subs {
		select {
		case v.wake <- struct{}{}:
		default: // already woken
		}
	}
	a.subMu.Unlock()
}

// subscribe adds a viewer, unless max are connected already.
func (a *Activity) subscribe(max int) (*viewer, bool) {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	if len(a.subs) >= max {
		return nil, false
	}
	v := &viewer{wake: make(chan struct{}, 1), end: make(chan struct{})}
	a.subs[v] = struct{}{}
	a.viewers.Add(1)
	return v, true
}

func (a *Activity) unsubscribe(v *viewer) {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	if _, ok := a.subs[v]; ok {
		delete(a.subs, v)
		a.viewers.Add(-1)
	}
}

// EndStreams ends every connected event stream, so that a server shutting
// down does not wait for them: a stream never goes idle by itself. The
// page reconnects by itself when the gateway is back.
func (a *Activity) EndStreams() {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	for v := range a.subs {
		close(v.end)
		delete(a.subs, v)
		a.viewers.Add(-1)
	}
}

// since returns copies of the entries newer than seq, oldest first, and
// the newest seq.
func (a *Activity) since(seq uint64) ([]Call, []Search, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var calls []Call
	var searches []Search
	a.calls.each(func(c *Call) {
		if c.Seq > seq {
			calls = append(calls, *c)
		}
	})
	a.searches.each(func(s *Search) {
		if s.Seq > seq {
			searches = append(searches, *s)
		}
	})
	return calls, searches, a.seq
}

// clipUTF8 cuts s to at most n bytes at a character boundary, without
// allocating (the result shares s's memory).
func clipUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
