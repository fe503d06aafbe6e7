package upstream

import (
	"context"
	"sync"
)

// Activity counts work in progress and lets a caller wait until there is
// none: shutdown waits for the calls in flight, a reload for the calls
// still using an old upstream or old hooks before closing them. Unlike a
// sync.WaitGroup it may be waited on while work keeps starting, and the
// wait is bounded by a context.
//
// Every call passes through three of them, so Begin and End allocate
// nothing: the channel a waiter sleeps on is made only when someone waits.
type Activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // made by Wait while n > 0, closed when n drops to 0
}

// Begin records one piece of work starting; End must follow.
func (a *Activity) Begin() {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
}

// End records one piece of work finishing.
func (a *Activity) End() {
	a.mu.Lock()
	if a.n--; a.n == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
	a.mu.Unlock()
}

// Wait returns nil once nothing is in progress, or ctx's error if it ends
// first.
func (a *Activity) Wait(ctx context.Context) error {
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

// Running reports how much work is in progress.
func (a *Activity) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}
