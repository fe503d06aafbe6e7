package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/config"
)

// ServerStatus is what the pool knows of one configured server.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Connected bool   `json:"connected"`
	// Connecting says the server's first connect is still under way (it
	// has no outcome yet), so it is listed before it has one.
	Connecting bool          `json:"connecting,omitempty"`
	Tools      int           `json:"tools"`
	Took       time.Duration `json:"took_ns"`
	Error      string        `json:"error,omitempty"`
	// Restarts counts reconnections after the first connect.
	Restarts int `json:"restarts,omitempty"`
	// NextAttempt is when the supervisor tries again, while disconnected.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	// NeedsLogin says the server needs `toolbridge auth login NAME`; the
	// gateway takes the token as soon as a login stores one.
	NeedsLogin bool `json:"needs_login,omitempty"`
	// ToolsDropped is how many tools the server listed past its tool bound
	// (ToolLimit: max_tools_per_server or its max_tools), at least; they
	// are not in the catalog.
	ToolsDropped int `json:"tools_dropped,omitempty"`
	ToolLimit    int `json:"tool_limit,omitempty"`
}

// Pool holds the connections to every upstream server.
type Pool struct {
	// cfg is the config the pool was last given (New or Reload); it
	// bounds connects, restarts and results.
	cfg      atomic.Pointer[config.Config]
	environ  []string
	progress io.Writer
	relay    *Relay

	life   context.Context
	cancel context.CancelFunc
	// supervisors are the per-server goroutines that reconnect; Close
	// waits for them, so no restart can start a process after it.
	supervisors sync.WaitGroup
	// retiring are the upstreams a reload replaced, closing once their
	// last request ends; Close waits for them too.
	retiring sync.WaitGroup
	// onReconnect is called after a server reconnected, so the gateway
	// republishes the catalog.
	onReconnect func()
	// onJoin is PoolOptions.OnJoin.
	onJoin func(*Conn)
	// version is toolbridge's own, sent to every server in initialize.
	version string
	// logger receives the transports' own messages.
	logger *slog.Logger

	mu       sync.RWMutex
	specs    map[string]Spec
	ups      map[string]*Conn
	statuses map[string]ServerStatus
	// sups holds each supervised server's current supervisor; one that a
	// reload replaced or removed finds itself missing here and stops.
	sups map[string]*supervisor

	// auth holds the remote servers' OAuth clients.
	auth auths
}

// PoolOptions configure a Pool.
type PoolOptions struct {
	// Environ is the environment stdio servers inherit (os.Environ() in the
	// CLI), before each server's own env entries.
	Environ []string
	// Progress receives one line per server as it comes up or fails; nil
	// discards them. In stdio mode this must be stderr, never stdout.
	Progress io.Writer
	// Version is toolbridge's version, sent to the servers in initialize.
	Version string
	// OnReconnect, if not nil, is called after the supervisor reconnected
	// a server whose connection was lost (or that never came up).
	OnReconnect func()
	// OnJoin, if not nil, is called with each server Connect serves, as
	// it comes up (see Connect).
	OnJoin func(*Conn)
	// Logger receives the transports' own log messages; nil discards
	// them. (What matters to the user, a server failing or lost, comes
	// through Progress and errors instead.)
	Logger *slog.Logger
	// OpenTokenStore opens the store of the upstream OAuth tokens, once,
	// when a remote server first needs it; nil is oauth.OpenStore (the
	// OS keyring or state_dir). Replicas pass their shared one.
	OpenTokenStore func(*config.Config) (oauth.Store, error)
}

// NewPool returns a pool for cfg that connects nothing yet (see Connect).
// r carries what the servers send toward the clients; it may be
// NewRelay(nil, nil) when there are none.
func NewPool(cfg *config.Config, opts PoolOptions, r *Relay) *Pool {
	life, cancel := context.WithCancel(context.Background())
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{
		environ: opts.Environ, progress: opts.Progress, relay: r, version: opts.Version, onReconnect: opts.OnReconnect, onJoin: opts.OnJoin, logger: opts.Logger,
		auth: auths{open: opts.OpenTokenStore},
		life: life, cancel: cancel,
		specs: map[string]Spec{}, ups: map[string]*Conn{}, statuses: map[string]ServerStatus{},
		sups: map[string]*supervisor{},
	}
	p.cfg.Store(cfg)
	return p
}

