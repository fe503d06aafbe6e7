package trust

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Diff renders what changed from old to new, field by field, for a person
// deciding whether to approve: each changed field, then its lines, indented
// and marked "-" (pinned), "+" (now) or " " (both). Text is wrapped at 76 columns
// first so that one changed word in a long description shows as one line,
// schemas are indented JSON with sorted keys, and unchanged runs longer
// than six lines are elided. Equal definitions give "".
func Diff(old, new Definition) string {
	var b strings.Builder
	for _, f := range ChangedFields(old, new) {
		b.WriteString(f)
		b.WriteString(":\n")
		writeLineDiff(&b, fieldLines(old, f), fieldLines(new, f))
	}
	return b.String()
}

// fieldLines returns one field of d as the lines the diff compares.
func fieldLines(d Definition, field string) []string {
	switch field {
	case FieldName:
		return textLines(d.Name)
	case FieldTitle:
		return textLines(d.Title)
	case FieldDescription:
		return textLines(d.Description)
	case FieldInputSchema:
		return jsonLines(d.InputSchema)
	case FieldOutputSchema:
		return jsonLines(d.OutputSchema)
	case FieldAnnotations:
		if d.Annotations == (Annotations{}) {
			return nil
		}
		b, _ := json.MarshalIndent(d.Annotations, "", "  ") // always encodes
		return strings.Split(string(b), "\n")
	}
	return nil
}

// wrapWidth is where textLines wraps prose.
const wrapWidth = 76

// textLines splits s into its lines, each wrapped at spaces to wrapWidth.
// Control and invisible characters are shown escaped, so the diff shows the
// bytes that changed, not a blank.
func textLines(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = escapeInvisible(line)
		for len(line) > wrapWidth {
			cut := strings.LastIndexByte(line[:wrapWidth], ' ')
			if cut <= 0 {
				cut = wrapWidth
				for cut < len(line) && line[cut] != ' ' {
					cut++ // a word longer than the line stays whole
				}
				if cut == len(line) {
					break
				}
			}
			out = append(out, line[:cut])
			line = strings.TrimLeft(line[cut:], " ")
		}
		out = append(out, line)
	}
	return out
}

// escapeInvisible replaces invisible characters and C0 controls (but tab)
// by their \u escape.
func escapeInvisible(s string) string {
	if !strings.ContainsFunc(s, needsEscape) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if needsEscape(r) {
			b.WriteString(strings.Trim(strconv.QuoteRuneToASCII(r), "'"))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return isInvisible(r) || (r < 0x20 && r != '\t') || r == 0x7f
}

// jsonLines is raw as indented JSON with sorted keys, or its text when it
// does not parse.
func jsonLines(raw json.RawMessage) []string {
	c := canonicalJSON(raw)
	if len(c) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, c, "", "  "); err != nil {
		return textLines(string(raw))
	}
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = escapeInvisible(l)
	}
	return lines
}

// maxDiffCells bounds the line diff's table; beyond it the diff shows the
// whole old and new text instead of a minimal one.
const maxDiffCells = 4 << 20

// context is how many unchanged lines the diff keeps around each change.
const context = 3

// writeLineDiff writes a minimal line diff of a and b (longest common
// subsequence), eliding unchanged runs away from changes.
func writeLineDiff(w *strings.Builder, a, b []string) {
	type op struct {
		kind byte // ' ', '-', '+'
		line string
	}
	var ops []op
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of a[i:] and b[j:].
		lcs := make([][]int, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(a) || j < len(b) {
			switch {
			case i < len(a) && j < len(b) && a[i] == b[j]:
				ops = append(ops, op{' ', a[i]})
				i++
				j++
			case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', a[i]})
				i++
			default:
				ops = append(ops, op{'+', b[j]})
				j++
			}
		}
	}
	// Keep each unchanged line within context lines of a change.
	keep := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		for d := max(0, k-context); d <= min(len(ops)-1, k+context); d++ {
			keep[d] = true
		}
	}
	elided := false
	for k, o := range ops {
		if !keep[k] {
			if !elided {
				w.WriteString("  ...\n")
				elided = true
			}
			continue
		}
		elided = false
		w.WriteString("  ")
		w.WriteByte(o.kind)
		w.WriteByte(' ')
		w.WriteString(o.line)
		w.WriteByte('\n')
	}
}
