package upstream

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/config"
)

// loginPoll is how often a server that needs login looks for a token a
// login in another terminal saved.
const loginPoll = 2 * time.Second

// auths holds one OAuth client per remote server, shared by every
// connection to it, so refreshes are single-flight across reconnects and
// what the server asked for (its challenge, scopes for a step-up) is kept.
type auths struct {
	// open opens the token store (PoolOptions.OpenTokenStore).
	open    func(*config.Config) (oauth.Store, error)
	mu      sync.Mutex
	store   oauth.Store
	opened  bool
	openErr error
	clients map[string]authEntry
}

type authEntry struct {
	spec Spec
	c    *oauth.Client
}

// authFor returns the OAuth client of a remote server. OAuth applies to
// every remote server: one without an auth block sends its requests as
// they are until it answers 401 with a Bearer challenge. Without a token
// store (no state directory) only servers with an auth block fail; the
// others go without OAuth.
func (p *Pool) authFor(spec Spec) (*oauth.Client, error) {
	if spec.InProcess != nil || spec.Config.URL == "" {
		return nil, nil
	}
	a := &p.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.clients[spec.Name]; ok && reflect.DeepEqual(e.spec.Config, spec.Config) {
		return e.c, nil
	}
	if !a.opened {
		open := a.open
		if open == nil {
			open = oauth.OpenStore
		}
		a.store, a.openErr = open(p.cfg.Load())
		a.opened = true
	}
	if a.openErr != nil {
		if spec.Config.AuthType() == "" {
			return nil, nil
		}
		return nil, a.openErr
	}
	oc, err := oauth.ConfigFor(spec.Name, spec.Config, a.store)
	if err != nil {
		return nil, err
	}
	c, err := oauth.New(oc)
	if err != nil {
		return nil, err
	}
	if a.clients == nil {
		a.clients = map[string]authEntry{}
	}
	a.clients[spec.Name] = authEntry{spec: spec, c: c}
	return c, nil
}

// waitForLogin blocks, for a server whose connect failed for want of a
// login, until a login (`toolbridge auth login NAME`, in any process)
// stored a token other than the one the server refused, or ctx ends.
func (p *Pool) waitForLogin(ctx context.Context, spec Spec, err error) {
	if !oauth.IsNeedsLogin(err) {
		return
	}
	c, aerr := p.authFor(spec)
	if aerr != nil || c == nil {
		return
	}
	_ = c.WaitForLogin(ctx, c.StoredToken(ctx), loginPoll)
}

// IsNeedsLogin reports whether err says the server needs a login
// (`toolbridge auth login NAME`).
func IsNeedsLogin(err error) bool {
	var nl *oauth.NeedsLoginError
	return errors.As(err, &nl)
}

// NeedsLogin reports whether the named server cannot take calls until a
// login: it could not connect for want of one, or its token stopped
// working.
func (p *Pool) NeedsLogin(name string) bool {
	p.mu.RLock()
	st, ok := p.statuses[name]
	u := p.ups[name]
	p.mu.RUnlock()
	if ok && st.NeedsLogin {
		return true
	}
	return u != nil && u.auth != nil && u.auth.NeedsLoginNow() != ""
}
