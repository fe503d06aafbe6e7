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
type cutoff struct {
	mu     sync.Mutex
	ctx    context.Context // ended when calls are cut
	cancel context.CancelFunc
	grace  time.Duration // the grace period that ended
}

// current returns the context calls are cut by, making it on first use.
func (c *cutoff) current() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(context.Background())
	}
	return c.ctx
}

// cut cancels the calls running now, after a grace period of grace.
func (c *cutoff) cut(grace time.Duration) {
	c.current()
	c.mu.Lock()
	c.grace = grace
	c.cancel()
	c.mu.Unlock()
}

// reset makes the next calls independent of a past cut: the gateway may be
// served again.
func (c *cutoff) reset() {
	c.mu.Lock()
	c.ctx, c.cancel = nil, nil
	c.mu.Unlock()
}

// watch returns ctx, cancelled also when the calls are cut, and a
// function that reports, once the call has returned, whether it was cut
// and after which grace period; release frees what watch holds.
func (c *cutoff) watch(ctx context.Context) (context.Context, func() (time.Duration, bool), context.CancelFunc) {
	cutCtx := c.current()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(cutCtx, cancel)
	wasCut := func() (time.Duration, bool) {
		if cutCtx.Err() == nil {
			return 0, false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.grace, true
	}
	return ctx, wasCut, func() { stop(); cancel() }
}
