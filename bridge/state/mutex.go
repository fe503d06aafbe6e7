package state

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The lock's timings. A holder's lock lives lockTTL past its last
// extension and is extended every lockTTL/3 while held, so a replica that
// dies holding it (kill -9) frees it within lockTTL, while one whose
// refresh takes long (retries, a slow authorization server) keeps it.
const (
	lockTTL = 10 * time.Second
	// lockPoll is the longest a waiter sleeps between tries; it sleeps
	// a random part of it, so that waiters do not try in step.
	lockPoll = 50 * time.Millisecond
)

// unlockScript deletes the lock only if it still holds the caller's
// token: a holder whose lock expired must not free another's.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// extendScript renews the lock's expiry, again only for its holder.
var extendScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// Lock takes the lock named key, shared by every replica, waiting until it
// is free or ctx ends: SET key token NX PX, and a release that deletes the
// key only while it still holds this holder's random token (a Lua script,
// so the check and the delete are one step). Unlock is safe to call more
// than once.
//
// The lock is advisory and bounded: it lives lockTTL after its holder last
// extended it, so a dead holder frees it within that. While Redis is
// down Lock fails with ErrUnavailable: what needs the lock is refused.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), err error) {
	b := make([]byte, 16)
	if _, err := crand.Read(b); err != nil {
		return nil, fmt.Errorf("making a lock token: %w", err)
	}
	token := hex.EncodeToString(b)
	for {
		ok, err := s.rdb.SetNX(ctx, key, token, lockTTL).Result()
		if err != nil && ctx.Err() != nil {
			// The caller gave up: that says nothing of Redis's health.
			return nil, fmt.Errorf("waiting for the lock %s: %w", key, ctx.Err())
		}
		if err = s.Check(err); err != nil {
			return nil, err
		}
		if ok {
			break
		}
		t := time.NewTimer(lockPoll/4 + rand.N(lockPoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for the lock %s: %w", key, ctx.Err())
		case <-t.C:
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(lockTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
				_ = s.Check(extendScript.Run(ctx, s.rdb, []string{key}, token, lockTTL.Milliseconds()).Err())
				cancel()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			// Not the caller's ctx: it may be the one that ended. If
			// Redis cannot be told, the lock expires by itself.
			ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
			defer cancel()
			_ = s.Check(unlockScript.Run(ctx, s.rdb, []string{key}, token).Err())
		})
	}, nil
}
