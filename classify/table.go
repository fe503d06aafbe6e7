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

	tools := table{right: []bool{false, false, false, true, false, false, false}}
	tools.add("SERVER", "TOOL", "CLASS", "TOKENS", "DEFERRED", "HINTS", "REASON")
	for _, t := range r.Tools {
		hints := strings.Join(t.Hints, ",")
		if hints == "" {
			hints = "-"
		}
		tools.add(t.Server, t.Name, string(t.Class), commas(t.Tokens), yesNo(t.Deferred), hints, t.Reason)
	}
	tools.write(bw)
	bw.WriteString("\n")

	if len(r.Notes) > 0 {
		notes := table{right: []bool{false, false, false, false}}
		notes.add("SERVER", "TOOL", "NOTE", "DETAIL")
		for _, n := range r.Notes {
			notes.add(n.Server, n.Name, n.Kind, n.Detail)
		}
		notes.write(bw)
		bw.WriteString("\n")
	}

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
	nums := []string{commas(r.PassThroughTokens), commas(r.BridgeTokens), commas(r.ClientTokens)}
	w0 := 0
	for _, n := range nums {
		w0 = max(w0, len(n))
	}
	fmt.Fprintf(bw, "pass-through:  %*s tokens, %s tools\n", w0, nums[0], commas(len(r.Tools)))
	fmt.Fprintf(bw, "bridge mode:   %*s tokens, %s visible tools + meta-tools (%s tokens)%s\n",
		w0, nums[1], commas(r.BridgeVisibleTools), commas(r.MetaTokens), bridgeNote)
	fmt.Fprintf(bw, "saving:        %s%%\n", pct(r.SavingPct))
	fmt.Fprintf(bw, "client gets:   %*s tokens\n", w0, nums[2])
	fmt.Fprintf(bw, "tokenizer:     %s\n", r.Decision.Tokenizer)
	fmt.Fprintf(bw, "decision:      %s\n", oneLine(r.Decision.Reason))

	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing report table: %w", err)
	}
	return nil
}

// oneLine quotes text that would break the layout, as table.add does.
func oneLine(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
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
		cells[i] = oneLine(c)
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
