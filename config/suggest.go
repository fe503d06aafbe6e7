package config

import (
	"strings"

	"github.com/sahilm/fuzzy"
)

// maxSuggestLen bounds the names suggest compares by edit distance; longer
// input is not a typo of a config key and would only cost time.
const maxSuggestLen = 64

// suggest returns the candidate the user most likely meant by name, or "" if
// none is close. A small edit distance (typos, transpositions, case) wins;
// failing that, a fuzzy subsequence match catches abbreviations such as
// "thresh" for "threshold_pct".
func suggest(name string, candidates []string) string {
	if name == "" || len(name) > maxSuggestLen || len(candidates) == 0 {
		return ""
	}
	lname := strings.ToLower(name)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(lname, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := max(1, len([]rune(name))/3)
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	if len(name) < 3 {
		return ""
	}
	if m := fuzzy.Find(name, candidates); len(m) > 0 {
		return m[0].Str
	}
	return ""
}

// Suggest is suggest for other packages: the one did-you-mean rule for
// names a user typed (config keys, tool ids in tool rules).
func Suggest(name string, candidates []string) string { return suggest(name, candidates) }

// didYouMean formats suggest's answer as a message suffix, or "".
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and adjacent transpositions each cost
// one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxSuggestLen || len(rb) > maxSuggestLen {
		return max(len(ra), len(rb))
	}
	// Three rows suffice: the transposition looks two rows back.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
