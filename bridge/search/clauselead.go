package search

import "math"

// minLeadTerms is the fewest terms a clause needs for its best tool to
// gain Options.ClauseLeadBonus. A clause of one or two terms is mostly an
// aside ("Any suggestions?", "Can you help me find one?") whose best tool
// is no step of the task; boosting those cost single-tool requests.
const minLeadTerms = 3

// clauseTerms counts the query groups of each of the first clauses
// clauses of a split request (queryGroup.clauses bits).
func clauseTerms(groups []queryGroup, clauses int) [maxClauses]int {
	var n [maxClauses]int
	clauses = min(max(clauses, 0), maxClauses)
	for _, g := range groups {
		for c := range clauses {
			if g.clauses&(1<<c) != 0 {
				n[c]++
			}
		}
	}
	return n
}

// boostLeads adds bonus x its clause's best score to lead[c], the best
// tool of clause c, for each clause of at least minLeadTerms terms.
// Relative to the request's best score the bonus is bonus x the clause's
// strength, so a step the request says a lot about lifts its tool into
// the top few, where keeping it within the limit (keepLeads) only saved
// it from falling off the end; a weak clause lifts its tool little. A
// tool that leads two clauses gains twice. A lead that scored under top,
// the best fused score, stays under it: on a request for one tool split
// at its "and", a clause's best tool taking first place cost BFCL
// Recall@1 0.6 points. Caller: fuseClauses, after sc.cbest is set.
func (sc *scratch) boostLeads(lead [maxClauses]int, bonus, top float64) {
	if bonus <= 0 {
		return
	}
	for c := range min(sc.clauses, maxClauses) {
		g := lead[c]
		if sc.cbest[c] <= 0 || sc.cterms[c] < minLeadTerms || g < 0 || g >= len(sc.acc) {
			continue
		}
		s := sc.acc[g] + bonus*sc.cbest[c]
		if sc.acc[g] < top && s >= top {
			s = math.Nextafter(top, 0)
		}
		sc.acc[g] = s
	}
}
