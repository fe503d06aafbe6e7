package bridge

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/classify"
)

// Connect connects to specs in parallel and publishes what they offer. It
// returns once every server has connected or failed; the error lists the
// failures, and the gateway serves the others anyway.
//
// Start-up never holds a client back: run Connect in a goroutine and serve
// clients at once. initialize is answered whatever the upstreams do;
// tools/list waits for servers still connecting at most startup_wait (see
// awaitStartup), then answers with those that are up. A server that comes
// up after that joins the catalog, the index and the hint at once, the
// activation decision is made again, and clients get list_changed.
//
// Each server's tools are counted and indexed as soon as it is up, while
// the others are still starting (see prepare): the catalog published once
// the slowest is up then only has that one's tools left to do.
func (g *Gateway) Connect(ctx context.Context, specs []upstream.Spec) error {
	g.startup.mu.Lock()
	if g.startup.deadline.IsZero() {
		g.startup.deadline = time.Now().Add(g.settings().cfg.StartupWait)
		g.startup.servers = len(specs)
	}
	g.startup.mu.Unlock()
	err := g.pool.Connect(ctx, specs, g.prepare)
	g.startup.mu.Lock()
	g.startup.connected = true
	g.startup.mu.Unlock()
	g.endStartup(ctx.Err() == nil)
	return err
}

// startup is where the first publication of the catalog stands: tools/list
// waits for it, at most until deadline.
type startup struct {
	mu sync.Mutex
	// deadline is when tools/list stops waiting; zero until Connect.
	deadline time.Time
	// servers is how many servers the first Connect was given.
	servers int
	// ending is set once the first publication has begun: from then on
	// every server that joins is published at once (see joined).
	ending bool
	// done is closed once the first publication is out.
	done chan struct{}
	// connected is set once the first Connect has every server's outcome:
	// from then on no server is still starting.
	connected bool
}

// StartupMetaKey is the tools/list result's _meta key that says the list
// was answered while servers were still starting (see stillStarting).
const StartupMetaKey = "io.toolbridge/startup"

// stillStarting returns the servers whose first connect is still under
// way after start-up stopped waiting for them, sorted: a list answered now
// lacks their tools. Nil before the first publication (the answer waits)
// and once the first Connect is done.
func (g *Gateway) stillStarting() []string {
	g.startup.mu.Lock()
	waiting := g.startup.ending && !g.startup.connected
	g.startup.mu.Unlock()
	if !waiting {
		return nil
	}
	var names []string
	for _, s := range g.pool.Statuses() {
		if s.Connecting {
			names = append(names, s.Name)
		}
	}
	return names
}

