package main

import (
	"context"
	"fmt"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

// openState opens the Redis that replicas share, for a command run on
// one of them or by an operator against it. The process ends soon after,
// so the client is not closed.
func openState(ctx context.Context, cfg *config.Config) (*state.Store, error) {
	st, err := state.Open(ctx, cfg.Redis, cfg.ShowFullURLs, nil)
	if err != nil {
		return nil, err
	}
	if err := st.Ping(ctx); err != nil {
		return nil, fmt.Errorf("reaching the shared state: %w", err)
	}
	return st, nil
}

// tokenStore is where the commands keep OAuth tokens: in Redis, sealed,
// when redis.url is set (so a login on an operator's machine serves every
// replica), else the OS keyring or state_dir.
func (a *app) tokenStore(ctx context.Context, cfg *config.Config) (oauth.Store, error) {
	if !cfg.Redis.Enabled() {
		return oauth.OpenStore(cfg)
	}
	st, err := openState(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return state.NewTokens(st, a.environ, cfg.Redis.TokenKeyEnv)
}

// pinStore opens the pins: in Redis when redis.url is set, so that an
// approval releases the tool on every replica, else in state_dir.
func pinStore(ctx context.Context, cfg *config.Config) (*trust.Store, error) {
	if cfg.Redis.Enabled() {
		st, err := openState(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("opening the pins: %w", err)
		}
		return trust.NewSharedStore(state.NewPins(st)), nil
	}
	dir, err := statefile.Open(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("opening the pins: %w", err)
	}
	return trust.NewStore(dir), nil
}
