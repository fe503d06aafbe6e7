package state

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limits counts each caller's tool calls running on every replica, so that
// serve.max_in_flight bounds a caller's calls in all, not per replica.
//
// A caller's running calls are a sorted set in Redis (PREFIX limit:DIGEST,
// the digest of the caller key, which may name a person): one member per
// call, scored by when its slot expires. A slot lives slotTTL and the
// replica running the call extends it every slotTTL/3, so the slots of a
// replica killed mid-call come back within slotTTL.
//
// The bound: at most limit calls per caller run on all replicas together,
// except that a killed replica's calls are counted until their slots
// expire (at most slotTTL), and while Redis cannot be reached each replica
// counts on its own (at most limit per replica), so that calls go on.
type Limits struct {
	st    *Store
	limit int
	// reached is the error Acquire wraps when the caller is at its limit.
	reached error
	ttl     time.Duration // slotTTL; tests shorten it

	mu    sync.Mutex
	local map[string]int // the per-replica count used while Redis is down
}

// slotTTL is how long a slot outlives its last extension.
const slotTTL = 30 * time.Second

// NewLimits returns the shared limiter of limit calls per caller (<= 0: no
// limit). Acquire's error wraps reached when a caller is at its limit.
func NewLimits(st *Store, limit int, reached error) *Limits {
	return &Limits{st: st, limit: limit, reached: reached, ttl: slotTTL, local: map[string]int{}}
}

// acquireScript drops the caller's expired slots and takes one if fewer
// than ARGV[1] remain: KEYS[1] the set; ARGV: limit, now (ms), expiry (ms),
// slot id, ttl (ms). It returns 1 when taken.
var acquireScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`)

// extendSlotScript renews a slot that is still held (ZADD XX: a slot already
// released or expired is not taken again).
var extendSlotScript = redis.NewScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
	redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
	redis.call('PEXPIRE', KEYS[1], ARGV[3])
	return 1
end
return 0`)

func (l *Limits) key(caller string) string {
	sum := sha256.Sum256([]byte(caller))
	return l.st.Key("limit", hex.EncodeToString(sum[:16]))
}

// Acquire takes one of caller's slots, or fails wrapping the reached error
// when caller already has its limit of calls running on all replicas.
// release frees the slot; calling it more than once frees it once.
func (l *Limits) Acquire(ctx context.Context, caller string) (release func(), err error) {
	if l.limit <= 0 {
		return func() {}, nil
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand does not fail
	slot := hex.EncodeToString(b)
	key := l.key(caller)
	now := time.Now()
	taken, err := acquireScript.Run(ctx, l.st.rdb, []string{key},
		l.limit, now.UnixMilli(), now.Add(l.ttl).UnixMilli(), slot, l.ttl.Milliseconds()).Int()
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("counting the caller's calls: %w", ctx.Err())
	}
	if err = l.st.Check(err); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return l.acquireLocal(caller)
		}
		return nil, fmt.Errorf("counting the caller's calls: %w", err)
	}
	if taken == 0 {
		return nil, fmt.Errorf("%w (%d on all replicas)", l.reached, l.limit)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(l.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
				_ = l.st.Check(extendSlotScript.Run(ctx, l.st.rdb, []string{key}, time.Now().Add(l.ttl).UnixMilli(), slot, l.ttl.Milliseconds()).Err())
				cancel()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			// If Redis cannot be told, the slot expires by itself.
			ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
			defer cancel()
			_ = l.st.Check(l.st.rdb.ZRem(ctx, key, slot).Err())
		})
	}, nil
}

// acquireLocal counts in this replica while Redis is down.
func (l *Limits) acquireLocal(caller string) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.local[caller] >= l.limit {
		return nil, fmt.Errorf("%w (%d on this replica while Redis is unavailable)", l.reached, l.limit)
	}
	l.local[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.local[caller]--; l.local[caller] <= 0 {
				delete(l.local, caller)
			}
		})
	}, nil
}

// Running returns how many slots caller holds on all replicas now, for
// tests and the status page.
func (l *Limits) Running(ctx context.Context, caller string) (int, error) {
	n, err := l.st.rdb.ZCount(ctx, l.key(caller), strconv.FormatInt(time.Now().UnixMilli(), 10), "+inf").Result()
	return int(n), l.st.Check(err)
}
