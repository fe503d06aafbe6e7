package bridge

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// subscriptions forwards resource subscriptions upstream. mcp-go keeps each
// client session's subscriptions; the gateway is one session to each
// upstream, so it subscribes there when the first client subscribes to a
// URI and unsubscribes when the last one leaves.
type subscriptions struct {
	g     *Gateway
	mu    sync.Mutex
	count map[string]int // uri -> subscribed clients
}

func newSubscriptions(g *Gateway) *subscriptions {
	return &subscriptions{g: g, count: map[string]int{}}
}

func (s *subscriptions) subscribed(ctx context.Context, id any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
	if u := s.g.resourceOwner(req.Params.URI); u != nil && s.g.serverHidden(ctx, u.Name()) {
		return // not the caller's: nothing is forwarded for them
	}
	s.g.shareSubscription(ctx, req.Params.URI, true)
	s.add(ctx, req.Params.URI)
}

// add counts one more client subscribed to uri, and subscribes upstream
// for the first.
func (s *subscriptions) add(_ context.Context, uri string) {
	s.mu.Lock()
	s.count[uri]++
	first := s.count[uri] == 1
	s.mu.Unlock()
	if first {
		s.forward(uri, string(mcp.MethodResourcesSubscribe))
	}
}

func (s *subscriptions) unsubscribed(ctx context.Context, id any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
	if u := s.g.resourceOwner(req.Params.URI); u != nil && s.g.serverHidden(ctx, u.Name()) {
		return
	}
	s.g.shareSubscription(ctx, req.Params.URI, false)
	s.mu.Lock()
	n := s.count[req.Params.URI]
	if n <= 0 {
		s.mu.Unlock()
		return
	}
	if n == 1 {
		delete(s.count, req.Params.URI)
	} else {
		s.count[req.Params.URI] = n - 1
	}
	s.mu.Unlock()
	if n == 1 {
		s.forward(req.Params.URI, string(mcp.MethodResourcesUnsubscribe))
	}
}

// forward sends (un)subscribe to the server that lists the URI, or whose
// template matches it. Best effort: a server that does not support
// subscriptions simply sends no updates.
func (s *subscriptions) forward(uri, method string) {
	u := s.g.resourceOwner(uri)
	if u == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.g.settings().cfg.EffectiveCallTimeout(u.Spec().Config))
	defer cancel()
	if _, err := u.Request(ctx, method, map[string]any{"uri": uri}); err != nil {
		s.g.logger.Debug("forwarding resource subscription", "server", u.Name(), "uri", uri, "method", method, "error", err)
	}
}

// resourceOwner returns the upstream that lists uri as a resource, or whose
// resource template matches it.
func (g *Gateway) resourceOwner(uri string) *upstream.Conn {
	cat := g.Catalog()
	for _, r := range cat.Resources {
		if r.Resource.URI == uri {
			u, _ := g.pool.Get(r.Server)
			return u
		}
	}
	for _, t := range cat.Templates {
		if t.Template.URITemplate != nil && t.Template.URITemplate.Regexp().MatchString(uri) {
			u, _ := g.pool.Get(t.Server)
			return u
		}
	}
	return nil
}
