package bridge

import (
	"bytes"
	"context"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// Per-identity access (serve.oauth with access rules). Every path that
// shows or runs a tool reads the caller's view of the catalog
// (catalogFor): a copy that holds only what the caller's grant allows, so
// that search hits and counts, the catalog hint, the server list,
// tool_describe, tool_call, direct calls and disclosure all answer for a
// hidden tool exactly as for a tool that does not exist. The tool and
// prompt filters and the resource hooks hold the MCP lists to the same
// view.

// grant is the caller's grant under the rules in force.
func (g *Gateway) grant(ctx context.Context) access.Grant {
	return g.settings().access.For(access.FromContext(ctx))
}

// views caches the catalog views of one catalog, one per grant: the
// callers of one rule share it. A new catalog starts a new cache.
type views struct {
	mu  sync.Mutex
	cat *Catalog
	m   map[any]*Catalog
}

// catalogFor returns the catalog as the caller may see it.
func (g *Gateway) catalogFor(ctx context.Context) *Catalog {
	cat := g.Catalog()
	gr := g.grant(ctx)
	if gr.Everything() {
		return cat
	}
	g.views.mu.Lock()
	defer g.views.mu.Unlock()
	if g.views.cat != cat {
		g.views.cat, g.views.m = cat, map[any]*Catalog{}
	}
	key := gr.Key()
	if v, ok := g.views.m[key]; ok {
		return v
	}
	v := g.restrict(cat, gr)
	g.views.m[key] = v
	return v
}

// restrict copies the part of cat that gr allows.
func (g *Gateway) restrict(cat *Catalog, gr access.Grant) *Catalog {
	v := &Catalog{
		Decision:  cat.Decision,
		byID:      map[string]*Tool{},
		byExposed: map[string]*Tool{},
		removedBy: map[string]*Removed{},
		full:      cat,
		grant:     gr,
		servers:   map[string]string{},
	}
	// The servers the caller cannot reach are unknown to them, also to the
	// alias rule of resolve ("server__tool").
	for lower, name := range cat.servers {
		if gr.AllowsServer(name) {
			v.servers[lower] = name
		}
	}
	count := map[string]int{}
	for _, t := range cat.Tools {
		if gr.Allows(t.ID) {
			v.Tools = append(v.Tools, t)
			v.byID[t.ID] = t
			v.byExposed[t.Exposed] = t
			count[t.Server]++
			if t.Deferred {
				v.Deferred = append(v.Deferred, t)
			} else {
				v.Visible = append(v.Visible, t)
			}
		}
	}
	for _, s := range cat.Servers {
		if gr.AllowsServer(s.Name) {
			s.Tools = count[s.Name]
			v.Servers = append(v.Servers, s)
		}
	}
	for _, p := range cat.Prompts {
		if gr.AllowsServer(p.Server) {
			v.Prompts = append(v.Prompts, p)
		}
	}
	for _, r := range cat.Resources {
		if gr.AllowsServer(r.Server) {
			v.Resources = append(v.Resources, r)
		}
	}
	for _, t := range cat.Templates {
		if gr.AllowsServer(t.Server) {
			v.Templates = append(v.Templates, t)
		}
	}
	for _, r := range cat.Removed {
		if gr.Allows(r.ID) {
			v.Removed = append(v.Removed, r)
		}
	}
	for k, r := range cat.removedBy {
		if gr.Allows(r.ID) {
			v.removedBy[k] = r
		}
	}
	live := g.settings()
	hinted := v.Deferred
	if !v.Decision.Bridge {
		hinted = nil
	}
	v.meta = g.metaTools(v, live, hinted)
	return v
}

// filterAccess is the last tool filter: it keeps what the caller's view
// holds (the meta-tools always), with tool_search's description carrying
// the caller's own catalog hint. At call time mcp-go passes only the tool
// called, so a direct call of a hidden tool gets mcp-go's own "tool not
// found", as an unknown name does.
func (g *Gateway) filterAccess(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	view := g.catalogFor(ctx)
	if view.full == nil {
		return tools
	}
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		switch {
		case t.Name == toolid.MetaSearch:
			if len(view.meta) > 0 {
				t.Description = view.meta[0].Tool.Description
			}
		case metaNames[t.Name] || t.Name == removedSentinel:
		default:
			if _, ok := view.byExposed[t.Name]; ok {
				break
			}
			if r, ok := view.removedBy[t.Name]; ok && r.Exposed == t.Name {
				break
			}
			continue
		}
		out = append(out, t)
	}
	return out
}

