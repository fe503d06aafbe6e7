package search

// cand is a document in the heap of the best found.
type cand struct {
	score float64
	g     int
}

// worse orders candidates worst first: lower score, then higher document
// number (ties go to the lower one, as in the hits).
func worse(a, b cand) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.g > b.g
}

// offer adds c to the heap of the k best, dropping the worst when full.
func (r *ranker) offer(c cand, k int) {
	h := r.heap
	if len(h) < k {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		r.heap = h
		return
	}
	if !worse(h[0], c) {
		return
	}
	// Sift down, moving the hole rather than swapping.
	i := 0
	for {
		w, l := i, 2*i+1
		if l >= len(h) {
			break
		}
		if l+1 < len(h) && worse(h[l+1], h[l]) {
			l++
		}
		if !worse(h[l], c) {
			break
		}
		h[w] = h[l]
		i = l
	}
	h[i] = c
}
