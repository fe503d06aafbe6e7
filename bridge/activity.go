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
//
// Every call passes through three of them, so begin and end allocate
// nothing: the channel a waiter sleeps on is made only when someone waits.
type activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // made by wait while n > 0, closed when n drops to 0
}

// begin records one piece of work starting; end must follow.
func (a *activity) begin() {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
}

// end records one piece of work finishing.
func (a *activity) end() {
	a.mu.Lock()
	if a.n--; a.n == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
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
	if a.idle == nil {
		a.idle = make(chan struct{})
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
