package search

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sahilm/fuzzy"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// fuzzyNamesRef is fuzzyNames as it was before the name keys: it runs
// sahilm/fuzzy and the edit distance over every name, keeping similarities
// in a map. Tests check that fuzzyNames gives the same answers, and the
// matcher benchmark runs both side by side. Caller holds mu (read).
func (ix *Index) fuzzyNamesRef(q string) []fuzzyCand {
	q, server := splitQualified(strings.ToLower(toolid.Clean(q)))
	if q == "" || len(q) > maxFuzzyLen {
		return nil
	}
	qr := []rune(q)
	sims := make(map[int]float64)
	if len(qr) >= 3 {
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