// dialed is the outcome of one server's connection attempt.
type dialed struct {
	spec Spec
	u    *Conn // nil when err is set
	took time.Duration
	err  error
}

// Connect connects to every spec in parallel, each bounded by its connect
// timeout, and prints one line per server as it comes up or fails. A server
// that fails does not stop the others: Connect returns once every server has
// connected or failed, and the error lists the ones that failed. Failed
// servers are retried in the background (see supervise).
//
// Each server joins the pool as it comes up, not when the slowest is done:
// it is handed to ready, if not nil, then served, then handed to
// PoolOptions.OnJoin, if set (one server at a time, in the order they come
// up). The gateway does a server's share of the catalog's work in ready
// while slower servers are still starting, and publishes it on join once
// start-up no longer waits for the rest.
func (p *Pool) Connect(ctx context.Context, specs []Spec, ready func(*Conn)) error {
	p.mu.Lock()
	for _, spec := range specs {
		if _, known := p.statuses[spec.Name]; !known {
			p.statuses[spec.Name] = ServerStatus{Name: spec.Name, Transport: spec.Transport(), Connecting: true}
		}
	}
	p.mu.Unlock()
	_, err := p.dialAll(ctx, specs, func(o dialed) {
		if o.u != nil && ready != nil {
			ready(o.u)
		}
		p.mu.Lock()
		old := p.install(o)
		p.mu.Unlock()
		if old != nil {
			_ = old.Close()
		}
		p.supervise(o.spec, o.u)
		if o.u != nil && p.onJoin != nil {
			p.onJoin(o.u)
		}
	})
	return err
}

