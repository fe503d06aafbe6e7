package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// Why a tool is left out of the catalog.
const (
	// RemovedQuarantined: trust holds the tool (a changed definition, a new
	// server under new_servers: quarantine, or a suspicious description
	// under block_suspicious) until "toolbridge trust approve".
	RemovedQuarantined = "quarantined"
	// RemovedDisabled: a tools rule with class disabled, or the server's
	// allow_tools / deny_tools, removes the tool.
	RemovedDisabled = "disabled"
)

// Removed is a tool the catalog leaves out: it is not listed, not
// searchable, and a call to it gets Message as an isError result.
type Removed struct {
	// Tool is the tool as its server offers it now.
	*Tool
	// Kind is RemovedQuarantined or RemovedDisabled.
	Kind string
	// Reason names the rule or the change, and how to release the tool.
	Reason string
}

// Message is what a call to the tool gets.
func (r *Removed) Message() string {
	return fmt.Sprintf("%s is %s and cannot be called: %s.", r.ID, r.Kind, r.Reason)
}

// ToolTrust is a tool's standing against its pin, for listings.
type ToolTrust struct {
	// State is pinned, new, changed or unchecked (trust: off).
	State trust.State `json:"state,omitempty"`
	// Warning is set when mode warn lets a tool through that mode pin
	// would hold; it says why.
	Warning string `json:"warning,omitempty"`
	// Flags are the suspicious-description findings.
	Flags []trust.Flag `json:"flags,omitempty"`
}

// definitionOf is the part of t that a pin covers.
func definitionOf(t mcp.Tool) trust.Definition {
	in := t.RawInputSchema
	if in == nil {
		in, _ = json.Marshal(t.InputSchema) // a struct of plain fields always encodes
	}
	return trust.Definition{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: in, OutputSchema: t.RawOutputSchema,
		Annotations: hintsOf(t),
	}
}

// hintsOf is t's annotations, for the hint and filter logic of package trust.
func hintsOf(t mcp.Tool) trust.Annotations {
	a := t.Annotations
	return trust.Annotations{
		Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint,
	}
}

// ApproveCommand renders the commands that review and release a held tool
// of server, as reasons name them.
func ApproveCommand(server string) func(tool string) string {
	return func(tool string) string {
		id := toolid.Join(server, tool)
		return fmt.Sprintf("toolbridge trust diff %s, then toolbridge trust approve %s", id, id)
	}
}

