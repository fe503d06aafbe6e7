package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// override is what the config's tool rules change of one tool. The
// upstream's definition is kept apart (Tool.upstream): it is what trust
// pins and compares, so an override never hides an upstream change.
type override struct {
	// keywords are extra search terms, indexed with the description.
	keywords []string
	// fixed are the fixed arguments, JSON-encoded, by name.
	fixed map[string]json.RawMessage
	// renamed says a rule's name became the tool's exposed name.
	renamed bool
}

// UpstreamTool returns the tool's definition exactly as its upstream sent
// it: what trust pins. Tool is the same less the overrides.
func (t *Tool) UpstreamTool() mcp.Tool {
	if t.upstream != nil {
		return *t.upstream
	}
	return *t.Tool
}

// renamedAs is the tool's exposed name when a tools: rule renamed it, for
// spans and hooks (which carry the real tool as well); "" otherwise.
func (t *Tool) renamedAs() string {
	if t.override == nil || !t.override.renamed {
		return ""
	}
	return t.Exposed
}

// Keywords are the tool's extra search terms from the config's overrides.
func (t *Tool) Keywords() []string {
	if t.override == nil {
		return nil
	}
	return t.override.keywords
}

// searchText is what the index reads of the tool beyond its definition:
// the keywords of its overrides, and its new name when renamed (so the
// name the model knows finds it). Indexed as description text: the
// ranking is the search package's, unchanged.
func (t *Tool) searchText() string {
	if t.override == nil {
		return ""
	}
	parts := slices.Clone(t.override.keywords)
	if t.override.renamed {
		parts = append(parts, t.Exposed)
	}
	return strings.Join(parts, ". ")
}

// FixedArgs are the names of the arguments the config fixes for this tool,
// sorted.
func (t *Tool) FixedArgs() []string {
	if t.override == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(t.override.fixed))
}

// overrideRule is a config tool rule that overrides, with its position.
type overrideRule struct {
	n int // 0-based position in config.Tools, as errors name it
	config.ToolRule
}

// applyOverrides applies the config's tool overrides to cat, a catalog
// fresh from buildCatalog (before screen, so a held tool is held under the
// name the model would know it by). For each field the first matching
// rule that sets it wins; fixed arguments merge by name, the first rule
// again winning. It returns the problems to report: a rule that matches
// no tool of the servers that have listed, and a rename that would take
// another tool's exposed name (that rename is not applied). A rule whose
// servers have not all listed yet is not judged: a server that is slow or
// down must not make a correct config look wrong.
func (c *Catalog) applyOverrides(rules []config.ToolRule, reserved map[string]bool) []string {
	var ors []overrideRule
	for i, r := range rules {
		if r.Overrides() {
			ors = append(ors, overrideRule{i, r})
		}
	}
	if len(ors) == 0 {
		return nil
	}
	matched := make([]bool, len(ors))
	var problems []string
	for _, t := range c.Tools {
		var applied []overrideRule
		for j, r := range ors {
			if ok, _ := path.Match(r.Match, t.ID); ok {
				matched[j] = true
				applied = append(applied, r)
			}
		}
		if len(applied) == 0 {
			continue
		}
		if why := c.applyTo(t, applied, reserved); why != "" {
			problems = append(problems, why)
		}
	}
	listed := map[string]bool{}
	for _, s := range c.Servers {
		listed[s.Name] = true
	}
	for j, r := range ors {
		if matched[j] || !c.judgeable(r.Match, listed) {
			continue
		}
		problems = append(problems, fmt.Sprintf("tools[%d]: match %q matches no tool%s", r.n, r.Match, c.closestTool(r.Match)))
	}
	return problems
}

// judgeable reports whether every known server that the server part of
// match could name has listed its tools: only then does "matches nothing"
// mean the rule is wrong rather than early.
func (c *Catalog) judgeable(match string, listed map[string]bool) bool {
	server, _, ok := toolid.Split(match)
	if !ok {
		return len(listed) > 0 // no "::": matches no id at all, whatever has listed
	}
	any := false
	for _, name := range c.servers {
		if m, _ := path.Match(server, name); m {
			if !listed[name] {
				return false
			}
			any = true
		}
	}
	return any || len(listed) > 0
}

// closestTool is a did-you-mean for a match that matches nothing: the
// tool id most like it, or "".
func (c *Catalog) closestTool(match string) string {
	ids := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		ids[i] = t.ID
	}
	pattern := strings.NewReplacer("*", "", "?", "", "[", "", "]", "", "\\", "").Replace(match)
	if best := config.Suggest(pattern, ids); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// applyTo applies the rules that match t, in config order, and returns
