package classify

// CountText counts the tokens of text with c: the o200k_base BPE tokens,
// or the chars/4 estimate for the estimate counter. It measures what a
// piece of text costs a model, such as a tool result's text block.
func CountText(c Counter, text string) int {
	if m, ok := c.(*CountMemo); ok {
		c = m.Counter
	}
	if b, ok := c.(*bpeCounter); ok {
		return b.countString(text)
	}
	return (len(text) + 3) / 4
}
