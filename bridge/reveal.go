package bridge

import (
	"context"
	"sort"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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
	limit := max(1, g.cfg.Search.RevealLimit)

	g.revealed.mu.Lock()
	current := g.revealed.sessions[id]
	have := make(map[string]bool, len(current))
	for _, n := range current {
		have[n] = true
	}
	changed := false
	for _, h := range hits {
		if !have[h.ID] {
			have[h.ID] = true
			current = append(current, h.ID)
			changed = true
		}
	}
	if over := len(current) - limit; over > 0 {
		current = append([]string(nil), current[over:]...)
	}
	g.revealed.sessions[id] = current
	g.revealed.mu.Unlock()

	if changed {
		_ = g.srv.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationToolsListChanged), nil)
	}
}

// addRevealed is the tool filter: it adds the session's revealed tools to
// what mcp-go lists, in the same sorted order as the rest. Sessions that
// revealed nothing get the list back untouched.
func (g *Gateway) addRevealed(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return tools
	}
	g.revealed.mu.Lock()
	ids := g.revealed.sessions[session.SessionID()]
	g.revealed.mu.Unlock()
	if len(ids) == 0 {
		return tools
	}
	cat := g.Catalog()
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
