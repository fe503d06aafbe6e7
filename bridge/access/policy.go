package access

import (
	"path"
	"slices"
	"strings"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// Policy is the compiled access rules of a config. The zero rules (none
// configured) allow everything: without serve.oauth there is no caller to
// tell apart. With rules, the first rule that selects the caller decides,
// and a caller no rule selects, or a request with no identity at all, gets
// nothing (fail closed).
type Policy struct {
	rules []rule
}

type rule struct {
	groups, subjects []string
	allow, deny      []glob
}

// glob is a pattern on "server::tool", split once at compile time so that
// server checks need not split it again.
type glob struct {
	full   string
	server string // the part before "::"; "*" when the pattern has none
	tool   string // the part after "::"; the whole pattern when it has none
}

func compileGlob(p string) glob {
	g := glob{full: p, server: "*", tool: p}
	if s, t, ok := toolid.Split(p); ok {
		g.server, g.tool = s, t
	}
	return g
}

// match reports whether the pattern matches id. Invalid patterns were
// refused at load (config validation), so an error here means no match.
func (g glob) match(id string) bool {
	ok, err := path.Match(g.full, id)
	return err == nil && ok
}

// NewPolicy compiles rules (validated by config.Validate).
func NewPolicy(rules []config.AccessRule) *Policy {
	p := &Policy{}
	for _, r := range rules {
		cr := rule{groups: slices.Clone(r.Groups), subjects: slices.Clone(r.Subjects)}
		for _, a := range r.Allow {
			cr.allow = append(cr.allow, compileGlob(a))
		}
		for _, d := range r.Deny {
			cr.deny = append(cr.deny, compileGlob(d))
		}
		p.rules = append(p.rules, cr)
	}
	return p
}

// Enabled reports whether there are rules, that is whether callers see
// different things.
func (p *Policy) Enabled() bool { return p != nil && len(p.rules) > 0 }

// Grant is what one caller may see: the rule that selected them, or all or
// nothing. Get it once per request (For) and ask it about each tool.
type Grant struct {
	rule *rule
	all  bool
}

// All is the grant of a gateway without access rules.
var All = Grant{all: true}

// For returns id's grant: the first rule that selects id. A nil id (no
// authenticated caller) is selected by no rule.
func (p *Policy) For(id *Identity) Grant {
	if !p.Enabled() {
		return All
	}
	if id == nil {
		return Grant{}
	}
	for i := range p.rules {
		if p.rules[i].selects(id) {
			return Grant{rule: &p.rules[i]}
		}
	}
	return Grant{}
}

func (r *rule) selects(id *Identity) bool {
	for _, s := range r.subjects {
		if s == id.Subject {
			return true
		}
	}
	for _, g := range r.groups {
		if g == "*" || id.InGroup(g) {
			return true
		}
	}
	return false
}

// Everything reports whether the grant allows every tool without looking:
// a gateway without rules.
func (g Grant) Everything() bool { return g.all }

// Allows reports whether the caller may see and call the tool with the
// canonical id ("server::tool"): an allow glob matches and no deny glob
// does.
func (g Grant) Allows(id string) bool {
	if g.all {
		return true
	}
	if g.rule == nil {
		return false
	}
	allowed := false
	for _, a := range g.rule.allow {
		if a.match(id) {
			allowed = true
			break
		}
	}
	if !allowed {
		return false
	}
	for _, d := range g.rule.deny {
		if d.match(id) {
			return false
		}
	}
	return true
}

// AllowsServer reports whether the caller may reach the server at all:
// its prompts, resources and completions. It is true when some allow glob
// can match a tool of the server and no deny glob takes the whole server
// away ("server::*" or "*").
func (g Grant) AllowsServer(server string) bool {
	if g.all {
		return true
	}
	if g.rule == nil {
		return false
	}
	for _, d := range g.rule.deny {
		if d.tool == "*" && serverMatch(d.server, server) {
			return false
		}
	}
	for _, a := range g.rule.allow {
		if serverMatch(a.server, server) {
			return true
		}
	}
	return false
}

func serverMatch(pattern, server string) bool {
	if pattern == "*" {
		return true
	}
	// A server glob may not contain "::" itself; match it on the name.
	ok, err := path.Match(pattern, server)
	return err == nil && ok && !strings.Contains(server, toolid.Separator)
}

// Key identifies the grant for caches of what it shows: grants with equal
// keys allow the same tools (under one Policy).
func (g Grant) Key() any {
	if g.all {
		return "all"
	}
	return g.rule
}