// startupNote says that an answer left out servers still starting, and
// which setting waits longer: on stderr and in the answer's _meta, since
// a one-shot client (Inspector's CLI) never sees the list_changed that
// brings their tools later.
func startupNote(names []string, wait time.Duration) string {
	return fmt.Sprintf("%s still connecting after startup_wait (%s): answered without %s; their tools join later with notifications/tools/list_changed. To wait longer, raise startup_wait (--startup-wait 30s, or TOOLBRIDGE_STARTUP_WAIT)",
		plural(len(names), "server", "servers"), wait, them(len(names)))
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// noteStartup adds StartupMetaKey to a tools/list answer given while
// servers are still starting. It runs as an after-list hook, on the
// result mcp-go builds for this answer alone.
func (g *Gateway) noteStartup(_ context.Context, _ any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
	names := g.stillStarting()
	if len(names) == 0 || result == nil {
		return
	}
	wait := g.settings().cfg.StartupWait
	if result.Meta == nil {
		result.Meta = &mcp.Meta{}
	}
	if result.Meta.AdditionalFields == nil {
		result.Meta.AdditionalFields = map[string]any{}
	}
	result.Meta.AdditionalFields[StartupMetaKey] = map[string]any{
		"still_connecting": names,
		"startup_wait":     wait.String(),
		"message":          startupNote(names, wait),
	}
}

// joined publishes a server that came up after start-up stopped waiting.
// Before that, the first publication includes it. The check and the
// pool's install are ordered: a server installed before ending was set is
// in that publication, one installed after sees ending and publishes
// itself.
func (g *Gateway) joined(*upstream.Conn) {
	g.startup.mu.Lock()
	ending := g.startup.ending
	g.startup.mu.Unlock()
	if ending {
		g.rebuild()
	}
}

// awaitStartup holds back a request that reads the catalog (tools/list,
// tools/call, and the prompt, resource and completion requests) while
// servers are still connecting, until they all are up or failed, or
// startup_wait has passed since Connect began; then the catalog is
// published with what is up. It runs as a before-request hook, so the
// request then sees the new catalog. initialize and ping never wait.
func (g *Gateway) awaitStartup(ctx context.Context, _ any, method mcp.MCPMethod, _ any) {
	switch method {
	case mcp.MethodToolsList, mcp.MethodToolsCall, mcp.MethodPromptsList, mcp.MethodPromptsGet,
		mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList, mcp.MethodResourcesRead,
		mcp.MethodResourcesSubscribe, mcp.MethodCompletionComplete:
	default:
		return
	}
	select {
	case <-g.startup.done:
		// Published: nothing to wait for, and no lock to take. Every
		// request passes here, on every session at once.
		return
	default:
	}
	g.startup.mu.Lock()
	deadline, ending := g.startup.deadline, g.startup.ending
	g.startup.mu.Unlock()
	if deadline.IsZero() {
		return // not connecting: nothing to wait for
	}
	if !ending {
		wait := time.NewTimer(time.Until(deadline))
		defer wait.Stop()
		select {
		case <-g.startup.done:
			return
		case <-ctx.Done():
			return
		case <-wait.C:
		}
	}
	g.endStartup(true)
}

// endStartup publishes the catalog for the first time, once, and says
// what start-up gave (see Options.StartSummary; if report is set: not
// after a shutdown cut it short). A second caller waits for the first's
// publication.
func (g *Gateway) endStartup(report bool) {
	g.startup.mu.Lock()
	if g.startup.ending {
		g.startup.mu.Unlock()
		<-g.startup.done
		return
	}
	g.startup.ending = true
	servers := g.startup.servers
	g.startup.mu.Unlock()
	g.rebuild()
	close(g.startup.done)
	if report {
		fmt.Fprintln(g.summary, startupSummary(g.Catalog(), servers))
		if names := g.stillStarting(); len(names) > 0 {
			fmt.Fprintln(g.summary, "toolbridge: "+startupNote(names, g.settings().cfg.StartupWait)+": "+strings.Join(names, ", "))
		}
	}
}

// startupSummary is the one line that says what start-up gave: how many
// servers are up, the tools, whether toolbridge bridges and why, and how
// many tools trust holds (they are in no list, so the line says so).
func startupSummary(cat *Catalog, servers int) string {
	mode := "off"
	if cat.Decision.Bridge {
		mode = "on"
	}
	held := 0
	for _, r := range cat.Removed {
		if r.Kind == RemovedQuarantined {
			held++
		}
	}
	tools := plural(len(cat.Tools), "tool", "tools")
	if held > 0 {
		// Held tools are not listed: without this a start that pinned
		// nothing new reads as a server with no tools.
		tools += fmt.Sprintf(", %d held (toolbridge trust list)", held)
	}
	return fmt.Sprintf("toolbridge: %d of %d servers up, %s; bridge mode %s (%s)",
		len(cat.Servers), servers, tools, mode, cat.Decision.Reason)
}

// prepare does one connected server's share of the next rebuild before
// the catalog includes it: it counts the server's tools (the counter
// caches counts by text, so the rebuild's count of them is nearly free)
// and indexes them (updateIndex skips a server whose documents it holds).
// A tool that another server's tool of the same name will qualify is
// counted under its bare name here: only that name's text is counted
// again. tool_search ignores hits the catalog does not have yet.
func (g *Gateway) prepare(u *upstream.Conn) {
	cat := buildCatalog([]*upstream.Conn{u}, metaNames, g.knownServers())
	var indexed sync.WaitGroup
	indexed.Go(func() {
		// The documents are made before taking g.rebuildMu: a tools/list
		// whose startup_wait ends publishes the catalog (rebuild, under
		// that lock) and must not wait while a server that is not in it
		// yet is being prepared.
		print, _ := docPrint(cat.Tools, nil)
		docs := serverDocuments(u.Name(), cat.Tools)
		g.rebuildMu.Lock()
		defer g.rebuildMu.Unlock()
		if old, ok := g.serverDocs[u.Name()]; !ok || old != print {
			g.installDocs(u.Name(), docs, print)
		}
	})
	live := g.settings()
	classify.CountEach(live.counter, len(cat.Tools), func(i int) mcp.Tool { return cat.Tools[i].Listed() })
	// The trust review of this server's tools, done now so that the
	// rebuild that publishes the catalog finds them in the memo: it runs
	// once the slowest server is up, and everything it does delays the
	// first tools/list.
	defs := make([]trust.Definition, len(cat.Tools))
	for i, t := range cat.Tools {
		defs[i] = definitionOf(t.UpstreamTool())
	}
	live.pins.Prepare(live.cfg.Trust, u.Name(), defs)
	indexed.Wait()
}
