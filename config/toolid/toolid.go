// Package toolid is the one home of a tool's canonical id, "server::tool",
// and of the names of the bridge's meta-tools. It imports nothing of
// toolbridge's own, so every package (config's users, classify, trace,
// bridge and bridge/search) can share it without bending the import
// direction.
package toolid

import "strings"

// Separator joins a server name and a tool name into a canonical id.
const Separator = "::"

// The meta-tools served in bridge mode. Their names are reserved: an
// upstream tool of one of these names is always exposed qualified
// (server__tool_call), so it never shadows a meta-tool.
const (
	MetaSearch   = "tool_search"
	MetaDescribe = "tool_describe"
	MetaCall     = "tool_call"
)

// Join returns the canonical id "server::tool".
func Join(server, tool string) string { return server + Separator + tool }

// Split splits a canonical id at its first separator into server and tool;
// ok is false when id has none. Server names cannot contain the separator,
// tool names may.
func Split(id string) (server, tool string, ok bool) {
	return strings.Cut(id, Separator)
}

// Clean strips what models wrap tool names in: surrounding white space,
// matching quotes or backticks, and a trailing "()". It strips them in any
// order and nesting ("`create_issue()`", "\"create_issue\"()", "x ()"), until
// none is left.
func Clean(s string) string {
	for {
		prev := s
		s = strings.TrimSpace(s)
		s = strings.TrimSuffix(s, "()")
		if len(s) >= 2 && s[0] == s[len(s)-1] && strings.IndexByte("\"'`", s[0]) >= 0 {
			s = s[1 : len(s)-1]
		}
		if s == prev {
			return s
		}
	}
}

// AliasPrefix starts the "mcp__server__tool" alias, the form Claude Code
// gives an MCP server's tools.
const AliasPrefix = "mcp__"

// aliasSeparator joins server and tool in the "server__tool" alias.
const aliasSeparator = "__"

// Alias is one reading of an alias form: the server and tool it names.
type Alias struct{ Server, Tool string }

// SplitAlias returns every (server, tool) that s can be read as, when s is
// an alias form "mcp__server__tool" or "server__tool", in the order a
// resolver should try them: without the "mcp__" prefix first (a server
// named "mcp" is rare, Claude Code's prefix is not), and within each the
// leftmost "__" first. Server and tool names may contain "__" themselves,
// hence every split. Neither part is ever empty. Case is kept: matching
// server names in any case is the caller's choice.
func SplitAlias(s string) []Alias {
	var out []Alias
	tries := []string{s}
	if len(s) > len(AliasPrefix) && strings.EqualFold(s[:len(AliasPrefix)], AliasPrefix) {
		tries = []string{s[len(AliasPrefix):], s}
	}
	for _, t := range tries {
		for i := 0; ; {
			j := strings.Index(t[i:], aliasSeparator)
			if j < 0 {
				break
			}
			i += j
			if i > 0 && i+len(aliasSeparator) < len(t) {
				out = append(out, Alias{Server: t[:i], Tool: t[i+len(aliasSeparator):]})
			}
			i++
		}
	}
	return out
}

// Aliases returns the alias forms of the tool's canonical id:
// "server__tool" and "mcp__server__tool".
func Aliases(server, tool string) []string {
	return []string{server + aliasSeparator + tool, AliasPrefix + server + aliasSeparator + tool}
}
