package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// revealed tracks, per client session, the deferred tools that tool_search
// added to that session's tool list (disclosure: activate). It is bounded:
// past the limit, the oldest revealed tool goes first.
//
// The tools are added by a tool filter rather than mcp-go's session tools,
// which only streamable HTTP sessions support: a filter works the same on
// stdio, HTTP and in-process sessions. Calls need no registration: a
// deferred tool called by name is routed by routeDeferred.
type revealed struct {
	mu       sync.Mutex
	sessions map[string][]string // session id -> canonical ids, oldest first
}

func newRevealed() *revealed { return &revealed{sessions: map[string][]string{}} }

// reveal adds the found tools to the calling session's tool list and sends
// that session notifications/tools/list_changed, so clients that honour it
// can call the tools directly afterwards.
func (g *Gateway) reveal(ctx context.Context, hits []SearchHit) {
	session := server.ClientSessionFromContext(ctx)
	if session == nil || len(hits) == 0 {
		return
	}
	id := session.SessionID()
	limit := max(1, g.settings().cfg.Search.RevealLimit)

	// With redis.url, a session's reveal set is in the shared table, so
	// that the replica serving its next tools/list lists the same tools.
	if shared := sessionStateFrom(ctx); shared != nil && shared.id == id && g.replicaSessions != nil {
		if g.revealShared(ctx, shared, hits, limit) {
			g.notifyListChanged(ctx, id)
		}
		return
	}
	g.revealed.mu.Lock()
	current, changed := addRevealed(g.revealed.sessions[id], hits, limit)
	g.revealed.sessions[id] = current
	g.revealed.mu.Unlock()
	if changed {
		g.notifyListChanged(ctx, id)
	}
}

// addRevealed adds the found tools that are not already listed to a
// reveal set, keeping the newest limit; it reports whether it changed.
func addRevealed(current []string, hits []SearchHit, limit int) ([]string, bool) {
	have := make(map[string]bool, len(current))
	for _, n := range current {
		have[n] = true
	}
	changed := false
	for _, h := range hits {
		if h.AlreadyListed || have[h.ID] {
			continue
		}
		have[h.ID] = true
		current = append(current, h.ID)
		changed = true
	}
	if over := len(current) - limit; over > 0 {
		current = append([]string(nil), current[over:]...)
	}
	return current, changed
}

// revealShared adds the found tools to a shared session's reveal set in
// one step in Redis, so that two searches of one session on two replicas
// at once both keep what they revealed. If Redis fails, the tools are
// revealed for this request only (the store logs the outage once).
func (g *Gateway) revealShared(ctx context.Context, st *sessionState, hits []SearchHit, limit int) bool {
	var ids []string
	for _, h := range hits {
		if !h.AlreadyListed {
			ids = append(ids, h.ID)
		}
	}
	if len(ids) == 0 {
		return false
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	list, changed, err := g.replicaSessions.tab.AddToList(sctx, st.id, fieldReveal, limit, ids)
	if err != nil {
		if !errors.Is(err, state.ErrNoSession) && !errors.Is(err, state.ErrUnavailable) {
			g.logger.Warn("storing a shared session's state", "session", trace.SessionRef(st.id), "error", err)
		}
		list, changed = addRevealed(st.list(fieldReveal), hits, limit)
	}
	b, _ := json.Marshal(list)
	st.set(fieldReveal, string(b))
	return changed
}

// maxNotifyWait bounds how long a list_changed may wait for its request to
// end (a request context that never ends must not keep a goroutine).
const maxNotifyWait = 30 * time.Second

// notifyListChanged tells a session its tool list changed.
//
// On streamable HTTP this works around an mcp-go v1.2.1 bug: a session's
// notifications go to whichever stream reads its channel first, and the
// forwarder of a POST whose call has just answered may still take one and
// drop it (its select has the channel and its done signal both ready). A
// list_changed sent at the end of tool_search was lost that way in about one
// run in three. It is therefore sent after this request is over, and after
// a short grace for that forwarder to exit, when the session's GET stream is
// the one that reads it. A POST of the same session running at that moment
// can still take it and lose it; only a fix in mcp-go removes that.
// stdio and in-process sessions deliver in order, so they get it at once.
func (g *Gateway) notifyListChanged(ctx context.Context, sessionID string) {
	send := func() {
		_ = g.srv.SendNotificationToSpecificClient(sessionID, string(mcp.MethodNotificationToolsListChanged), nil)
	}
	if g.downstream() != config.ServeHTTP {
		send()
		return
	}
	go func() {
		timer := time.NewTimer(maxNotifyWait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			time.Sleep(forwarderGrace)
		case <-timer.C:
		}
		send()
	}()
}

// forwarderGrace is how long a finished POST's notification forwarder is
// given to exit before a notification is sent (see notifyListChanged).
const forwarderGrace = 20 * time.Millisecond

// addRevealed is the tool filter: it adds the session's revealed tools to
// what mcp-go lists, in the same sorted order as the rest. Sessions that
// revealed nothing get the list back untouched.
func (g *Gateway) addRevealed(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return tools
	}
	var ids []string
	if st := sessionStateFrom(ctx); st != nil && st.id == session.SessionID() {
		ids = st.list(fieldReveal)
	} else {
		g.revealed.mu.Lock()
		ids = g.revealed.sessions[session.SessionID()]
		g.revealed.mu.Unlock()
	}
	if len(ids) == 0 {
		return tools
	}
	cat := g.catalogFor(ctx)
	listed := make(map[string]bool, len(tools))
	for _, t := range tools {
		listed[t.Name] = true
	}
	out := append([]mcp.Tool(nil), tools...)
	for _, id := range ids {
		if t, ok := cat.ByID(id); ok && t.Deferred && !listed[t.Exposed] {
			out = append(out, t.Listed())
			listed[t.Exposed] = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// forget frees a session's revealed tools when it ends.
func (r *revealed) forget(sessionID string) {
	r.mu.Lock()
	delete(r.sessions, sessionID)
	r.mu.Unlock()
}
