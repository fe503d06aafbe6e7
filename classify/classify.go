package classify

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// MetaDeferrable is the _meta key a tool (or the gateway, on its behalf) sets
// to true or false to mark itself deferrable or not.
const MetaDeferrable = "io.toolbridge/deferrable"

// Verdict is one tool's classification.
type Verdict struct {
	// Class is core, deferrable, unknown or disabled.
	Class config.Class `json:"class"`
	// Reason names the rule that decided, for `toolbridge tools` and logs.
	Reason string `json:"reason"`
	// Always is set when the tool's server has `defer: always`: the tool is
	// deferred whenever bridge mode is on, threshold or not.
	Always bool `json:"always,omitempty"`
}

// Classifier applies the classification rules of one config. It is
// immutable after New and safe for concurrent use.
type Classifier struct {
	rules    []toolRule
	core     map[string]string // lower-cased name -> "core_tools" or "never_defer"
	servers  map[string]config.Defer
	lists    map[string]serverLists
	prefixes []string
}

// serverLists are a server's allow_tools and deny_tools globs.
type serverLists struct {
	allow, deny []string
}

type toolRule struct {
	n     int // 1-based position in config.Tools, for reasons and errors
	match string
	class config.Class
}

// New compiles cfg's rules once. It fails on a tool rule whose glob is
// malformed or whose class is not core, deferrable or unknown, and on a
// server whose defer is not auto, always, never or unmarked; the error names
// the rule or server. A nil cfg means config.Default().
func New(cfg *config.Config) (*Classifier, error) {
	if cfg == nil {
		d := config.Default()
		cfg = &d
	}
	c := &Classifier{
		core:     make(map[string]string, len(cfg.CoreTools)+len(cfg.NeverDefer)),
		servers:  make(map[string]config.Defer, len(cfg.Servers)),
		lists:    map[string]serverLists{},
		prefixes: append([]string(nil), cfg.DeferrablePrefixes...),
	}
	var errs []error
	for i, r := range cfg.Tools {
		if r.Class == "" && r.Overrides() {
			continue // an override only: it leaves the class to the other rules
		}
		if err := checkRule(r); err != nil {
			errs = append(errs, fmt.Errorf("checking tool rule %d (match %q, class %q): %w", i+1, r.Match, r.Class, err))
			continue
		}
		c.rules = append(c.rules, toolRule{n: i + 1, match: r.Match, class: r.Class})
	}
	for _, name := range cfg.CoreTools {
		c.core[strings.ToLower(name)] = "core_tools"
	}
	for _, name := range cfg.NeverDefer {
		// never_defer is the user's explicit word, so it names the source
		// when a name is in both lists.
		c.core[strings.ToLower(name)] = "never_defer"
	}
	for name, s := range cfg.Servers {
		if len(s.AllowTools) > 0 || len(s.DenyTools) > 0 {
			for _, g := range append(slices.Clip(s.AllowTools), s.DenyTools...) {
				if _, err := path.Match(g, ""); err != nil {
					errs = append(errs, fmt.Errorf("checking server %q tool glob %q: %w", name, g, err))
				}
			}
			c.lists[name] = serverLists{allow: s.AllowTools, deny: s.DenyTools}
		}
		switch s.Defer {
		case "", config.DeferAuto, config.DeferAlways, config.DeferNever, config.DeferUnmarked:
			c.servers[name] = s.Defer
		default:
			errs = append(errs, fmt.Errorf("checking server %q: unknown defer %q (want %s, %s, %s or %s)",
				name, s.Defer, config.DeferAuto, config.DeferAlways, config.DeferNever, config.DeferUnmarked))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func checkRule(r config.ToolRule) error {
	if r.Match == "" {
		return errors.New("empty match")
	}
	// path.Match checks the whole pattern's syntax even when the name does
	// not match, so matching against "" is a syntax check.
	if _, err := path.Match(r.Match, ""); err != nil {
		return fmt.Errorf("bad glob: %w", err)
	}
	switch r.Class {
	case config.ClassCore, config.ClassDeferrable, config.ClassUnknown, config.ClassDisabled:
		return nil
	}
	return fmt.Errorf("unknown class (want %s, %s, %s or %s)", config.ClassCore, config.ClassDeferrable, config.ClassUnknown, config.ClassDisabled)
}

// Classify returns the class of one tool of server. The first rule that
// matches decides:
//
//  0. the server's deny_tools (a glob matches the tool's name: disabled) and
//     allow_tools (when given, a name no glob matches: disabled);
//  1. a config tool rule (class disabled included) whose glob (path.Match syntax, case-sensitive; "*"
//     does not cross "/") matches the canonical id "server::tool". A rule
//     that makes a tool of a `defer: always` server deferrable keeps Always;
//  2. the core set (core_tools, plus never_defer): the tool's bare name,
//     lower-cased, equals a lower-cased entry. Only the bare name is
//     compared: "github__read_file" or "mcp__fs__read_file" is not core,
//     since a prefixed name is a different tool to the model;
//  3. an explicit server `defer: never` (core), `always` (deferrable, Always
//     set) or `unmarked` (unknown);
//  4. the tool's own marker: _meta "io.toolbridge/deferrable" true
//     (deferrable) or false (unknown), then defer_loading true (deferrable).
//     A _meta value that is not a JSON boolean is ignored;
//  5. the implicit MCP-origin marker: any tool of a named upstream server
//     whose defer is auto or empty (also a server missing from the config)
//     is deferrable;
//  6. a deferrable name prefix (default "mcp_"), compared case-sensitively;
//  7. otherwise unknown.
//
// Rule 5 catches every tool that reaches it from a named server, so only a
// tool without an origin, classified with server "" (one the gateway or a
// caller builds itself, not one from an upstream), ever reaches rule 6.
func (c *Classifier) Classify(server string, tool mcp.Tool) Verdict {
	v, _ := c.classify(server, tool, true)
	return v
}

// Tool is one upstream tool with its server, as ClassifyAll takes it.
type Tool struct {
	Server string
	Tool   mcp.Tool
}

// ClassifyAll classifies a whole catalog. It is Classify for every tool,
// with one rule across tools: a name of core_tools that several servers
// have is core on one of them only, the server whose name sorts first.
// On the others the core set is skipped and the next rule decides
// (usually the MCP-origin marker: deferrable), so four file servers that
// each have read_file list one read_file, not four, and the always-listed
// set stops growing with the servers that share a name. never_defer
// names, tool rules and `defer: never` keep every copy core: they are the
// user's word about those tools.
func (c *Classifier) ClassifyAll(tools []Tool) []Verdict {
	out := make([]Verdict, len(tools))
	byCoreSet := make([]bool, len(tools))
	keeper := map[string]string{} // lower-cased core name -> server keeping it
	for i, t := range tools {
		out[i], byCoreSet[i] = c.classify(t.Server, t.Tool, true)
		if byCoreSet[i] {
			name := strings.ToLower(t.Tool.Name)
			if k, ok := keeper[name]; !ok || t.Server < k {
				keeper[name] = t.Server
			}
		}
	}
	for i, t := range tools {
		if !byCoreSet[i] {
			continue
		}
		if k := keeper[strings.ToLower(t.Tool.Name)]; k != t.Server {
			v, _ := c.classify(t.Server, t.Tool, false)
			v.Reason = fmt.Sprintf("core set: %q is core on server %q; %s", t.Tool.Name, k, v.Reason)
			out[i] = v
		}
	}
	return out
}

// classify is Classify; withCoreSet false skips the core set (rule 2), and
// byCoreSet reports a verdict given by a core_tools name (not never_defer).
func (c *Classifier) classify(server string, tool mcp.Tool, withCoreSet bool) (v Verdict, byCoreSet bool) {
	if l, ok := c.lists[server]; ok {
		for _, g := range l.deny {
			if ok, _ := path.Match(g, tool.Name); ok {
				return Verdict{Class: config.ClassDisabled, Reason: fmt.Sprintf("server %q deny_tools %q", server, g)}, false
			}
		}
		if len(l.allow) > 0 && !slices.ContainsFunc(l.allow, func(g string) bool { ok, _ := path.Match(g, tool.Name); return ok }) {
			return Verdict{Class: config.ClassDisabled, Reason: fmt.Sprintf("server %q allow_tools does not list it", server)}, false
		}
	}
	if len(c.rules) > 0 {
		id := toolid.Join(server, tool.Name)
		for _, r := range c.rules {
			if ok, _ := path.Match(r.match, id); ok {
				// The rule decides the class; whether a deferrable tool
				// waits for the threshold is still its server's word.
				always := r.class == config.ClassDeferrable && c.servers[server] == config.DeferAlways
				return Verdict{Class: r.class, Reason: fmt.Sprintf("tool rule %d %q", r.n, r.match), Always: always}, false
			}
		}
	}
	if src, ok := c.core[strings.ToLower(tool.Name)]; ok && withCoreSet {
		return Verdict{Class: config.ClassCore, Reason: fmt.Sprintf("core set: %q in %s", tool.Name, src)}, src == "core_tools"
	}
	def := c.servers[server]
	switch def {
	case config.DeferNever:
		return Verdict{Class: config.ClassCore, Reason: fmt.Sprintf("server %q defer: never", server)}, false
	case config.DeferAlways:
		return Verdict{Class: config.ClassDeferrable, Reason: fmt.Sprintf("server %q defer: always", server), Always: true}, false
	case config.DeferUnmarked:
		return Verdict{Class: config.ClassUnknown, Reason: fmt.Sprintf("server %q defer: unmarked", server)}, false
	}
	if tool.Meta != nil {
		if v, ok := tool.Meta.AdditionalFields[MetaDeferrable].(bool); ok {
			if v {
				return Verdict{Class: config.ClassDeferrable, Reason: `_meta "` + MetaDeferrable + `": true`}, false
			}
			return Verdict{Class: config.ClassUnknown, Reason: `_meta "` + MetaDeferrable + `": false`}, false
		}
	}
	if tool.DeferLoading {
		return Verdict{Class: config.ClassDeferrable, Reason: "defer_loading: true"}, false
	}
	if server != "" {
		if def == "" {
			def = config.DeferAuto
		}
		return Verdict{Class: config.ClassDeferrable, Reason: fmt.Sprintf("server %q defer: %s (MCP-origin marker)", server, def)}, false
	}
	for _, p := range c.prefixes {
		if p != "" && strings.HasPrefix(tool.Name, p) {
			return Verdict{Class: config.ClassDeferrable, Reason: fmt.Sprintf("name prefix %q", p)}, false
		}
	}
	return Verdict{Class: config.ClassUnknown, Reason: "no rule matched"}, false
}
