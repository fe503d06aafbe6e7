package classify

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// WriteTable writes the report for people: the tools, the totals per class
// and per server, then the token summary and the decision. Columns are
// aligned, numbers right-aligned with thousands separators.
func (r Report) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)

	tools := table{right: []bool{false, false, false, true, false, false}}
	tools.add("SERVER", "TOOL", "CLASS", "TOKENS", "DEFERRED", "REASON")
	for _, t := range r.Tools {
		tools.add(t.Server, t.Name, string(t.Class), commas(t.Tokens), yesNo(t.Deferred), t.Reason)
	}
	tools.write(bw)
	bw.WriteString("\n")

	classes := table{right: []bool{false, true, true, true, true}}
	classes.add("CLASS", "TOOLS", "TOKENS", "DEFERRED", "DEFERRED TOKENS")
	for _, c := range r.Classes {
		classes.add(string(c.Class), commas(c.Tools), commas(c.Tokens), commas(c.DeferredTools), commas(c.DeferredTokens))
	}
	classes.write(bw)
	bw.WriteString("\n")

	servers := table{right: []bool{false, true, true, true, true, true, true, true}}
	servers.add("SERVER", "TOOLS", "CORE", "DEFERRABLE", "UNKNOWN", "TOKENS", "DEFERRED", "DEFERRED TOKENS")
	var tot ServerTotal
	for _, s := range r.Servers {
		servers.add(s.Server, commas(s.Tools), commas(s.Core), commas(s.Deferrable), commas(s.Unknown),
			commas(s.Tokens), commas(s.DeferredTools), commas(s.DeferredTokens))
		tot.Tools += s.Tools
		tot.Core += s.Core
		tot.Deferrable += s.Deferrable
		tot.Unknown += s.Unknown
		tot.Tokens += s.Tokens
		tot.DeferredTools += s.DeferredTools
		tot.DeferredTokens += s.DeferredTokens
	}
	servers.add("total", commas(tot.Tools), commas(tot.Core), commas(tot.Deferrable), commas(tot.Unknown),
		commas(tot.Tokens), commas(tot.DeferredTools), commas(tot.DeferredTokens))
	servers.write(bw)
	bw.WriteString("\n")

	bridgeNote := ""
	if !r.Decision.Bridge {
		bridgeNote = ", if bridged"
	}
	summary := table{right: []bool{false, true, false}}
	summary.add("pass-through:", commas(r.PassThroughTokens), fmt.Sprintf("tokens, %s tools", commas(len(r.Tools))))
	summary.add("bridge mode:", commas(r.BridgeTokens), fmt.Sprintf("tokens, %s visible tools + meta-tools (%s tokens)%s",
		commas(r.BridgeVisibleTools), commas(r.MetaTokens), bridgeNote))
	summary.add("saving:", pct(r.SavingPct)+"%", "")
	summary.add("client gets:", commas(r.ClientTokens), "tokens")
	summary.add("tokenizer:", r.Decision.Tokenizer, "")
	summary.add("decision:", r.Decision.Reason, "")
	summary.write(bw)

	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing report table: %w", err)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// table aligns columns two spaces apart; right[i] right-aligns column i.
// The last column is never padded, so lines carry no trailing spaces.
type table struct {
	right []bool
	rows  [][]string
}

// add appends a row. Names and reasons come from upstream servers, so a cell
// with control characters (a newline would break the layout) is quoted.
func (t *table) add(cells ...string) {
	for i, c := range cells {
		if strings.ContainsFunc(c, unicode.IsControl) {
			cells[i] = strconv.Quote(c)
		}
	}
	t.rows = append(t.rows, cells)
}

func (t *table) write(w *bufio.Writer) {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var line strings.Builder
	for _, row := range t.rows {
		line.Reset()
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			last := i == len(row)-1
			switch {
			case i < len(t.right) && t.right[i]:
				line.WriteString(pad + c)
			case last:
				line.WriteString(c)
			default:
				line.WriteString(c + pad)
			}
		}
		w.WriteString(strings.TrimRight(line.String(), " "))
		w.WriteString("\n")
	}
}
