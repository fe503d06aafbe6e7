// Package o200k counts o200k_base BPE tokens exactly as
// github.com/tiktoken-go/tokenizer's codec does, at a fraction of its
// start-up and per-text cost.
//
// The codec builds a Go map of the 200,000-token vocabulary the first time
// it is used: 30-45 ms of CPU, most of it cache misses, which a gateway
// starting a dozen upstream servers on two cores pays while it starts
// them. Here the vocabulary is a hash table laid out ahead of time (see
// vocabulary) and read in place, so New costs next to nothing. The
// codec's pre-tokenizer is a regexp2 matcher that allocates a match object
// per piece; here the same generated matcher (see execute.go) runs on a
// runner that allocates nothing per piece. The byte-pair merges are the
// codec's. The tests compare the vocabulary, the pieces and every count
// with the codec's.
package o200k

import (
	"fmt"
	"sync"
)

// Encoder counts o200k_base tokens. It is safe for concurrent use.
type Encoder struct {
	vocab     vocabulary
	splitters sync.Pool // of *splitter
}

// New returns an Encoder. It fails only if the embedded vocabulary is
// damaged, which the package's tests rule out.
func New() (*Encoder, error) {
	v, err := parseVocabulary(vocabFile)
	if err != nil {
		return nil, fmt.Errorf("reading the o200k_base vocabulary: %w", err)
	}
	e := &Encoder{vocab: v}
	e.splitters.New = func() any { return new(splitter) }
	return e, nil
}

// Count returns the number of o200k_base tokens of text, as the codec's
// Count does (invalid UTF-8 included: each invalid byte is a U+FFFD). It
// fails only if the pattern's matcher does, which, as in the codec, only
// an absurdly deep backtracking stack could make it.
func (e *Encoder) Count(text string) (int, error) {
	s := e.splitters.Get().(*splitter)
	defer e.splitters.Put(s)
	n := 0
	if err := s.split(text, func(piece string) { n += e.countPiece(piece) }); err != nil {
		return 0, fmt.Errorf("splitting text into pieces: %w", err)
	}
	return n, nil
}

// countPiece is the number of tokens byte-pair encoding makes of one
// piece of the pattern: one if the piece is a token itself.
func (e *Encoder) countPiece(piece string) int {
	if _, ok := e.vocab.rank(piece); ok {
		return 1
	}
	if len(piece) < mergeHeapThreshold {
		return e.mergeScan(piece)
	}
	return e.mergeHeap(piece)
}
