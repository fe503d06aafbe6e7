package bridge

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// revealed tracks, per client session, the deferred tools that tool_search
// added to that session's tool list (disclosure: activate). It is bounded:
// past the limit, the oldest revealed tool goes first.
type revealed struct {
	mu       sync.Mutex
	sessions map[string][]string // session id -> exposed names, oldest first
}

func newRevealed() *revealed { return &revealed{sessions: map[string][]string{}} }

// reveal adds the found tools to the calling session's tool list and tells
// the client (mcp-go sends notifications/tools/list_changed to that session
// only). Clients that honour it can then call the tools directly.
func (g *Gateway) reveal(ctx context.Context, hits []SearchHit) {
	session := server.ClientSessionFromContext(ctx)
	if session == nil || len(hits) == 0 {
		return
	}
	id := session.SessionID()
	cat := g.Catalog()
	limit := max(1, g.cfg.Search.RevealLimit)

	g.revealed.mu.Lock()
	current := g.revealed.sessions[id]
	have := make(map[string]bool, len(current))
	for _, n := range current {
		have[n] = true
	}
	var add []server.ServerTool
	for _, h := range hits {
		t, ok := cat.ByID(h.ID)
		if !ok || have[t.Exposed] {
			continue
		}
		have[t.Exposed] = true
		current = append(current, t.Exposed)
		add = append(add, server.ServerTool{Tool: t.Listed(), Handler: g.directHandler(t)})
	}
	var evict []string
	if over := len(current) - limit; over > 0 {
		evict = append(evict, current[:over]...)
		current = append([]string(nil), current[over:]...)
	}
	g.revealed.sessions[id] = current
	g.revealed.mu.Unlock()

	if len(evict) > 0 {
		_ = g.srv.DeleteSessionTools(id, evict...)
	}
	if len(add) > 0 {
		_ = g.srv.AddSessionTools(id, add...)
	}
}

// forget frees a session's revealed tools when it ends.
func (r *revealed) forget(sessionID string) {
	r.mu.Lock()
	delete(r.sessions, sessionID)
	r.mu.Unlock()
}

// count returns how many tools are revealed to a session.
func (r *revealed) count(sessionID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions[sessionID])
}
