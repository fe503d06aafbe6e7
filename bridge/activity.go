package bridge

import (
	"context"
	"sync"
)

// activity counts work in progress and lets a caller wait until there is
// none: shutdown waits for the calls in flight, a reload for the calls
// still using an old upstream or old hooks before closing them. Unlike a
// sync.WaitGroup it may be waited on while work keeps starting, and the
// wait is bounded by a context.
type activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil until the first begin
}

// begin records one piece of work starting; end must follow.
func (a *activity) begin() {
	a.mu.Lock()
	if a.n == 0 {
		a.idle = make(chan struct{})
	}
	a.n++
	a.mu.Unlock()
}

// end records one piece of work finishing.
func (a *activity) end() {
	a.mu.Lock()
	if a.n--; a.n == 0 {
		close(a.idle)
	}
	a.mu.Unlock()
}

// wait returns nil once nothing is in progress, or ctx's error if it ends
// first.
func (a *activity) wait(ctx context.Context) error {
	a.mu.Lock()
	if a.n == 0 {
		a.mu.Unlock()
		return nil
	}
	idle := a.idle
	a.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// running reports how much work is in progress.
func (a *activity) running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}
