package search

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sahilm/fuzzy"
)

// cleanName strips what models wrap tool names in: whitespace, quotes,
// backticks and a trailing "()".
func cleanName(s string) string {
	for {
		s = strings.TrimSpace(s)
		s = strings.TrimSuffix(s, "()")
		if len(s) >= 2 && s[0] == s[len(s)-1] && strings.IndexByte("\"'`", s[0]) >= 0 {
			s = s[1 : len(s)-1]
			continue
		}
		return s
	}
}

// exactRefs returns the tools that s names exactly, trying in order: the
// canonical id "server::tool" (case-sensitive, then any case), the bare
// tool name with its exact case, the aliases "server__tool" and
// "mcp__server__tool", and the bare name in any case. Several refs mean the
// name is ambiguous. Caller holds mu (read).
func (ix *Index) exactRefs(s string) []nameRef {
	s = cleanName(s)
	if s == "" {
		return nil
	}
	exactCase := func(refs []nameRef, get func(nameRef) string) []nameRef {
		var out []nameRef
		for _, r := range refs {
			if get(r) == s {
				out = append(out, r)
			}
		}
		return out
	}
	if strings.Contains(s, "::") {
		refs := ix.ids[strings.ToLower(s)]
		if ex := exactCase(refs, nameRef.id); len(ex) > 0 {
			return ex
		}
		if len(refs) > 0 {
			return refs
		}
	}
	byName := ix.names[strings.ToLower(s)]
	if ex := exactCase(byName, nameRef.name); len(ex) > 0 {
		return ex
	}
	if refs := ix.aliasRefs(s); len(refs) > 0 {
		return refs
	}
	return byName
}

