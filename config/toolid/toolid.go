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
