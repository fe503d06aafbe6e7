package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/policy"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

// settings is the part of the gateway a reload replaces as one: the config
// and what is built from it.
type settings struct {
	cfg        *config.Config
	classifier *classify.Classifier
	counter    classify.Counter
	hooks      *policy.Hooks
	// pins are the pinned tool definitions, in cfg.StateDir (in memory
	// when there is none).
	pins *trust.Store
	// calls counts the tool calls that started with these settings: when a
	// reload replaces the hooks, the old ones (an open audit file) are
	// closed only after the last of them ends.
	calls upstream.Activity
	// access is the compiled access rules; tokens validates the callers'
	// access tokens (nil without serve.oauth).
	access *access.Policy
	tokens *access.Validator
}

// settings returns the settings in force. Read them once per operation,
// so that one call sees one config from start to end.
func (g *Gateway) settings() *settings { return g.live.Load() }

// provision builds everything cfg needs before it can replace old (nil at
// start-up). What did not change carries over: the tokenizer, whose cache
// of counts stays warm, and the hooks, whose audit file stays open.
func provision(cfg *config.Config, old *settings, logger *slog.Logger, sh *shared) (*settings, error) {
	classifier, err := classify.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("building classifier: %w", err)
	}
	s := &settings{cfg: cfg, classifier: classifier}
	if s.counter, err = provisionCounter(cfg, old, logger); err != nil {
		return nil, err
	}
	switch {
	case sh != nil:
		// Shared by the replicas; redis is read only at start.
		s.pins = sh.pins
	case old != nil && old.cfg.StateDir == cfg.StateDir:
		s.pins = old.pins // a memory store must outlive a reload
	case cfg.StateDir == "":
		logger.Warn("trust: no state directory (set state_dir, XDG_STATE_HOME or HOME): tool pins last for this run only")
		s.pins = trust.NewMemoryStore()
	default:
		dir, err := statefile.Open(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("opening the state directory: %w", err)
		}
		s.pins = trust.NewStore(dir)
		if err := s.pins.LoadMemo(Version); err != nil {
			// Derived values only: without them every tool is reviewed
			// afresh, and the next save replaces the file.
			logger.Warn("trust: review memo ignored", "error", err)
		}
	}
	s.access = access.NewPolicy(cfg.Access)
	switch {
	case !cfg.Serve.OAuth.Enabled():
	case old != nil && old.tokens != nil && reflect.DeepEqual(old.cfg.Serve.OAuth, cfg.Serve.OAuth):
		s.tokens = old.tokens // its JWKS and validated tokens stay warm
	default:
		if s.tokens, err = access.NewValidator(cfg.Serve.OAuth, access.ValidatorOptions{}); err != nil {
			return nil, fmt.Errorf("building the token validator: %w", err)
		}
	}
	if old != nil && sameHooks(old.cfg, cfg) {
		s.hooks = old.hooks
	} else if s.hooks, err = policy.NewHooks(cfg, logger); err != nil {
		return nil, fmt.Errorf("building hooks: %w", err)
	}
	return s, nil
}

// provisionCounter returns the token counter for cfg: old's when the
// tokenizer is the same, so its cache stays warm, and with a state
// directory one that remembers its counts there between runs (see
// classify.CountMemo).
func provisionCounter(cfg *config.Config, old *settings, logger *slog.Logger) (classify.Counter, error) {
	var base classify.Counter
	if old != nil && old.cfg.Tokenizer == cfg.Tokenizer {
		base = old.counter
		if m, ok := base.(*classify.CountMemo); ok {
			if old.cfg.StateDir == cfg.StateDir {
				return m, nil
			}
			base = m.Counter
		}
	}
	if base == nil {
		var err error
		if base, err = classify.NewCounter(cfg.Tokenizer); err != nil {
			return nil, fmt.Errorf("building token counter: %w", err)
		}
	}
	if cfg.StateDir == "" || !base.Exact() {
		return base, nil // an estimate costs nothing to redo
	}
	dir, err := statefile.Open(cfg.StateDir)
	if err != nil {
		return base, nil // the pin store says so
	}
	m := classify.NewCountMemo(base, dir)
	if err := m.Load(); err != nil {
		// Derived values only: without them the tools are counted
		// afresh, and the next save replaces the file.
		logger.Warn("tokens: count memo ignored", "error", err)
	}
	return m, nil
}

func sameHooks(a, b *config.Config) bool {
	return reflect.DeepEqual(a.Hooks, b.Hooks) && a.Audit == b.Audit
}