// screen takes out of cat the tools a rule disables and those trust
// holds, and records each tool's trust standing. It runs on every rebuild
// under rebuildMu, before the catalog is classified and indexed, so what
// it removes is neither listed nor searchable. Changes since the last
// screen are logged, traced and audited (see noteTrust).
func (g *Gateway) screen(cat *Catalog, live *settings) {
	byServer := map[string][]*Tool{}
	var removed []*Removed
	for _, t := range cat.Tools {
		if v := live.classifier.Classify(t.Server, *t.Tool); v.Class == config.ClassDisabled {
			t.Verdict = v
			removed = append(removed, &Removed{Tool: t, Kind: RemovedDisabled, Reason: "disabled by " + v.Reason})
			continue
		}
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	now := time.Now()
	var changes []trace.TrustChange
	seen := map[string]string{}
	for _, server := range slices.Sorted(maps.Keys(byServer)) {
		tools := byServer[server]
		defs := make([]trust.Definition, len(tools))
		for i, t := range tools {
			defs[i] = definitionOf(t.UpstreamTool())
		}
		review, err := live.pins.Review(live.cfg.Trust, server, defs, now, ApproveCommand(server))
		if err != nil && len(review.Verdicts) > 0 {
			// Read but not saved: this run still compares against the pins.
			g.logger.Warn("trust: saving first-use pins", "server", server, "error", err)
		} else if err != nil {
			// Without the pins nothing can be compared: in mode pin the
			// server's tools are held rather than trusted blindly, and the
			// file is left for the user to fix.
			reason := fmt.Sprintf("its pins cannot be read (%v)", err)
			for _, t := range tools {
				changes = g.noteTrust(changes, seen, t.ID, live.cfg.Trust.Mode == config.TrustPin, reason)
				if live.cfg.Trust.Mode == config.TrustPin {
					removed = append(removed, &Removed{Tool: t, Kind: RemovedQuarantined, Reason: reason})
				}
			}
			continue
		}
		for i, v := range review.Verdicts {
			t := tools[i]
			// The catalog's own flags (a name that shadows an alias) stay.
			t.Trust = ToolTrust{State: v.State, Flags: slices.Concat(v.Flags, t.Trust.Flags)}
			if v.FirstUse {
				changes = append(changes, trace.TrustChange{Server: server, Tool: t.Name, Kind: trace.TrustPinned, Reason: "pinned on first use as " + v.Hash})
			}
			if v.Reason != "" && !v.Held {
				t.Trust.Warning = v.Reason
			}
			changes = g.noteTrust(changes, seen, t.ID, v.Held, v.Reason)
			if v.Held {
				removed = append(removed, &Removed{Tool: t, Kind: RemovedQuarantined, Reason: v.Reason})
			}
		}
	}
	for id, prev := range g.trustSeen {
		if _, still := seen[id]; !still && strings.HasPrefix(prev, trace.TrustQuarantined) {
			// Held before, not offered or not held now: released.
			if _, ok := cat.byID[id]; ok {
				server, tool, _ := toolid.Split(id)
				changes = append(changes, trace.TrustChange{Server: server, Tool: tool, Kind: trace.TrustReleased, Reason: "its definition is approved or pinned again"})
			}
		}
	}
	g.trustSeen = seen
	g.reportTrust(live, changes)
	cat.remove(removed)
}

// saveMemo writes the trust review's memo file and the token counts' in
// the background, so that the next start need not scan or count the
// tools that did not change (see trust.Store.LoadMemo and
// classify.CountMemo); each is written only when it changed. Nothing
// waits for them but Close.
func (g *Gateway) saveMemo(live *settings) {
	g.memoMu.Lock()
	defer g.memoMu.Unlock()
	if g.life.Err() != nil {
		return // closing: a rebuild that came late saves nothing
	}
	g.memoSaves.Go(func() {
		if err := live.pins.SaveMemo(); err != nil {
			g.warnings.warn(g.logger, "review memo", "trust: the review memo was not saved; the next start reviews every tool again", "error", err)
		}
		if m, ok := live.counter.(*classify.CountMemo); ok {
			if err := m.Save(); err != nil {
				g.warnings.warn(g.logger, "count memo", "tokens: the count memo was not saved; the next start counts every tool again", "error", err)
			}
		}
	})
}

// noteTrust records one tool's finding in seen and appends a change when
// it differs from the last screen's.
func (g *Gateway) noteTrust(changes []trace.TrustChange, seen map[string]string, id string, held bool, reason string) []trace.TrustChange {
	if reason == "" {
		return changes
	}
	kind := trace.TrustWarned
	if held {
		kind = trace.TrustQuarantined
	}
	key := kind + ": " + reason
	seen[id] = key
	if g.trustSeen[id] == key {
		return changes
	}
	server, tool, _ := toolid.Split(id)
	return append(changes, trace.TrustChange{Server: server, Tool: tool, Kind: kind, Reason: reason})
}

// reportTrust logs, traces and audits trust changes.
// First-use pins are logged as one line per server (with how many), not
// one per tool: a first run with 50 tools would print 50 lines.
func (g *Gateway) reportTrust(live *settings, changes []trace.TrustChange) {
	pinned := map[string]int{}
	for _, c := range changes {
		id := toolid.Join(c.Server, c.Tool)
		switch c.Kind {
		case trace.TrustPinned:
			pinned[c.Server]++
		case trace.TrustReleased:
			g.logger.Info("trust: released", "tool", id)
		default:
			g.logger.Warn("trust: tool "+c.Kind, "tool", id, "reason", c.Reason)
		}
		if c.Kind != trace.TrustPinned {
			// The audit log records calls and the changes that stop or
			// warn about them; a first-use pin is only logged.
			live.hooks.AuditTrust(c.Server, c.Tool, c.Kind, c.Reason)
		}
	}
	for _, server := range slices.Sorted(maps.Keys(pinned)) {
		g.logger.Info("trust: pinned on first use", "server", server, "tools", pinned[server])
	}
	// One review span per server, an event per tool (trace.RecordTrustReview).
	byServer := map[string][]trace.TrustChange{}
	for _, c := range changes {
		byServer[c.Server] = append(byServer[c.Server], c)
	}
	for _, server := range slices.Sorted(maps.Keys(byServer)) {
		g.tel.RecordTrustReview(context.Background(), server, byServer[server])
	}
}

// remove takes the removed tools out of the catalog's lists and lookups.
func (c *Catalog) remove(removed []*Removed) {
	c.Removed = removed
	c.removedBy = make(map[string]*Removed, 2*len(removed))
	if len(removed) == 0 {
		return
	}
	for _, r := range removed {
		delete(c.byID, r.ID)
		delete(c.byExposed, r.Exposed)
		c.removedBy[r.ID] = r
		c.removedBy[r.Exposed] = r
	}
	slices.SortFunc(c.Removed, func(a, b *Removed) int { return strings.Compare(a.ID, b.ID) })
	kept := c.Tools[:0:0]
	for _, t := range c.Tools {
		if _, gone := c.removedBy[t.ID]; !gone {
			kept = append(kept, t)
		}
	}
	c.Tools = kept
	count := map[string]int{}
	for _, t := range kept {
		count[t.Server]++
	}
	for i := range c.Servers {
		c.Servers[i].Tools = count[c.Servers[i].Name]
	}
}

// findRemoved finds a removed tool by any name a model might use for it:
// its id, exposed name or bare name, server__tool or mcp__server__tool,
// in any case.
func (c *Catalog) findRemoved(name string) (*Removed, bool) {
	if r, ok := c.removedBy[name]; ok {
		return r, true
	}
	for _, r := range c.Removed {
		for _, form := range []string{r.ID, r.Exposed, r.Name, r.Server + "__" + r.Name, "mcp__" + r.Server + "__" + r.Name} {
			if strings.EqualFold(name, form) {
				return r, true
			}
		}
	}
	return nil, false
}

// removedSentinel is a stand-in registered with the others so that a tool
// list holding stand-ins always holds two tools or more (see hideRemoved).
const removedSentinel = "toolbridge__removed"

// removedTools are the stand-ins registered for removed tools: a client
// that calls one by its old name (from a list cached before the change)
// gets the reason as an isError result rather than "tool not found".
// hideRemoved keeps them out of tools/list.
func (g *Gateway) removedTools(cat *Catalog) []server.ServerTool {
	if len(cat.Removed) == 0 {
		return nil
	}
	out := make([]server.ServerTool, 0, len(cat.Removed)+1)
	out = append(out, server.ServerTool{
		Tool: mcp.Tool{Name: removedSentinel, InputSchema: mcp.ToolInputSchema{Type: "object"}},
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolError("%s is not a tool.", removedSentinel), nil
		},
	})
	for _, r := range cat.Removed {
		msg := r.Message()
		out = append(out, server.ServerTool{
			Tool: mcp.Tool{Name: r.Exposed, Description: msg, InputSchema: mcp.ToolInputSchema{Type: "object"}},
			Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				t, msg := g.recheck(r)
				if t == nil {
					return toolError("%s", msg), nil
				}
				return g.dispatch(ctx, call{tool: t, args: rawArguments(req), meta: req.Params.Meta, via: trace.ViaDirect})
			},
		})
	}
	return out
}

