package bridge

import (
	"context"
	"sync"
	"time"
)

// Every call gets an answer, also the ones shutdown cuts short. When
// serve.shutdown_grace ends with calls still running, they are cancelled
// here, before the transport closes, so that each still answers its client
// with an isError result saying why, instead of the connection closing
// under it.

// cutoff cancels the tool calls running when the grace period ends.
// It holds each running call's cancel func itself: a context of its own
// for the calls to follow (context.AfterFunc) cost each call two
// allocations more and the two closures watch handed back two more (#25).
type cutoff struct {
	mu      sync.Mutex
	cutting bool          // cut and not reset since: a call that starts now is cut at once
	grace   time.Duration // the grace period that ended
	next    uint64        // the id of the last call watched
	running map[uint64]watchedCall
}

// watchedCall is a running call as cutoff holds it.
type watchedCall struct {
	cancel context.CancelFunc
	cut    bool
}

// cut cancels the calls running now, after a grace period of grace, and
// the calls that start until reset.
func (c *cutoff) cut(grace time.Duration) {
	c.mu.Lock()
	c.grace, c.cutting = grace, true
	cancels := make([]context.CancelFunc, 0, len(c.running))
	for id, w := range c.running {
		w.cut = true
		c.running[id] = w
		cancels = append(cancels, w.cancel)
	}
	c.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// reset makes the next calls independent of a past cut: the gateway may be
// served again.
func (c *cutoff) reset() {
	c.mu.Lock()
	c.cutting = false
	c.mu.Unlock()
}

// watch returns ctx, cancelled also when the calls are cut, and the
// watch on the call, which says once it has returned whether it was cut
// (wasCut) and must then be released.
func (c *cutoff) watch(ctx context.Context) (context.Context, watch) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	if c.running == nil {
		c.running = map[uint64]watchedCall{}
	}
	c.next++
	id, cutting := c.next, c.cutting
	c.running[id] = watchedCall{cancel: cancel, cut: cutting}
	c.mu.Unlock()
	if cutting {
		cancel()
	}
	return ctx, watch{c: c, id: id, cancel: cancel}
}

// watch is one call that cutoff watches.
type watch struct {
	c      *cutoff
	id     uint64
	cancel context.CancelFunc
}

// wasCut reports whether the call was cut, and after which grace period.
func (w watch) wasCut() (time.Duration, bool) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.grace, w.c.running[w.id].cut
}

// release frees what watch holds for the call.
func (w watch) release() {
	w.c.mu.Lock()
	delete(w.c.running, w.id)
	w.c.mu.Unlock()
	w.cancel()
}
