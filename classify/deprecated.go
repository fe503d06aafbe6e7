package classify

import (
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Deprecated reports whether a tool says it is deprecated, and the tool
// it names instead, if any. MCP has no deprecation field, so servers say
// it in the description: the filesystem server's read_file reads "Read the
// complete contents of a file as text. DEPRECATED: Use read_text_file
// instead." It counts when the description starts with "deprecated" (any
// case), or holds the word DEPRECATED in capitals, "deprecated:" or
// "(deprecated)"; a description that merely mentions the word ("lists
// deprecated packages") does not. The replacement is the name after "use"
// in "use X instead" (quotes and backticks allowed).
func Deprecated(t mcp.Tool) (bool, string) {
	d := strings.TrimSpace(t.Description)
	lower := strings.ToLower(d)
	// The word boundaries need the regexp, which backtracks over the
	// whole description; the substring it needs is found far faster, and
	// most descriptions lack it. (tool_search asks this of every hit: over
	// a long description the regexp alone made a search cost 4 times the
	// median.)
	dep := strings.HasPrefix(strings.TrimLeft(lower, "*_[(` "), "deprecated") ||
		(strings.Contains(d, "DEPRECATED") && upperDeprecated.MatchString(d)) ||
		strings.Contains(lower, "deprecated:") || strings.Contains(lower, "(deprecated)")
	if !dep {
		return false, ""
	}
	if m := useInstead.FindStringSubmatch(d); m != nil && m[1] != t.Name {
		return true, m[1]
	}
	return true, ""
}

var (
	upperDeprecated = regexp.MustCompile(`\bDEPRECATED\b`)
	useInstead      = regexp.MustCompile("(?i)\\buse\\s+[`'\"]?([A-Za-z0-9_.:-]+?)[`'\"]?\\s+(?:tool\\s+)?instead\\b")
)
