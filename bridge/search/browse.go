package search

// browse lists tool names grouped by server, in server-name order and each
// server's own tool order. Every server gets a fair share of
// Options.BrowseMax names (at most Options.BrowsePerServer, at least one),
// and at most BrowseMax servers are listed, so the output stays bounded
// however large the catalog. Caller holds mu (read).
func (ix *Index) browse() []ServerTools {
	var nonEmpty int
	for _, s := range ix.order {
		if len(s.docs) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty == 0 {
		return nil
	}
	share := max(1, min(ix.opts.BrowsePerServer, ix.opts.BrowseMax/nonEmpty))
	budget := ix.opts.BrowseMax
	out := make([]ServerTools, 0, min(nonEmpty, ix.opts.BrowseMax))
	for _, s := range ix.order {
		if len(s.docs) == 0 {
			continue
		}
		if len(out) == ix.opts.BrowseMax {
			break
		}
		n := min(share, len(s.docs), budget)
		st := ServerTools{Server: s.server, Total: len(s.docs), Names: make([]string, n)}
		for i := range n {
			st.Names[i] = s.docs[i].name
		}
		budget -= n
		out = append(out, st)
	}
	return out
}