// recheck is what a call to a removed tool gets: the tool, when it has
// been released since, or the reason it cannot run. A quarantined tool
// may have been approved by "toolbridge trust approve" in another process,
// so the catalog is screened again first, at most once per rescreenEvery.
func (g *Gateway) recheck(r *Removed) (*Tool, string) {
	if r.Kind == RemovedQuarantined && g.rescreenDue() {
		g.rebuild()
		cat := g.Catalog()
		if t, ok := cat.ByID(r.ID); ok {
			return t, ""
		}
		if now, ok := cat.removedBy[r.ID]; ok {
			r = now
		}
	}
	return nil, r.Message()
}

// rescreenEvery bounds how often calls to quarantined tools re-read the
// pins: a model retrying a held tool must not rebuild the catalog in a loop.
const rescreenEvery = 2 * time.Second

func (g *Gateway) rescreenDue() bool {
	now := time.Now().UnixNano()
	last := g.lastRescreen.Load()
	return now-last >= int64(rescreenEvery) && g.lastRescreen.CompareAndSwap(last, now)
}

// hideRemoved is the tool filter that keeps the stand-ins of removed
// tools out of tools/list while letting them be called. mcp-go runs the
// filters for a list with every registered tool, and for a call with the
// one tool called (mcp-go v1.2.1 passesToolFilters): a single tool is a
// call, since a list holding stand-ins always holds their sentinel too.
// It must be the first filter, before any that adds tools.
func (g *Gateway) hideRemoved(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	cat := g.Catalog()
	if len(cat.Removed) == 0 || len(tools) == 1 {
		return tools
	}
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if r, ok := cat.removedBy[t.Name]; (!ok || r.Exposed != t.Name) && t.Name != removedSentinel {
			out = append(out, t)
		}
	}
	return out
}

// Pins is the store of pinned tool definitions the gateway reviews
// against, for the trust commands.
func (g *Gateway) Pins() *trust.Store { return g.settings().pins }

// Definitions returns, per connected server, the definitions of the tools
// it offers now, quarantined ones included and disabled ones left out:
// what "toolbridge trust" compares with the pins and approves. A
// connected server without tools has an empty entry.
func (c *Catalog) Definitions() map[string][]trust.Definition {
	out := make(map[string][]trust.Definition, len(c.Servers))
	for _, s := range c.Servers {
		out[s.Name] = []trust.Definition{}
	}
	for _, t := range c.Tools {
		out[t.Server] = append(out[t.Server], definitionOf(t.UpstreamTool()))
	}
	for _, r := range c.Removed {
		if r.Kind == RemovedQuarantined {
			out[r.Server] = append(out[r.Server], definitionOf(r.Tool.UpstreamTool()))
		}
	}
	for _, defs := range out {
		slices.SortFunc(defs, func(a, b trust.Definition) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}
