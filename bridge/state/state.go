// Package state is the one place that talks to Redis: the state that the
// replicas of one team's gateway share (sessions, pins and approvals,
// upstream OAuth tokens, per-caller limits). Each of those stores is built
// on a [Store]; nothing else in toolbridge dials Redis.
//
// Without redis.url there is no Store and every replica keeps its state to
// itself, as one gateway on a laptop does.
package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolbridge/toolbridge/config"
)

// ErrUnavailable is wrapped by every error that a store returns because
// Redis cannot be reached. Callers refuse what needs shared state with it
// (a clear error) and go on serving what does not.
var ErrUnavailable = errors.New("shared state is unavailable (Redis cannot be reached)")

// Timeouts for one Redis round trip. They are short because a request
// waits on them: a Redis that does not answer must turn into a clear
// error within a second or two, not hang the client until its own timeout.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = time.Second
)

// Store is a connection pool to the team's Redis, with the key prefix every
// key and channel starts with, and the health that Redis last showed.
// It is safe for concurrent use.
type Store struct {
	rdb    *redis.Client
	prefix string
	shown  string // the URL as logs may show it: no password
	log    *slog.Logger

	down    atomic.Bool // Redis failed the last round trip
	logMu   sync.Mutex  // orders the "unavailable" and "reachable again" lines
	lastErr string      // guarded by logMu: the reason shown in Health
}

// Open makes a Store for cfg. It fails only when the URL is unusable; a
// Redis that does not answer yet is not an error, because a replica must
// start and serve what needs no shared state while Redis is down: the
// Store reports it through [Store.Healthy] and recovers by itself.
// showFullURLs is the config's show_full_urls (see config.ShowURL).
func Open(ctx context.Context, cfg config.Redis, showFullURLs bool, log *slog.Logger) (*Store, error) {
	shown := config.ShowURL(cfg.URL, showFullURLs)
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		// go-redis quotes parts of the URL in its errors: never show them.
		return nil, fmt.Errorf("opening Redis at %s: the URL is not one go-redis accepts (want redis://host:6379/0, rediss://… or unix:///path)", shown)
	}
	opts.DialTimeout = dialTimeout
	opts.ReadTimeout = ioTimeout
	opts.WriteTimeout = ioTimeout
	opts.PoolTimeout = dialTimeout
	opts.MaxRetries = 1
	// The client's own name shows in CLIENT LIST, so an operator can tell
	// the gateway's connections apart.
	opts.ClientName = "toolbridge"
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{rdb: redis.NewClient(opts), prefix: cfg.KeyPrefix, shown: shown, log: log}
	_ = s.Ping(ctx) // records the health; an error here is logged, not fatal
	return s, nil
}

// Redis is the client the stores in this package use.
func (s *Store) Redis() *redis.Client { return s.rdb }

// Key joins parts into a key (or channel name) under the configured
// prefix: Key("session", id) is "toolbridge:session:ID" by default.
func (s *Store) Key(parts ...string) string {
	return s.prefix + strings.Join(parts, ":")
}

// Ping asks Redis whether it answers, and records the answer.
func (s *Store) Ping(ctx context.Context) error {
	return s.Check(s.rdb.Ping(ctx).Err())
}

// Check records what a round trip to Redis says about its health and
// returns the error a store should return: nil for nil and for redis.Nil
// (a missing key is an answer), an error wrapping [ErrUnavailable] when
// Redis could not be reached or did not answer in time, and err itself for
// anything else (a script error, a wrong type: Redis answered).
//
// The first failure after a success is logged once, and so is the first
// success after failures: a replica whose Redis is down writes two lines,
// not one per request.
func (s *Store) Check(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		if s.down.Load() && s.down.CompareAndSwap(true, false) {
			s.logMu.Lock()
			s.log.Info("Redis is reachable again", "redis", s.shown)
			s.lastErr = ""
			s.logMu.Unlock()
		}
		return nil
	}
	if !unreachable(err) {
		return err
	}
	reason := config.ShowURLs(err.Error(), false)
	if s.down.CompareAndSwap(false, true) {
		s.logMu.Lock()
		s.log.Warn("Redis is unavailable: what needs shared state is refused until it is back", "redis", s.shown, "error", reason)
		s.lastErr = reason
		s.logMu.Unlock()
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, reason)
}

// unreachable reports whether err means Redis could not be asked or did
// not answer, as opposed to an answer that is an error.
func unreachable(err error) bool {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout):
		return true
	}
	// A connection that the server closed mid-answer shows as io.EOF or
	// "connection reset"; LOADING means a restarted Redis is still reading
	// its data set and answers nothing yet.
	msg := err.Error()
	for _, s := range []string{"EOF", "connection reset", "broken pipe", "connection refused", "LOADING"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Healthy reports whether Redis answered the last round trip.
func (s *Store) Healthy() bool { return !s.down.Load() }

// Health is what /readyz and the status page show of Redis: its URL
// without secrets, whether it answers, and if not, why.
type Health struct {
	URL   string `json:"url"`
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
}

// Health returns the Store's health as last seen.
func (s *Store) Health() Health {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return Health{URL: s.shown, Up: !s.down.Load(), Error: s.lastErr}
}

// Watch pings Redis until ctx ends: every second while it is down, so
// that a replica notices it is back without waiting for a request, and
// every interval while it is up.
func (s *Store) Watch(ctx context.Context, interval time.Duration) {
	for {
		wait := interval
		if !s.Healthy() {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		pingCtx, cancel := context.WithTimeout(ctx, dialTimeout)
		_ = s.Ping(pingCtx)
		cancel()
	}
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }
