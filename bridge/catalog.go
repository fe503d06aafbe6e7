package bridge

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// Tool is one upstream tool as the catalog holds it.
type Tool struct {
	// ID is the canonical id "server::tool".
	ID string
	// Server is the upstream's configured name.
	Server string
	// Name is the tool's name on its upstream.
	Name string
	// Exposed is the name clients see when the tool is listed directly:
	// the bare name, or "server__tool" when two servers share the name,
	// always matching ^[a-zA-Z0-9_-]{1,64}$.
	Exposed string
	// Tool is the definition the model sees: the upstream's (schemas kept
	// raw in RawInputSchema / RawOutputSchema) with the config's overrides
	// applied (description, annotations, fixed arguments left out of the
	// input schema). UpstreamTool is the upstream's own, which trust pins.
	//
	// Without overrides it points at the upstream connection's own decoded
	// tool (upstream.Conn's list), so a catalog of 10,000 tools holds each
	// definition once, not a second copy per catalog: it is shared and
	// must never be written through. An override allocates its own.
	Tool *mcp.Tool
	// upstream is the upstream's definition when an override changed Tool.
	upstream *mcp.Tool
	// override is what the config's tool rules change, or nil.
	override *override

	// Verdict is the tool's class and the rule that gave it.
	Verdict classify.Verdict
	// Tokens is what the tool's schema costs the client when listed.
	Tokens int
	// Deferred tools are not listed in bridge mode; tool_search finds them
	// and tool_call runs them.
	Deferred bool
	// Trust is the tool's standing against its pinned definition.
	Trust ToolTrust
}

// Listed returns the tool as clients see it in tools/list: the upstream's
// definition under its exposed name, less invisible characters.
func (t *Tool) Listed() mcp.Tool {
	listed := *t.Tool
	listed.Name = t.Exposed
	// What the model reads carries no invisible characters (see
	// trust.StripInvisible); a definition without any is kept as is.
	listed.Title = trust.StripInvisible(listed.Title)
	listed.Description = trust.StripInvisible(listed.Description)
	listed.Annotations.Title = trust.StripInvisible(listed.Annotations.Title)
	listed.RawInputSchema = visibleSchema(listed.RawInputSchema)
	listed.RawOutputSchema = visibleSchema(listed.RawOutputSchema)
	return listed
}

// Prompt is one upstream prompt.
type Prompt struct {
	Server  string
	Exposed string
	Prompt  mcp.Prompt
}

// ServerInfo summarizes one connected upstream for catalog hints.
type ServerInfo struct {
	Name        string
	Description string
	Tools       int
}

// Catalog is an immutable snapshot of everything the upstreams offer. A new
// one is built whenever an upstream connects, changes or goes away.
type Catalog struct {
	// Tools sorted by ID.
	Tools   []*Tool
	Prompts []*Prompt
	// Resources and Templates carry the server that owns them.
	Resources []ServerResource
	Templates []ServerTemplate
	Servers   []ServerInfo

	// Decision is the activation decision for this catalog.
	Decision classify.Decision
	// Visible are the tools listed directly (all of them in pass-through);
	// Deferred the rest. Both sorted by ID.
	Visible, Deferred []*Tool
	// MetaTokens is what the meta-tools cost the client in bridge mode,
	// catalog hint included (also when not bridging: then it is what
	// bridging would cost, for the report).
	MetaTokens int
	meta       []server.ServerTool
	// OverrideProblems are the config's tool overrides that could not be
	// applied: a rule that matches no tool, a rename that collides.
	OverrideProblems []string
	// Removed are the tools left out, quarantined or disabled (sorted by
	// ID); removedBy finds them by ID and exposed name.
	Removed   []*Removed
	removedBy map[string]*Removed

	byID      map[string]*Tool
	byExposed map[string]*Tool
	// servers maps every known server name (configured or connected), in
	// lower case, to its name: the alias rule of resolve reads
	// "server__tool" against it.
	servers map[string]string
	// full is, in a caller's view (see catalogFor), the whole catalog the
	// view was cut from; nil in the whole catalog.
	full  *Catalog
	grant access.Grant // the grant a view was cut for
	// replacements memoizes instead: a deprecated tool's id to the id of
	// the tool it names in its place ("" when this catalog has none).
	// Filled as searches find deprecated tools.
	replacements sync.Map
}

// ServerResource is a resource and the server it came from.
type ServerResource struct {
	Server   string
	Resource mcp.Resource
}

// ServerTemplate is a resource template and the server it came from.
type ServerTemplate struct {
	Server   string
	Template mcp.ResourceTemplate
}

// ByID returns the tool with canonical id "server::tool".
func (c *Catalog) ByID(id string) (*Tool, bool) {
	t, ok := c.byID[id]
	return t, ok
}

// ByExposed returns the tool clients know under name.
func (c *Catalog) ByExposed(name string) (*Tool, bool) {
	t, ok := c.byExposed[name]
	return t, ok
}

// buildCatalog assembles a catalog from the connected upstreams (sorted by
// name). reserved are names the gateway itself uses (the meta-tools): an
// upstream tool of that name is exposed qualified, as on a collision.
// known are the server names the alias rule answers for (the configured
// ones; connected ones are added): a tool whose name is an alias form of
// one of them ("mcp__h__echo" offered by server evil) shadows that alias,
// so it is exposed qualified and flagged (see shadowFlag and resolve).
func buildCatalog(ups []*upstream.Conn, reserved map[string]bool, known []string) *Catalog {
	c := &Catalog{byID: map[string]*Tool{}, byExposed: map[string]*Tool{}, servers: map[string]string{}}
	for _, name := range known {
		c.servers[strings.ToLower(name)] = name
	}
	for _, u := range ups {
		c.servers[strings.ToLower(u.Name())] = u.Name()
	}
	toolCount := map[string]int{}
	promptCount := map[string]int{}
	type snap struct {
		u         *upstream.Conn
		tools     []mcp.Tool
		prompts   []mcp.Prompt
		resources []mcp.Resource
		templates []mcp.ResourceTemplate
	}
	snaps := make([]snap, 0, len(ups))
	for _, u := range ups {
		tools, prompts, resources, templates := u.Snapshot()
		snaps = append(snaps, snap{u, tools, prompts, resources, templates})
		for _, t := range tools {
			toolCount[t.Name]++
		}
		for _, p := range prompts {
			promptCount[p.Name]++
		}
	}
	// hasTool answers shadowsAlias from every server's tools, in any case.
	// It is needed only for a tool named like its own server's alias, which
	// is rare: the set is made the first time.
	var ids map[string]bool
	hasTool := func(id string) bool {
		if ids == nil {
			ids = map[string]bool{}
			for _, s := range snaps {
				for _, t := range s.tools {
					ids[strings.ToLower(toolid.Join(s.u.Name(), t.Name))] = true
				}
			}
		}
		return ids[strings.ToLower(id)]
	}
	seenURI := map[string]bool{}
	for _, s := range snaps {
		name := s.u.Name()
		c.Servers = append(c.Servers, ServerInfo{Name: name, Description: s.u.Description(), Tools: len(s.tools)})
		for i := range s.tools {
			t := &s.tools[i] // shared with the connection: see Tool.Tool
			id := toolid.Join(name, t.Name)
			if _, dup := c.byID[id]; dup {
				continue // a server that lists a name twice: the first wins
			}
			shadow, shadows := c.shadowsAlias(name, t.Name, hasTool)
			collides := toolCount[t.Name] > 1 || reserved[t.Name] || shadows
			tool := &Tool{ID: id, Server: name, Name: t.Name, Exposed: exposedName(name, t.Name, collides), Tool: t}
			if shadows {
				tool.Trust.Flags = []trust.Flag{shadowFlag(tool, shadow)}
			}
			c.Tools = append(c.Tools, tool)
			c.byID[id] = tool
		}
		for _, p := range s.prompts {
			c.Prompts = append(c.Prompts, &Prompt{Server: name, Exposed: exposedName(name, p.Name, promptCount[p.Name] > 1), Prompt: p})
		}
		for _, r := range s.resources {
			// URIs are global: the first server to list one serves it.
			if !seenURI[r.URI] {
				seenURI[r.URI] = true
				c.Resources = append(c.Resources, ServerResource{Server: name, Resource: r})
			}
		}
		for _, t := range s.templates {
			c.Templates = append(c.Templates, ServerTemplate{Server: name, Template: t})
		}
	}
	sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].ID < c.Tools[j].ID })
	// A sanitized or qualified name can still meet another tool's bare name
	// (server "a" tool "b__c" vs server "a__b" tool "c"): the later one, in
	// id order, gets a hash suffix so every exposed name stays unique.
	for _, t := range c.Tools {
		if _, taken := c.byExposed[t.Exposed]; taken || reserved[t.Exposed] {
			t.Exposed = withHashSuffix(t.Exposed, t.ID)
		}
		c.byExposed[t.Exposed] = t
	}
	return c
}

// reindexExposed rebuilds the exposed-name lookup after renames.
func (c *Catalog) reindexExposed() {
	c.byExposed = make(map[string]*Tool, len(c.Tools))
	for _, t := range c.Tools {
		c.byExposed[t.Exposed] = t
	}
}

// knownServer returns the name of the known server called name in any
// case.
func (c *Catalog) knownServer(name string) (string, bool) {
	s, ok := c.servers[strings.ToLower(name)]
	return s, ok
}

// shadowedAlias reports whether name reads as an alias form,
// "server__tool" or "mcp__server__tool" (any case), of a known server, and
// gives the first such reading. Such a name belongs to that server under
// resolve's alias rule, whoever offers a tool of that name.
func (c *Catalog) shadowedAlias(name string) (toolid.Alias, bool) {
	for _, a := range toolid.SplitAlias(name) {
		if server, ok := c.knownServer(a.Server); ok {
			a.Server = server
			return a, true
		}
	}
	return toolid.Alias{}, false
}

// shadowsAlias reports the alias that a tool of server named name would
// take from another tool: a reading of name as an alias form whose server
// part is another known server, or this server when the tool the alias
// names exists too ("h__echo" and "echo" both on h). A server's own tool
// named "h__search" when h has no "search" takes nothing from anyone and
// keeps its bare name. hasTool reports whether a tool of that id, in any
// case, exists.
func (c *Catalog) shadowsAlias(server, name string, hasTool func(id string) bool) (toolid.Alias, bool) {
	for _, a := range toolid.SplitAlias(name) {
		known, ok := c.knownServer(a.Server)
		if !ok {
			continue
		}
		if known != server || hasTool(toolid.Join(known, a.Tool)) {
			a.Server = known
			return a, true
		}
	}
	return toolid.Alias{}, false
}

// shadowFlag is the flag of a tool whose name is an alias form of the tool
// a.Tool of server a.Server.
func shadowFlag(t *Tool, a toolid.Alias) trust.Flag {
	return trust.Flag{
		Rule:  trust.RuleShadowsAlias,
		Where: trust.FieldName,
		Why: fmt.Sprintf("is named like an alias of %s; calls by that name go to server %q, never to this tool, which answers only to %s or %s",
			toolid.Join(a.Server, a.Tool), a.Server, t.ID, t.Exposed),
	}
}
