package bridge

import (
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/classify"
)

// catalogHint is the part of tool_search's description that tells the
// model what exists to search for, within the configured token budget. It
// degrades rather than overflowing: first every deferred tool's name per
// server; if that is over budget, each server's tool count and purpose; if
// that is still over, as many servers as fit and a count of the rest.
func catalogHint(cat *Catalog, deferred []*Tool, budget int, counter classify.Counter) string {
	servers := deferredByServer(cat, deferred)
	if len(servers) == 0 {
		return "No tools are deferred right now."
	}
	header := fmt.Sprintf("Not listed, %d tools on %d servers:", len(deferred), len(servers))

	var full strings.Builder
	full.WriteString(header)
	for _, s := range servers {
		fmt.Fprintf(&full, "\n- %s (%d)%s: %s", s.name, len(s.tools), purpose(s.description), strings.Join(s.tools, ", "))
	}
	if hintTokens(counter, full.String()) <= budget {
		return full.String()
	}

	var summary strings.Builder
	summary.WriteString(header)
	for i, s := range servers {
		line := fmt.Sprintf("\n- %s (%d tools)%s", s.name, len(s.tools), purpose(s.description))
		if hintTokens(counter, summary.String()+line) > budget {
			fmt.Fprintf(&summary, "\n- … and %d more servers; search by keywords.", len(servers)-i)
			break
		}
		summary.WriteString(line)
	}
	return summary.String()
}

type hintServer struct {
	name, description string
	tools             []string
}

func deferredByServer(cat *Catalog, deferred []*Tool) []hintServer {
	desc := map[string]string{}
	for _, s := range cat.Servers {
		desc[s.Name] = s.Description
	}
	var out []hintServer
	index := map[string]int{}
	for _, t := range deferred { // sorted by id, so grouped by server
		i, ok := index[t.Server]
		if !ok {
			i = len(out)
			index[t.Server] = i
			out = append(out, hintServer{name: t.Server, description: desc[t.Server]})
		}
		out[i].tools = append(out[i].tools, t.Name)
	}
	return out
}

func purpose(description string) string {
	if description == "" {
		return ""
	}
	return " — " + clip(oneLine(description), 100)
}

// hintTokens counts text with the configured tokenizer. The counter counts
// tools, so the text is counted as a description; the few tokens of the
// wrapper make the figure err on the safe side.
func hintTokens(counter classify.Counter, text string) int {
	return counter.Count(mcp.Tool{Description: text})
}
