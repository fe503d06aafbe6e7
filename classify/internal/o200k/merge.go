package o200k

// The byte-pair merges below are github.com/tiktoken-go/tokenizer's
// (codec.mergePairsScan and codec.mergePairsHeap, MIT licence, Copyright
// (c) 2023 tiktoken-go), reduced to counting the parts they leave: the
// same merges in the same order, so the same number of tokens.

// mergeHeapThreshold is the piece length, in bytes, from which the
// O(n log n) heap merge replaces the O(n²) scan, as in the codec.
const mergeHeapThreshold = 96

// noRank marks a pair of parts that is no token, or a removed boundary.
const noRank = ^uint32(0)

// part is a boundary between two parts of a piece, and the rank of the
// token that merging the part it starts with the next one would make.
type part struct {
	offset int
	rank   uint32
}

// mergeScan merges the leftmost pair of parts with the lowest rank until no
// pair is a token, finding it by a linear scan, and returns how many parts
// are left.
func (e *Encoder) mergeScan(piece string) int {
	var buf [mergeHeapThreshold + 1]part
	parts := buf[:len(piece)+1]
	for i := range parts {
		parts[i] = part{i, noRank}
	}
	rankOf := func(index, skip int) uint32 {
		if index+skip+2 < len(parts) {
			if r, ok := e.vocab.rank(piece[parts[index].offset:parts[index+skip+2].offset]); ok {
				return r
			}
		}
		return noRank
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankOf(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIndex := noRank, 0
		for i, p := range parts[:len(parts)-1] {
			if p.rank < minRank {
				minRank, minIndex = p.rank, i
			}
		}
		if minRank == noRank {
			break
		}
		parts[minIndex].rank = rankOf(minIndex, 1)
		if minIndex > 0 {
			parts[minIndex-1].rank = rankOf(minIndex-1, 1)
		}
		parts = append(parts[:minIndex+1], parts[minIndex+2:]...)
	}
	return len(parts) - 1
}

// mergeNode is a part boundary in mergeHeap's doubly linked list; rank is
// that of the token merging this part with the next one would make.
type mergeNode struct {
	prev, next int32
	rank       uint32
}

// mergeHeap merges as mergeScan does, in O(n log n), and returns how many
// parts are left.
func (e *Encoder) mergeHeap(piece string) int {
	n := int32(len(piece))
	nodes := make([]mergeNode, n+1)
	for i := range nodes {
		nodes[i] = mergeNode{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n].next = -1

	rankOf := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 {
			return noRank
		}
		k := nodes[j].next
		if k < 0 {
			return noRank
		}
		if r, ok := e.vocab.rank(piece[i:k]); ok {
			return r
		}
		return noRank
	}

	candidates := make(mergeQueue, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if r := rankOf(i); r != noRank {
			nodes[i].rank = r
			candidates = append(candidates, mergeCandidate{r, i})
		}
	}
	candidates.init()

	for len(candidates) > 0 {
		top := candidates.pop()
		i := top.offset
		if nodes[i].rank != top.rank {
			continue // stale: the pair changed since it was queued
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		for _, b := range [2]int32{i, nodes[i].prev} {
			if b < 0 {
				continue
			}
			nodes[b].rank = rankOf(b)
			if nodes[b].rank != noRank {
				candidates.push(mergeCandidate{nodes[b].rank, b})
			}
		}
	}

	parts := 0
	for i := int32(0); i >= 0; i = nodes[i].next {
		parts++
	}
	return parts - 1
}

// mergeCandidate is a pair that merges into a token of rank.
type mergeCandidate struct {
	rank   uint32
	offset int32
}

// mergeQueue is a binary min-heap of candidates by rank, then offset, so
// that among equal ranks the leftmost pair merges first.
type mergeQueue []mergeCandidate

func (h mergeQueue) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].offset < h[b].offset
}

func (h mergeQueue) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeQueue) push(c mergeCandidate) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

func (h *mergeQueue) pop() mergeCandidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h mergeQueue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (h mergeQueue) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if right := child + 1; right < len(h) && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}
