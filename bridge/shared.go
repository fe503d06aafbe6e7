package bridge

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/config"
)

// shared is what the replicas of a team's gateway share through Redis
// (redis.url): the pins and approvals, and the upstream OAuth tokens.
type shared struct {
	st  *state.Store
	own bool // opened by New, closed by Close
	// pins is the trust store on Redis; every reload keeps it.
	pins *trust.Store
	// watch tells the gateway when any replica changed the pins.
	watch *state.Pins
	// tokens is the token store, or nil with tokenErr saying why (no key:
	// then only servers without an auth block run, without OAuth).
	tokens   oauth.Store
	tokenErr error
}

// sharedHealthEvery is how often a gateway that opened the Redis client
// pings it while it answers (see state.Store.Watch).
const sharedHealthEvery = 5 * time.Second

// openShared opens what cfg.Redis shares, or returns nil without
// redis.url. st is the caller's client (Options.State) or nil to open
// one. A token key that is set but unusable is an error, and so is a
// missing one when a server has an auth block: a gateway that would
// have to keep tokens in Redis in the clear does not start.
func openShared(cfg *config.Config, st *state.Store, environ []string, logger *slog.Logger) (*shared, error) {
	if !cfg.Redis.Enabled() {
		return nil, nil
	}
	sh := &shared{st: st}
	if sh.st == nil {
		var err error
		if sh.st, err = state.Open(context.Background(), cfg.Redis, cfg.ShowFullURLs, logger); err != nil {
			return nil, err
		}
		sh.own = true
	}
	sh.watch = state.NewPins(sh.st)
	sh.pins = trust.NewSharedStore(sh.watch)
	tokens, err := state.NewTokens(sh.st, environ, cfg.Redis.TokenKeyEnv)
	switch {
	case err == nil:
		sh.tokens = tokens
	case keySet(environ, cfg.Redis.TokenKeyEnv) || len(authServers(cfg)) > 0:
		sh.close()
		if names := authServers(cfg); len(names) > 0 {
			return nil, &startError{err: err, servers: names}
		}
		return nil, err
	default:
		sh.tokenErr = err
	}
	return sh, nil
}

// startError is a token key problem that stops a start, naming the
// servers that need the key.
type startError struct {
	err     error
	servers []string
}

func (e *startError) Error() string {
	return e.err.Error() + " (needed by the servers with an auth block: " + strings.Join(e.servers, ", ") + ")"
}

func (e *startError) Unwrap() error { return e.err }

// authServers are the configured servers with an auth block, sorted.
func authServers(cfg *config.Config) []string {
	var out []string
	for name, s := range cfg.Servers {
		if s.URL != "" && s.AuthType() != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// keySet reports whether environ sets name at all.
func keySet(environ []string, name string) bool {
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && k == name {
			return true
		}
	}
	return false
}

// withoutVar is environ without name: the token key is the gateway's,
// and stdio servers inherit the rest of its environment.
func withoutVar(environ []string, name string) []string {
	if name == "" || !keySet(environ, name) {
		return environ
	}
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == name
	})
}

// openTokens is the pool's token store opener with shared state.
func (sh *shared) openTokens(*config.Config) (oauth.Store, error) {
	return sh.tokens, sh.tokenErr
}

// start runs what keeps the shared state live until the gateway's life
// ends: the Redis health check (when New opened the client) and the pin
// watch, which reviews the catalog again when any replica or operator
// changes the pins, within pub/sub latency, or a second by polling while
// the subscription is down.
func (sh *shared) start(g *Gateway) {
	if sh.own {
		go sh.st.Watch(g.life, sharedHealthEvery)
	}
	review := func() {
		g.refreshes.do("shared pins", func() {
			// A change told before the first publication is out may come
			// after that publication read the pins: review once it is
			// out, rather than drop it (a replica then held an approved
			// tool until the next change, when the test machine was busy).
			select {
			case <-g.startup.done:
			case <-g.life.Done():
				return
			}
			g.rebuild()
		})
	}
	go sh.watch.Watch(g.life, review)
	// A review that could not read the pins (Redis down, or a pooled
	// connection that died with it) kept or held what it could not check:
	// once Redis answers, review again, whether or not the pins changed.
	go func() {
		tick := time.NewTicker(unreadRetry)
		defer tick.Stop()
		for {
			select {
			case <-g.life.Done():
				return
			case <-tick.C:
			}
			if sh.pins.Unread(slices.Collect(maps.Keys(g.settings().cfg.Servers))...) && sh.st.Healthy() {
				review()
			}
		}
	}()
}

// unreadRetry is how often a gateway whose last review could not read the
// shared pins checks whether it can now.
const unreadRetry = time.Second

var _ access.CallLimiter = (*state.Limits)(nil)

// callLimiter is the limiter of serve.max_in_flight: given, else with
// shared state one that counts a caller's calls on every replica (see
// state.Limits for its bound), else nil (in memory, per process).
func (sh *shared) callLimiter(given access.CallLimiter, limit int) access.CallLimiter {
	if given != nil || sh == nil || limit <= 0 {
		return given
	}
	return state.NewLimits(sh.st, limit, access.ErrLimitReached)
}

// redisHealth is what feeds toolbridge_redis_up: given, else a ping of
// the shared Redis, else nil (no redis.url: no metric).
func (sh *shared) redisHealth(given func(context.Context) error) func(context.Context) error {
	if given != nil || sh == nil {
		return given
	}
	return sh.st.Ping
}

func (sh *shared) close() {
	if sh != nil && sh.own {
		_ = sh.st.Close()
	}
}