// dialAll dials specs in parallel and reports each as it comes up or
// fails, handing each outcome to each, if not nil, as it arrives. It
// returns the outcomes once all are in and each has returned for all; the
// error joins the failures.
//
// each runs on a goroutine per outcome: preparing a server with many
// tools must not hold back the servers that come up after it, which
// startup_wait would then publish without.
func (p *Pool) dialAll(ctx context.Context, specs []Spec, each func(dialed)) ([]dialed, error) {
	var handed sync.WaitGroup
	defer handed.Wait()
	results := make(chan dialed, len(specs))
	for _, spec := range specs {
		go func() {
			u, took, err := p.dial(ctx, spec)
			results <- dialed{spec, u, took, err}
		}()
	}
	var errs []error
	outcomes := make([]dialed, 0, len(specs))
	for range specs {
		o := <-results
		if o.err != nil {
			errs = append(errs, fmt.Errorf("connecting to %s: %w", o.spec.Name, o.err))
			if ctx.Err() != nil {
				// Stopped, not failed: the caller says so once.
			} else if IsNeedsLogin(o.err) {
				fmt.Fprintf(p.progress, "toolbridge: ✗ %-20s %-15s needs login: run `toolbridge auth login %s`; it is picked up without a restart\n",
					o.spec.Name, o.spec.Transport(), o.spec.Name)
			} else {
				fmt.Fprintf(p.progress, "toolbridge: ✗ %-20s %-15s failed after %d ms: %v\n",
					o.spec.Name, o.spec.Transport(), o.took.Milliseconds(), o.err)
			}
		} else {
			tools, _, _, _ := o.u.Snapshot()
			fmt.Fprintf(p.progress, "toolbridge: ✓ %-20s %-15s %4d tools %6d ms\n",
				o.spec.Name, o.spec.Transport(), len(tools), o.took.Milliseconds())
			for _, why := range o.u.Skipped() {
				fmt.Fprintf(p.progress, "toolbridge: ! %-20s %s\n", o.spec.Name, why)
			}
		}
		if each != nil {
			handed.Go(func() { each(o) })
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, errors.Join(errs...)
}

// install records a dial's outcome as the server's state and returns the
// upstream it replaced, if any, for the caller to close. p.mu is held.
func (p *Pool) install(o dialed) (replaced *Conn) {
	status := ServerStatus{Name: o.spec.Name, Transport: o.spec.Transport(), Took: o.took}
	p.specs[o.spec.Name] = o.spec
	replaced = p.ups[o.spec.Name]
	delete(p.ups, o.spec.Name)
	if o.err != nil {
		status.Error = o.err.Error()
		status.NeedsLogin = IsNeedsLogin(o.err)
	} else {
		tools, _, _, _ := o.u.Snapshot()
		status.Connected, status.Tools = true, len(tools)
		p.ups[o.spec.Name] = o.u
	}
	p.statuses[o.spec.Name] = status
	return replaced
}

// PoolChange is what a reload did to the set of servers, by name.
type PoolChange struct {
	Added, Removed, Changed, Kept []string
}

// Reload brings the pool in line with cfg and specs. Servers whose spec is
// unchanged keep their connection (and process). New and changed servers
// are dialled first, in parallel, while the old ones keep serving; then
// the new set replaces the old at once. retire closes what was replaced,
// each upstream once its last request has ended (bounded by its call
// timeout): the caller calls it after publishing the new catalog, so no
// call is routed to an upstream being closed.
//
// A new or changed server that fails to connect is handled as at
// start-up: reported in the error, served without, and retried in the
// background. Treating the reload as failed instead would let one
// unreachable server block every other change, and leave the config the
// user wrote different from the one running.
func (p *Pool) Reload(ctx context.Context, cfg *config.Config, specs []Spec) (change PoolChange, retire func(), err error) {
	p.mu.RLock()
	current := maps.Clone(p.specs)
	p.mu.RUnlock()
	old := p.cfg.Load()
	// The result and tool bounds are fixed when a connection is made: a
	// change reaches every server only by reconnecting it.
	reconnectAll := old.MaxResultBytes != cfg.MaxResultBytes || old.MaxToolsPerServer != cfg.MaxToolsPerServer

	wanted := map[string]bool{}
	var toDial []Spec
	for _, s := range specs {
		wanted[s.Name] = true
		prev, ok := current[s.Name]
		switch {
		case !ok:
			change.Added = append(change.Added, s.Name)
			toDial = append(toDial, s)
		case reconnectAll || !sameSpec(prev, s):
			change.Changed = append(change.Changed, s.Name)
			toDial = append(toDial, s)
		default:
			change.Kept = append(change.Kept, s.Name)
		}
	}
	for name := range current {
		if !wanted[name] {
			change.Removed = append(change.Removed, name)
		}
	}
	sort.Strings(change.Removed)

	p.cfg.Store(cfg)
	outcomes, err := p.dialAll(ctx, toDial, nil)
	if ctx.Err() != nil {
		// Stopped while dialling (shutdown): keep the old set whole.
		p.cfg.Store(old)
		for _, o := range outcomes {
			if o.u != nil {
				_ = o.u.Close()
			}
		}
		return PoolChange{}, func() {}, fmt.Errorf("reloading: %w", ctx.Err())
	}

	p.mu.Lock()
	var replaced []*Conn
	for _, name := range append(slices.Clone(change.Removed), change.Changed...) {
		if sup := p.sups[name]; sup != nil {
			sup.stop()
			delete(p.sups, name)
		}
		if u := p.ups[name]; u != nil {
			replaced = append(replaced, u)
		}
		delete(p.ups, name)
		delete(p.specs, name)
		delete(p.statuses, name)
	}
	for _, o := range outcomes {
		p.install(o)
	}
	p.mu.Unlock()
	for _, o := range outcomes {
		p.supervise(o.spec, o.u)
	}
	retire = func() {
		for _, u := range replaced {
			p.retire(u)
		}
	}
	return change, retire, err
}

// retire closes u once its requests in flight have ended, or its call
// timeout has passed, or the pool closes, whichever is first.
func (p *Pool) retire(u *Conn) {
	timeout := p.cfg.Load().EffectiveCallTimeout(u.spec.Config)
	p.retiring.Go(func() {
		ctx, cancel := context.WithTimeout(p.life, timeout)
		defer cancel()
		_ = u.inflight.Wait(ctx)
		_ = u.Close()
	})
}

// dial makes one connection attempt, bounded by the connect timeout. On
// failure the server is stopped and the error says what it left behind.
func (p *Pool) dial(ctx context.Context, spec Spec) (*Conn, time.Duration, error) {
	start := time.Now()
	cfg := p.cfg.Load()
	u := newConn(spec, p.environ, p.relay, p.version, p.logger)
	u.maxLine = cfg.MaxResultBytes
	u.maxTools = cfg.EffectiveMaxTools(spec.Config)
	auth, err := p.authFor(spec)
	if err != nil {
		return nil, 0, ScrubError(err, spec.Config)
	}
	u.auth = auth
	timeout := cfg.EffectiveConnectTimeout(spec.Config)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	err = u.connect(cctx, p.life)
	cancel()
	// The time to the failure, not to the cleanup after it.
	took := time.Since(start)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			if u.stillStarting() {
				err = &startingError{after: timeout, command: spec.Config.Command}
			} else {
				err = fmt.Errorf("%w (connect timeout %s)", err, timeout)
			}
		}
		return nil, took, ScrubError(u.abort(err), spec.Config)
	}
	u.watch()
	return u, took, nil
}