// why a rename was refused, or "".
func (c *Catalog) applyTo(t *Tool, rules []overrideRule, reserved map[string]bool) string {
	// t.Tool is the connection's definition, shared: the view is a copy.
	t.upstream = t.Tool
	up := *t.Tool
	view := up
	ov := &override{fixed: map[string]json.RawMessage{}}
	var name string
	nameRule := -1
	descSet, annSet := false, map[string]bool{}
	for _, r := range rules {
		if r.Name != "" && name == "" {
			name, nameRule = r.Name, r.n
		}
		if !descSet && (r.Description != "" || r.DescriptionAppend != "") {
			descSet = true
			if r.Description != "" {
				view.Description = r.Description
			} else {
				view.Description = strings.TrimRight(up.Description, " \n") + appendSep(up.Description) + r.DescriptionAppend
			}
		}
		ov.keywords = append(ov.keywords, r.Keywords...)
		for _, k := range slices.Sorted(maps.Keys(r.Args)) {
			if _, set := ov.fixed[k]; set {
				continue
			}
			raw, err := json.Marshal(r.Args[k])
			if err != nil {
				continue // the config decoder only makes JSON values
			}
			ov.fixed[k] = raw
		}
		if a := r.Annotations; a != nil {
			setHint := func(key string, v *bool, dst **bool) {
				if v != nil && !annSet[key] {
					annSet[key] = true
					b := *v
					*dst = &b
				}
			}
			setHint("readOnlyHint", a.ReadOnlyHint, &view.Annotations.ReadOnlyHint)
			setHint("destructiveHint", a.DestructiveHint, &view.Annotations.DestructiveHint)
			setHint("idempotentHint", a.IdempotentHint, &view.Annotations.IdempotentHint)
			setHint("openWorldHint", a.OpenWorldHint, &view.Annotations.OpenWorldHint)
			if a.Title != "" && !annSet["title"] {
				annSet["title"] = true
				view.Annotations.Title = a.Title
			}
		}
	}
	if len(ov.fixed) > 0 {
		view.RawInputSchema = withoutArgs(inputSchemaOf(up), ov.fixed)
		view.InputSchema = mcp.ToolInputSchema{}
	}
	t.Tool = &view
	t.override = ov
	if name == "" || name == t.Exposed {
		return ""
	}
	if other, taken := c.byExposedName(name, t); taken || reserved[name] {
		holder := "toolbridge's meta-tool " + name
		if taken {
			holder = other
		}
		return fmt.Sprintf("tools[%d]: name %q for %s collides with %s; it keeps its name %q (did you mean %q?)",
			nameRule, name, t.ID, holder, t.Exposed, sanitizeName(t.Server+"_"+name))
	}
	if a, ok := c.shadowedAlias(name); ok {
		return fmt.Sprintf("tools[%d]: name %q for %s reads as an alias of %s, which always goes to server %q; it keeps its name %q (did you mean %q?)",
			nameRule, name, t.ID, toolid.Join(a.Server, a.Tool), a.Server, t.Exposed, sanitizeName(strings.ReplaceAll(name, "__", "_")))
	}
	t.Exposed = name
	ov.renamed = true
	return ""
}

// reportOverrides logs the override problems of a new catalog as config
// errors, when they differ from the last ones logged: a rebuild that
// finds the same problems (a server reconnecting) does not repeat them.
// g.rebuildMu is held.
func (g *Gateway) reportOverrides(problems []string) {
	if slices.Equal(problems, g.overridesLogged) {
		return
	}
	g.overridesLogged = problems
	for _, p := range problems {
		g.logger.Error("config error: "+p, "fix", "edit the tools: rules and reload (SIGHUP, --watch)")
	}
}

// byExposedName finds a tool other than self that is exposed as name, or
// that another rename already took, before the catalog's byExposed index
// is built (buildCatalog builds it; applyOverrides runs after and fixes
// it up).
func (c *Catalog) byExposedName(name string, self *Tool) (string, bool) {
	for _, o := range c.Tools {
		if o != self && o.Exposed == name {
			return o.ID, true
		}
	}
	return "", false
}

// appendSep separates an appended description from the upstream's.
func appendSep(desc string) string {
	if strings.TrimSpace(desc) == "" {
		return ""
	}
	return "\n\n"
}

// inputSchemaOf is the tool's input schema as JSON.
func inputSchemaOf(t mcp.Tool) json.RawMessage {
	if len(t.RawInputSchema) > 0 {
		return t.RawInputSchema
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return raw
}

// withoutArgs is schema less the fixed arguments: their properties are
// removed, and so are they from required (a required list left empty is
// dropped: JSON Schema wants it non-empty in draft 4). The rest of the
// schema is kept as it is. A schema that is not an object is returned
// unchanged.
func withoutArgs(schema json.RawMessage, fixed map[string]json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var s map[string]any
	if dec.Decode(&s) != nil || s == nil {
		return schema
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k := range fixed {
			delete(props, k)
		}
	}
	if req, ok := s["required"].([]any); ok {
		kept := req[:0]
		for _, r := range req {
			if name, ok := r.(string); ok && fixed[name] != nil {
				continue
			}
			kept = append(kept, r)
		}
		if len(kept) == 0 {
			delete(s, "required")
		} else {
			s["required"] = kept
		}
	}
	return compactJSON(s)
}
