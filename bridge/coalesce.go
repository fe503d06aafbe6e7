package bridge

import (
	"log/slog"
	"sync"
	"time"
)

// Notification storms are coalesced. An upstream may send list_changed in
// a loop; refetching its list once per notification queued thousands of
// refreshes (and as many goroutines) and, when the server died, as many
// identical warnings. A coalescer runs at most one refresh per key (server
// and list) and remembers at most one more: every notification that comes
// while one runs is served by the next.
type coalescer struct {
	mu    sync.Mutex
	state map[string]*coalesced
}

type coalesced struct {
	running, pending bool
}

// do runs fn for key now, or once after the run in progress, however many
// times do is called meanwhile. It never blocks.
func (c *coalescer) do(key string, fn func()) {
	c.mu.Lock()
	if c.state == nil {
		c.state = map[string]*coalesced{}
	}
	s := c.state[key]
	if s == nil {
		s = &coalesced{}
		c.state[key] = s
	}
	if s.running {
		s.pending = true
		c.mu.Unlock()
		return
	}
	s.running = true
	c.mu.Unlock()
	go func() {
		for {
			fn()
			c.mu.Lock()
			if !s.pending {
				s.running = false
				c.mu.Unlock()
				return
			}
			s.pending = false
			c.mu.Unlock()
		}
	}()
}

// logThrottle lets one log line per key through per interval and counts
// the ones it holds back; the next line through says how many it stood
// for, so a storm of identical warnings becomes one line now and then.
type logThrottle struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	keys map[string]*throttled
}

type throttled struct {
	last       time.Time
	suppressed int
}

func newLogThrottle(interval time.Duration) *logThrottle {
	return &logThrottle{interval: interval, now: time.Now, keys: map[string]*throttled{}}
}

// warn logs msg with args at most once per interval for key.
func (t *logThrottle) warn(logger *slog.Logger, key, msg string, args ...any) {
	t.mu.Lock()
	k := t.keys[key]
	if k == nil {
		k = &throttled{}
		t.keys[key] = k
	}
	now := t.now()
	if !k.last.IsZero() && now.Sub(k.last) < t.interval {
		k.suppressed++
		t.mu.Unlock()
		return
	}
	if k.suppressed > 0 {
		args = append(args, "repeated", k.suppressed)
	}
	k.last, k.suppressed = now, 0
	t.mu.Unlock()
	logger.Warn(msg, args...)
}
