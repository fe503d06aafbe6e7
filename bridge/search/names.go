package search

import (
	"slices"
	"strings"
	"unicode"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// exactRefs returns the tools that s names exactly, trying in order: the
// canonical id "server::tool" (case-sensitive, then any case), the bare
// tool name with its exact case, the aliases "server__tool" and
// "mcp__server__tool", and the bare name in any case. Several refs mean the
// name is ambiguous. Caller holds mu (read).
func (ix *Index) exactRefs(s string) []nameRef {
	s = toolid.Clean(s)
	if s == "" {
		return nil
	}
	exactCase := func(refs []nameRef, get func(nameRef) string) []nameRef {
		var out []nameRef
		for _, r := range refs {
			if get(r) == s {
				out = append(out, r)
			}
		}
		return out
	}
	if strings.Contains(s, toolid.Separator) {
		refs := ix.ids[strings.ToLower(s)]
		if ex := exactCase(refs, nameRef.id); len(ex) > 0 {
			return ex
		}
		if len(refs) > 0 {
			return refs
		}
	}
	byName := ix.names[strings.ToLower(s)]
	if ex := exactCase(byName, nameRef.name); len(ex) > 0 {
		return ex
	}
	if refs := ix.aliasRefs(s); len(refs) > 0 {
		return refs
	}
	return byName
}

// aliasRefs resolves "server__tool" and "mcp__server__tool" (any case),
// trying every "__" as the split because server and tool names may contain
// "__" themselves. Caller holds mu (read).
func (ix *Index) aliasRefs(s string) []nameRef {
	ls := strings.ToLower(s)
	tries := []string{ls}
	if rest, ok := strings.CutPrefix(ls, "mcp__"); ok {
		tries = []string{rest, ls}
	}
	for _, t := range tries {
		for i := strings.Index(t, "__"); i >= 0; {
			if refs := ix.ids[toolid.Join(t[:i], t[i+2:])]; len(refs) > 0 {
				return refs
			}
			j := strings.Index(t[i+1:], "__")
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return nil
}

// Resolve maps a tool name as a model wrote it to a canonical id. It
// accepts the id "server::tool", a bare tool name when it is unique across
// servers, "server__tool", "mcp__server__tool", any letter case, and names
// in quotes, backticks or followed by "()". When the name is ambiguous,
// candidates lists every matching id; when it matches nothing, candidates
// are did-you-mean ids of similar names. Exactly one of id and candidates
// is non-empty, unless nothing is even similar.
func (ix *Index) Resolve(name string) (id string, candidates []string) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	refs := ix.exactRefs(name)
	switch len(refs) {
	case 1:
		return refs[0].id(), nil
	case 0:
		for i, c := range ix.fuzzyNames(name) {
			if i == ix.opts.DidYouMeanMax {
				break
			}
			candidates = append(candidates, c.ref.id())
		}
		return "", candidates
	}
	for _, r := range refs {
		candidates = append(candidates, r.id())
	}
	slices.Sort(candidates)
	return "", candidates
}

// isOneWord reports a query without inner whitespace.
func isOneWord(q string) bool {
	q = toolid.Clean(q)
	return q != "" && strings.IndexFunc(q, unicode.IsSpace) < 0
}

// isIdentifierLike reports a query that is one word shaped like a tool
// name ("creat_isue", "getWeather"): such a query is most likely a
// misspelt name, so fuzzy name matching runs even when words matched.
func isIdentifierLike(q string) bool {
	return isOneWord(q) && countParts(toolid.Clean(q)) > 1
}

// splitQualified splits a lowercase "server::tool", "mcp__server__tool" or
// "server__tool" into tool and server; other names come back whole.
func splitQualified(s string) (tool, server string) {
	if i := strings.LastIndex(s, toolid.Separator); i >= 0 {
		return s[i+len(toolid.Separator):], s[:i]
	}
	rest := strings.TrimPrefix(s, "mcp__")
	if i := strings.Index(rest, "__"); i >= 0 {
		return rest[i+2:], rest[:i]
	}
	return s, ""
}
