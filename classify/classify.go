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
	// order is each server's position in the config file (see
	// ClassifyAll).
	order map[string]int
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
		order:    map[string]int{},
	}
	for i, name := range cfg.ServerNames() {
		c.order[name] = i
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
// with two rules across tools, both about the core set (core_tools):
//
//   - A deprecated tool is not core by the core set (see Deprecated): the
//     next rule decides, usually the MCP-origin marker (deferrable). When
//     its description names a replacement ("Use read_text_file instead")
//     that the same server has, and no rule of the user's classifies the
//     replacement, the replacement takes its place in the core set; so
//     the filesystem server lists read_text_file, not the read_file it
//     deprecates.
//   - A core_tools name that several servers have is core on one of them
//     only: the server named like the tool (fetch's fetch, not biomcp's;
//     names compared without case, separators and the words "mcp" and
//     "server"), else the server first in the config file (see
//     config.Config.ServerNames; servers the config does not name come
//     after, by name). On the others the core set is skipped and the next
//     rule decides, so four file servers that each have read_file list one
//     read_file, not four, and the always-listed set stops growing with the
//     servers that share a name. A server whose copy is core anyway
//     (`defer: never`) keeps it first, so that no second copy is listed.
//     The reason of every copy names the rule.
//
// never_defer names, tool rules and `defer: never` keep every copy core:
// they are the user's word about those tools.
func (c *Classifier) ClassifyAll(tools []Tool) []Verdict {
	refs := make([]ToolRef, len(tools))
	for i := range tools {
		refs[i] = ToolRef{Server: tools[i].Server, Tool: &tools[i].Tool}
	}
	return c.ClassifyRefs(refs)
}

// ToolRef is one upstream tool with its server, as ClassifyRefs takes it:
// the definition by pointer, not copied.
type ToolRef struct {
	Server string
	Tool   *mcp.Tool
}

// ClassifyRefs is ClassifyAll for tools the caller holds already: a
// gateway's catalog points at its definitions, and copying each (some 400
// bytes a tool) into a []Tool was 4 MB live at start-up's peak for 10,000
// tools.
func (c *Classifier) ClassifyRefs(tools []ToolRef) []Verdict {
	out := make([]Verdict, len(tools))
	src := make([]source, len(tools))
	byName := map[[2]string]int{} // server, tool name -> index
	for i, t := range tools {
		out[i], src[i] = c.classify(t.Server, *t.Tool, true)
		byName[[2]string{t.Server, t.Tool.Name}] = i
	}
	// Deprecated core tools give their place to their replacement.
	for i, t := range tools {
		if src[i] != fromCoreSet {
			continue
		}
		dep, repl := Deprecated(*t.Tool)
		if !dep {
			continue
		}
		v, s := c.classify(t.Server, *t.Tool, false)
		why := fmt.Sprintf("core set: %q is deprecated", t.Tool.Name)
		if j, ok := byName[[2]string{t.Server, repl}]; ok && repl != "" && src[j] == fromTool && out[j].Class != config.ClassCore {
			out[j] = Verdict{Class: config.ClassCore, Reason: fmt.Sprintf("core set: replaces the deprecated %q in core_tools", t.Tool.Name)}
			src[j] = fromCoreSet
			why += fmt.Sprintf(" (core in its place: %q)", repl)
		}
		v.Reason = why + "; " + v.Reason
		out[i], src[i] = v, s
	}
	type keep struct {
		server string
		anyway bool // the copy is core without the core set (defer: never)
		named  bool // the server is named like the tool
		rank   int  // position in config order
	}
	better := func(a, b keep) bool {
		if a.anyway != b.anyway {
			return a.anyway
		}
		if a.named != b.named {
			return a.named
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.server < b.server
	}
	keeper := map[string]keep{} // lower-cased core name -> server keeping it
	count := map[string]int{}
	for i, t := range tools {
		if src[i] != fromCoreSet {
			continue
		}
		name := strings.ToLower(t.Tool.Name)
		k := keep{server: t.Server, named: namedLike(t.Server, t.Tool.Name), rank: c.rank(t.Server)}
		if v, _ := c.classify(t.Server, *t.Tool, false); v.Class == config.ClassCore {
			k.anyway = true
		}
		if cur, ok := keeper[name]; !ok || better(k, cur) {
			keeper[name] = k
		}
		count[name]++
	}
	for i, t := range tools {
		if src[i] != fromCoreSet {
			continue
		}
		name := strings.ToLower(t.Tool.Name)
		if count[name] < 2 {
			continue
		}
		k := keeper[name]
		why := "first of them in the config file"
		switch {
		case k.anyway:
			why = "listed there anyway: defer: never"
		case k.named:
			why = "the server named like the tool"
		case k.rank == len(c.order):
			why = "first of them by name; the config file names none of them"
		}
		if k.server == t.Server {
			out[i].Reason += fmt.Sprintf("; listed here, not on the %d other servers that have it (%s)", count[name]-1, why)
			continue
		}
		v, _ := c.classify(t.Server, *t.Tool, false)
		v.Reason = fmt.Sprintf("core set: %q is core on server %q (%s); %s", t.Tool.Name, k.server, why, v.Reason)
		out[i] = v
	}
	return out
}

// rank is server's position in the config file; servers it does not name
// come after all that it does.
func (c *Classifier) rank(server string) int {
	if r, ok := c.order[server]; ok {
		return r
	}
	return len(c.order)
}

// namedLike reports whether a server is named like a tool: the same
// words, ignoring case, separators and the words "mcp" and "server"
// ("mcp-server-fetch" and "fetch"; "web-search" and "web_search").
func namedLike(server, tool string) bool {
	a, b := nameWords(server), nameWords(tool)
	return a != "" && a == b
}

func nameWords(s string) string {
	var out strings.Builder
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if w != "mcp" && w != "server" {
			out.WriteString(w)
		}
	}
	return out.String()
}

// source is which kind of rule gave a verdict.
type source int

const (
	// fromUser: the server's lists, a tool rule, never_defer or the
	// server's defer: the user's word.
	fromUser source = iota
	// fromCoreSet: a core_tools name.
	fromCoreSet
	// fromTool: the tool's own markers, the MCP-origin marker, a name
	// prefix, or no rule.
	fromTool
)

// classify is Classify; withCoreSet false skips the core set (rule 2), and
// src says which kind of rule decided.
func (c *Classifier) classify(server string, tool mcp.Tool, withCoreSet bool) (v Verdict, src source) {
	if l, ok := c.lists[server]; ok {
		for _, g := range l.deny {
			if ok, _ := path.Match(g, tool.Name); ok {
				return Verdict{Class: config.ClassDisabled, Reason: fmt.Sprintf("server %q deny_tools %q", server, g)}, fromUser
			}
		}
		if len(l.allow) > 0 && !slices.ContainsFunc(l.allow, func(g string) bool { ok, _ := path.Match(g, tool.Name); return ok }) {
			return Verdict{Class: config.ClassDisabled, Reason: fmt.Sprintf("server %q allow_tools does not list it", server)}, fromUser
		}
	}
	if len(c.rules) > 0 {
		id := toolid.Join(server, tool.Name)
		for _, r := range c.rules {
			if ok, _ := path.Match(r.match, id); ok {
				// The rule decides the class; whether a deferrable tool
				// waits for the threshold is still its server's word.
				always := r.class == config.ClassDeferrable && c.servers[server] == config.DeferAlways
				return Verdict{Class: r.class, Reason: fmt.Sprintf("tool rule %d %q", r.n, r.match), Always: always}, fromUser
			}
		}
	}
	if src, ok := c.core[strings.ToLower(tool.Name)]; ok && withCoreSet {
		if src == "core_tools" {
			return Verdict{Class: config.ClassCore, Reason: fmt.Sprintf("core set: %q in %s", tool.Name, src)}, fromCoreSet
		}
		return Verdict{Class: config.ClassCore, Reason: fmt.Sprintf("core set: %q in %s", tool.Name, src)}, fromUser
	}
	def := c.servers[server]
	switch def {
	case config.DeferNever:
		return Verdict{Class: config.ClassCore, Reason: fmt.Sprintf("server %q defer: never", server)}, fromUser
	case config.DeferAlways:
		return Verdict{Class: config.ClassDeferrable, Reason: fmt.Sprintf("server %q defer: always", server), Always: true}, fromUser
	case config.DeferUnmarked:
		return Verdict{Class: config.ClassUnknown, Reason: fmt.Sprintf("server %q defer: unmarked", server)}, fromUser
	}
	if tool.Meta != nil {
		if v, ok := tool.Meta.AdditionalFields[MetaDeferrable].(bool); ok {
			if v {
				return Verdict{Class: config.ClassDeferrable, Reason: `_meta "` + MetaDeferrable + `": true`}, fromUser
			}
			return Verdict{Class: config.ClassUnknown, Reason: `_meta "` + MetaDeferrable + `": false`}, fromUser
		}
	}
	if tool.DeferLoading {
		return Verdict{Class: config.ClassDeferrable, Reason: "defer_loading: true"}, fromUser
	}
	if server != "" {
		if def == "" {
			def = config.DeferAuto
		}
		return Verdict{Class: config.ClassDeferrable, Reason: fmt.Sprintf("server %q defer: %s (MCP-origin marker)", server, def)}, fromTool
	}
	for _, p := range c.prefixes {
		if p != "" && strings.HasPrefix(tool.Name, p) {
			return Verdict{Class: config.ClassDeferrable, Reason: fmt.Sprintf("name prefix %q", p)}, fromTool
		}
	}
	return Verdict{Class: config.ClassUnknown, Reason: "no rule matched"}, fromTool
}