// ReloadSummary says what a reload changed.
type ReloadSummary struct {
	upstream.PoolChange
	// NeedRestart lists the config sections that changed but are read
	// only at start: serve (the listener, its security and limits),
	// search.embeddings (the rerank's client and vectors) and telemetry
	// (the exporter). The rest of the new config is in force.
	NeedRestart []string
	// Failed joins the connect errors of added or changed servers. As at
	// start-up they are served without and retried in the background.
	Failed error
}

// Reload applies cfg, and specs built from it, while serving, as Caddy
// does: everything the new config needs is provisioned first (classifier,
// tokenizer, hooks, connections to the new and changed servers) while the
// old config keeps serving; then it is swapped in at once, the catalog is
// republished (clients get list_changed if their view changed), and what
// was replaced is closed once the calls using it have ended. Servers whose
// config did not change keep their connection and process.
//
// An error means the new config was rejected and nothing changed.
func (g *Gateway) Reload(ctx context.Context, cfg *config.Config, specs []upstream.Spec) (ReloadSummary, error) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	old := g.settings()
	live, err := provision(cfg, old, g.logger, g.shared)
	if err != nil {
		return ReloadSummary{}, fmt.Errorf("rejecting the new config: %w", err)
	}
	change, retire, err := g.pool.Reload(ctx, cfg, specs)
	if ctx.Err() != nil {
		// Stopped while connecting (shutdown): the pool kept the old set;
		// what was provisioned for the new one goes.
		if live.hooks != old.hooks {
			_ = live.hooks.Close()
		}
		return ReloadSummary{}, fmt.Errorf("rejecting the new config: %w", err)
	}
	sum := ReloadSummary{PoolChange: change, Failed: err}
	// The grace period is read at shutdown, so it is the one serve setting
	// a reload changes.
	oldServe, newServe := old.cfg.Serve, cfg.Serve
	oldServe.ShutdownGrace, newServe.ShutdownGrace = 0, 0
	// serve.oauth is read per request, so a reload changes it too.
	oldServe.OAuth, newServe.OAuth = config.OAuth{}, config.OAuth{}
	if !reflect.DeepEqual(oldServe, newServe) {
		sum.NeedRestart = append(sum.NeedRestart, "serve")
	}
	if old.cfg.Search.Embeddings != cfg.Search.Embeddings {
		// The rerank's client and vectors are built at start.
		sum.NeedRestart = append(sum.NeedRestart, "search.embeddings")
	}
	if !reflect.DeepEqual(old.cfg.Telemetry, cfg.Telemetry) {
		sum.NeedRestart = append(sum.NeedRestart, "telemetry")
	}
	if old.cfg.Redis != cfg.Redis {
		// The shared state's client and stores are made at start.
		sum.NeedRestart = append(sum.NeedRestart, "redis")
	}

	g.live.Store(live)
	g.rebuild()
	retire()
	if live.hooks != old.hooks {
		g.retireHooks(old)
	}
	g.logger.Info("config reloaded", "added", change.Added, "removed", change.Removed,
		"changed", change.Changed, "kept", len(change.Kept), "need_restart", sum.NeedRestart)
	return sum, nil
}

// retireHooks closes old's hooks once the calls that started with them
// have ended, after the longest a call may take, or when the gateway
// closes, whichever is first.
func (g *Gateway) retireHooks(old *settings) {
	bound := old.cfg.Timeouts.Call + hookRetireSlack
	for _, s := range old.cfg.Servers {
		bound = max(bound, old.cfg.EffectiveCallTimeout(s)+hookRetireSlack)
	}
	g.retiring.Go(func() {
		// The gateway's life ends first thing in Close.
		ctx, cancel := context.WithTimeout(g.life, bound)
		defer cancel()
		if err := old.calls.Wait(ctx); err != nil {
			g.logger.Warn("closing the replaced hooks with calls still running", "calls", old.calls.Running())
		}
		if err := old.hooks.Close(); err != nil {
			g.logger.Warn("closing the replaced hooks", "error", err)
		}
	})
}

// hookRetireSlack is the time after a call's timeout in which its after
// hooks still run.
const hookRetireSlack = 5 * time.Second

// countCalls counts every tool call being served and, once drain has
// begun, refuses new ones with a result the model can act on.
func (g *Gateway) countCalls(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if g.draining.Load() {
			return toolError("toolbridge is shutting down, so %s was not run. Call it again once the gateway is back.", req.Params.Name), nil
		}
		g.calls.Begin()
		defer g.calls.End()
		ctx, w := g.cutoff.watch(ctx)
		defer w.release()
		res, err := next(ctx, req)
		if grace, cut := w.wasCut(); cut {
			return toolError("gateway shutting down: call cancelled after %s (serve.shutdown_grace). Call %s again once the gateway is back.", grace, req.Params.Name), nil
		}
		return res, err
	}
}