// filterPrompts keeps the prompts of the servers the caller may reach.
func (g *Gateway) filterPrompts(ctx context.Context, prompts []mcp.Prompt) []mcp.Prompt {
	view := g.catalogFor(ctx)
	if view.full == nil {
		return prompts
	}
	allowed := make(map[string]bool, len(view.Prompts))
	for _, p := range view.Prompts {
		allowed[p.Exposed] = true
	}
	out := make([]mcp.Prompt, 0, len(prompts))
	for _, p := range prompts {
		if allowed[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// filterResources holds resources/list to the caller's servers, and
// shows each resource under its URI rather than its routed key.
func (g *Gateway) filterResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res == nil {
		return
	}
	view := g.catalogFor(ctx)
	allowed := make(map[string]mcp.Resource, len(view.Resources))
	for _, r := range view.Resources {
		allowed[r.Resource.URI] = r.Resource
	}
	out := res.Resources[:0:0]
	for _, r := range res.Resources {
		if orig, ok := allowed[unroute(r.URI)]; ok {
			out = append(out, orig)
		}
	}
	res.Resources = out
}

// filterTemplates holds resources/templates/list to the caller's servers.
func (g *Gateway) filterTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil {
		return
	}
	view := g.catalogFor(ctx)
	allowed := map[string]mcp.ResourceTemplate{}
	for _, t := range view.Templates {
		if t.Template.URITemplate != nil {
			allowed[t.Template.URITemplate.Raw()] = t.Template
		}
	}
	out := res.ResourceTemplates[:0:0]
	for _, t := range res.ResourceTemplates {
		if t.URITemplate == nil {
			continue
		}
		if orig, ok := allowed[unroute(t.URITemplate.Raw())]; ok {
			out = append(out, orig)
		}
	}
	res.ResourceTemplates = out
}

// serverHidden reports whether the caller may not reach serverName (its
// resources, prompts, completions).
func (g *Gateway) serverHidden(ctx context.Context, serverName string) bool {
	return !g.grant(ctx).AllowsServer(serverName)
}

// inFlightKey is whose calls serve.max_in_flight counts together: the
// authenticated caller's (so sessionless 2026-07-28 clients of different
// people no longer share one counter, and one person cannot dodge the
// bound by opening sessions), else the session's.
func inFlightKey(ctx context.Context) string {
	if id := access.FromContext(ctx); id != nil {
		return "subject " + id.Subject
	}
	return sessionID(ctx)
}

// inFlightWho names what inFlightKey counted, for the refusal.
func inFlightWho(key string) string {
	if strings.HasPrefix(key, "subject ") {
		return "caller"
	}
	return "session"
}

// declareToolsListChanged declares the tools listChanged capability that
// the gateway honours itself (mcp-go's own would tell every session of
// every change).
func declareToolsListChanged(_ context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
	if res != nil {
		res.Capabilities.Tools = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}
	}
}

// callers remembers each session's caller (nil without serve.oauth) and
// the fingerprint of the tool list it last could see, so that a change
// only other callers can see is not told to it.
type callers struct {
	mu sync.Mutex
	m  map[string]*caller
}

type caller struct {
	id    *access.Identity
	print []byte
}

// registerCaller remembers the session's caller and what it sees now.
func (g *Gateway) registerCaller(ctx context.Context, s server.ClientSession) {
	c := &caller{id: access.FromContext(ctx)}
	if g.settings().access.Enabled() {
		c.print = toolsPrint(g.catalogFor(ctx))
	}
	g.callers.mu.Lock()
	defer g.callers.mu.Unlock()
	if g.callers.m == nil {
		g.callers.m = map[string]*caller{}
	}
	g.callers.m[s.SessionID()] = c
}

// toolsPrint is the fingerprint of the tools a view lists or finds, with
// the catalog hint.
func toolsPrint(view *Catalog) []byte {
	print := fingerprint(view.Tools, func(t *Tool) any { return []any{t.Exposed, t.Deferred, t.Listed()} })
	if len(view.meta) > 0 {
		print = append(print, fingerprint(view.meta[:1], func(m server.ServerTool) any { return m.Tool.Description })...)
	}
	return print
}

func (c *callers) unregister(_ context.Context, s server.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, s.SessionID())
}

// toolsChanged tells the sessions whose view of the tools changed with
// cat: all of them without access rules, as mcp-go would; with rules,
// only those whose own tool list is different now.
func (g *Gateway) toolsChanged(cat *Catalog) {
	method := string(mcp.MethodNotificationToolsListChanged)
	live := g.settings()
	if !live.access.Enabled() {
		g.srv.SendNotificationToAllClients(method, nil)
		return
	}
	g.callers.mu.Lock()
	sessions := make(map[string]*caller, len(g.callers.m))
	for id, c := range g.callers.m {
		sessions[id] = c
	}
	g.callers.mu.Unlock()
	prints := map[any][]byte{}
	for sid, c := range sessions {
		gr := live.access.For(c.id)
		print, ok := prints[gr.Key()]
		if !ok {
			print = toolsPrint(g.restrict(cat, gr))
			prints[gr.Key()] = print
		}
		g.callers.mu.Lock()
		changed := !bytes.Equal(c.print, print)
		c.print = print
		g.callers.mu.Unlock()
		if changed {
			_ = g.srv.SendNotificationToSpecificClient(sid, method, nil)
		}
	}
}
