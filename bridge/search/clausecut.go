package search

// clauseKept reports whether the document at position i of sc.touched
// scores at least cut x the best score of one of the clauses of a split
// request (Options.ClauseCutoff). The whole request's cutoff compares a
// tool with the request's best tool, which for a task of several steps
// answers the step the request says most about; the tool for a step said
// in three words ("and chart it") falls under it though it leads its own
// clause. Comparing each tool with its clause's best keeps it in reach.
// It is false when the request was not split, cut <= 0, or the clause
// matched nothing.
func (sc *scratch) clauseKept(i int, cut float64) bool {
	if cut <= 0 || i < 0 {
		return false
	}
	row := i * sc.clauses
	if row+sc.clauses > len(sc.cacc) {
		return false
	}
	for c := range sc.clauses {
		if v := sc.cacc[row+c]; v > 0 && v >= cut*sc.cbest[c] {
			return true
		}
	}
	return false
}