// aliasRefs resolves "server__tool" and "mcp__server__tool" (any case),
// trying every "__" as the split because server and tool names may contain
// "__" themselves. Caller holds mu (read).
func (ix *Index) aliasRefs(s string) []nameRef {
	ls := strings.ToLower(s)
	tries := []string{ls}
	if rest, ok := strings.CutPrefix(ls, "mcp__"); ok {
		tries = []string{rest, ls}
	}
	for _, t := range tries {
		for i := strings.Index(t, "__"); i >= 0; {
			if refs := ix.ids[t[:i]+"::"+t[i+2:]]; len(refs) > 0 {
				return refs
			}
			j := strings.Index(t[i+1:], "__")
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return nil
}

// Resolve maps a tool name as a model wrote it to a canonical id. It
// accepts the id "server::tool", a bare tool name when it is unique across
// servers, "server__tool", "mcp__server__tool", any letter case, and names
// in quotes, backticks or followed by "()". When the name is ambiguous,
// candidates lists every matching id; when it matches nothing, candidates
// are did-you-mean ids of similar names. Exactly one of id and candidates
// is non-empty, unless nothing is even similar.
func (ix *Index) Resolve(name string) (id string, candidates []string) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	refs := ix.exactRefs(name)
	switch len(refs) {
	case 1:
		return refs[0].id(), nil
	case 0:
		for i, c := range ix.fuzzyNames(name) {
			if i == ix.opts.DidYouMeanMax {
				break
			}
			candidates = append(candidates, c.ref.id())
		}
		return "", candidates
	}
	for _, r := range refs {
		candidates = append(candidates, r.id())
	}
	slices.Sort(candidates)
	return "", candidates
}

// isOneWord reports a query without inner whitespace.
func isOneWord(q string) bool {
	q = cleanName(q)
	return q != "" && strings.IndexFunc(q, unicode.IsSpace) < 0
}

// isIdentifierLike reports a query that is one word shaped like a tool
// name ("creat_isue", "getWeather"): such a query is most likely a
// misspelt name, so fuzzy name matching runs even when words matched.
func isIdentifierLike(q string) bool {
	return isOneWord(q) && countParts(cleanName(q)) > 1
}

// Fuzzy matching thresholds on the similarity in [0,1].
const (
	fuzzyMinSim = 0.6  // listed in DidYouMean / Resolve candidates
	fuzzyHitSim = 0.75 // also added to Search hits
	maxFuzzyLen = 128  // longer queries are not tool names
	// maxFuzzyEdits caps the edit distance searched: a third of the
	// query's length, at most this.
	maxFuzzyEdits = 3
)

// fuzzyCand is a tool whose name resembles the query.
type fuzzyCand struct {
	ref nameRef
	sim float64
}

// fuzzyNames returns the tools whose names resemble q, most similar first.
// Similarity combines an edit distance (typos, transpositions) with
// sahilm/fuzzy's subsequence matching ("creat_isue" in "create_issue",
// "issue" in "create_issue"), both case-insensitive. Server prefixes
// ("gh::", "mcp__gh__") are stripped; tools of the named server then rank
// first. Caller holds mu (read).
func (ix *Index) fuzzyNames(q string) []fuzzyCand {
	q, server := splitQualified(strings.ToLower(cleanName(q)))
	if q == "" || len(q) > maxFuzzyLen {
		return nil
	}
	qr := []rune(q)
	sims := make(map[int]float64)
	if len(qr) >= 3 {
		// A byte-level subsequence test is a cheap necessary condition
		// (names and q are lowercase); sahilm/fuzzy, whose per-rune case
		// folding is slow, then judges only those candidates.
		var cands []string
		var docNos []int
		for _, seg := range ix.order {
			for d := range seg.docs {
				if lname := seg.docs[d].lname; len(lname) > len(q) && isByteSubsequence(q, lname) {
					cands = append(cands, lname)
					docNos = append(docNos, seg.base+d)
				}
			}
		}
		for _, m := range fuzzy.FindNoSort(q, cands) {
			// The shorter the unmatched rest of the name, the closer;
			// scaled so a subsequence ranks under an edit-distance-1 match.
			if n := utf8.RuneCountInString(m.Str); len(qr) < n {
				sims[docNos[m.Index]] = 0.95 * float64(len(qr)) / float64(n)
			}
		}
	}
	maxDist := min(len(qr)/3, maxFuzzyEdits)
	asciiQ := len(qr) == len(q)
	var rows [3][]int
	var nr []rune
	qb, nb := []byte(q), []byte(nil)
	for _, seg := range ix.order {
		for d := range seg.docs {
			info := &seg.docs[d]
			n := len(info.lname)
			if !info.ascii {
				n = utf8.RuneCountInString(info.lname)
			}
			if diff := len(qr) - n; diff > maxDist || -diff > maxDist {
				continue
			}
			var dist int
			if asciiQ && info.ascii {
				nb = append(nb[:0], info.lname...)
				dist = osaDistance(qb, nb, maxDist, &rows)
			} else {
				nr = nr[:0]
				for _, r := range info.lname {
					nr = append(nr, r)
				}
				dist = osaDistance(qr, nr, maxDist, &rows)
			}
			if dist <= maxDist {
				g := seg.base + d
				sims[g] = max(sims[g], 1-float64(dist)/float64(max(len(qr), n)))
			}
		}
	}
	var out []fuzzyCand
	for g, sim := range sims {
		if sim < fuzzyMinSim {
			continue
		}
		if seg, d := ix.locate(g); seg != nil {
			out = append(out, fuzzyCand{ref: nameRef{seg: seg, doc: d}, sim: sim})
		}
	}
	slices.SortFunc(out, func(a, b fuzzyCand) int {
		as, bs := strings.EqualFold(a.ref.seg.server, server), strings.EqualFold(b.ref.seg.server, server)
		if as != bs && server != "" {
			if as {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return strings.Compare(a.ref.id(), b.ref.id())
	})
	return out
}

// splitQualified splits a lowercase "server::tool", "mcp__server__tool" or
// "server__tool" into tool and server; other names come back whole.
func splitQualified(s string) (tool, server string) {
	if i := strings.LastIndex(s, "::"); i >= 0 {
		return s[i+2:], s[:i]
	}
	rest := strings.TrimPrefix(s, "mcp__")
	if i := strings.Index(rest, "__"); i >= 0 {
		return rest[i+2:], rest[:i]
	}
	return s, ""
}

// isByteSubsequence reports whether the bytes of q appear in s in order.
func isByteSubsequence(q, s string) bool {
	i := 0
	for j := 0; j < len(s) && i < len(q); j++ {
		if s[j] == q[i] {
			i++
		}
	}
	return i == len(q)
}

// osaDistance is the optimal-string-alignment edit distance (insertions,
// deletions, substitutions, adjacent transpositions) between a and b, or
// maxDist+1 when it exceeds maxDist. It compares bytes for ASCII text and
// runes otherwise. Only the diagonal band |i-j| <=
// maxDist is computed, and rows holds reusable buffers, so a miss costs
// O(len x maxDist) and no allocation.
func osaDistance[T byte | rune](a, b []T, maxDist int, rows *[3][]int) int {
	big := maxDist + 1
	if d := len(a) - len(b); d > maxDist || -d > maxDist {
		return big
	}
	n := len(b)
	for k := range rows {
		if cap(rows[k]) < n+2 {
			rows[k] = make([]int, n+2)
		}
		rows[k] = rows[k][:n+2]
	}
	prev2, prev, cur := rows[0], rows[1], rows[2]
	for j := 0; j <= n; j++ {
		prev[j] = min(j, big)
	}
	prev[n+1] = big
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-maxDist), min(n, i+maxDist)
		cur[lo-1] = big
		if lo == 1 {
			cur[0] = min(i, big)
		}
		rowMin := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = min(v, big)
			rowMin = min(rowMin, cur[j])
		}
		cur[hi+1] = big
		if rowMin > maxDist {
			return big
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[n]
}
