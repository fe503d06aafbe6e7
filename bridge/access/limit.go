package access

import (
	"context"
	"errors"
	"sync"
)

// CallLimiter bounds the tool calls one caller has running at once
// (serve.max_in_flight). The gateway asks it before every tool call and
// releases the slot when the call ends, so one caller's slow calls cannot
// take every upstream's capacity from the others.
//
// The default, NewLocalLimiter, counts in this process. A gateway run as
// several replicas behind a load balancer passes one that counts in shared
// state instead (Options.CallLimiter in package bridge), so that a caller
// gets max_in_flight calls in all, not per replica.
type CallLimiter interface {
	// Acquire takes one of caller's slots. caller is an opaque key: the
	// gateway passes "subject <sub>" for an OAuth caller and the session
	// id otherwise, never a token. When caller already has its limit
	// running, Acquire returns an error that wraps ErrLimitReached; any
	// other error means the count could not be kept, and the gateway
	// refuses the call then too (fail closed). On success the gateway
	// calls release exactly once, when the call ends.
	Acquire(ctx context.Context, caller string) (release func(), err error)
}

// ErrLimitReached is what a CallLimiter's Acquire wraps when the caller
// already has its limit of calls running.
var ErrLimitReached = errors.New("the caller already has its limit of tool calls running")

// NewLocalLimiter returns the in-memory CallLimiter: at most limit calls
// per caller in this process. limit <= 0 means no limit.
func NewLocalLimiter(limit int) CallLimiter {
	return &localLimiter{limit: limit, calls: map[string]int{}}
}

type localLimiter struct {
	limit int
	mu    sync.Mutex
	calls map[string]int // caller -> calls running; absent when none
}

func noRelease() {}

func (l *localLimiter) Acquire(_ context.Context, caller string) (func(), error) {
	if l.limit <= 0 {
		return noRelease, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls[caller] >= l.limit {
		return nil, ErrLimitReached
	}
	l.calls[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			// Delete at zero: the map holds only callers with calls
			// running, so distinct callers cannot grow it without bound.
			if l.calls[caller]--; l.calls[caller] <= 0 {
				delete(l.calls, caller)
			}
		})
	}, nil
}