// scrubbedError is an error whose message had the server's secrets masked
// (see config.Server.Scrub); it still unwraps to the original.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Unwrap() error { return e.err }

// scrubError masks s's secrets (URL tokens, header and env values) in
// err's message: transport errors quote URLs and may echo headers, and
// these messages reach logs, spans and the model.
func ScrubError(err error, s config.Server) error {
	if err == nil {
		return nil
	}
	msg := s.Scrub(err.Error())
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

// Down reports why a configured server cannot take calls now and when the
// supervisor tries again; why is "" for a server that is up.
func (p *Pool) Down(name string) (why string, next time.Time) {
	p.mu.RLock()
	u := p.ups[name]
	st, known := p.statuses[name]
	p.mu.RUnlock()
	if u != nil {
		select {
		case <-u.lostCh:
		default:
			if !known || st.Connected {
				return "", time.Time{}
			}
		}
	}
	if st.Error != "" {
		return st.Error, st.NextAttempt
	}
	if st.Connecting {
		return "still connecting", time.Time{}
	}
	return "not connected", st.NextAttempt
}

// Statuses returns every configured server's status, sorted by name. A
// stdio server whose process has ended since it connected shows as not
// connected, with how it ended.
func (p *Pool) Statuses() []ServerStatus {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]ServerStatus, 0, len(p.statuses))
	for _, s := range p.statuses {
		if u := p.ups[s.Name]; s.Connected && u != nil {
			if why := u.lost(); why != "" {
				s.Connected, s.Error = false, "lost: "+why
			}
			if dropped := u.Dropped(); dropped > 0 {
				s.ToolsDropped, s.ToolLimit = dropped, u.maxTools
			}
			if u.auth != nil {
				// Connected, but its token stopped working: calls fail
				// until a login.
				if why := u.auth.NeedsLoginNow(); why != "" {
					s.NeedsLogin, s.Error = true, why
				}
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Connected returns the connected upstreams sorted by name.
func (p *Pool) Connected() []*Conn {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]*Conn, 0, len(p.ups))
	for _, u := range p.ups {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

// Get returns the named server's connection, if it has one.
func (p *Pool) Get(name string) (*Conn, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	u, ok := p.ups[name]
	return u, ok
}

// Close disconnects every upstream and stops every child process.
func (p *Pool) Close() error {
	p.cancel()
	p.supervisors.Wait()
	p.retiring.Wait()
	p.mu.Lock()
	ups := p.ups
	p.ups = map[string]*Conn{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(ups))
	for name, u := range ups {
		wg.Go(func() {
			if err := u.Close(); err != nil {
				errs <- fmt.Errorf("closing %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
