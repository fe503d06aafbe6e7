package o200k

import (
	_ "embed"
	"errors"
	"fmt"
)

// vocabFile is the o200k_base vocabulary as a ready-made hash table (see
// vocabulary for the layout). It is generated from
// github.com/tiktoken-go/tokenizer's vocabulary by TestVocabularyFile
// (go test ./classify/internal/o200k -run VocabularyFile -update), which also
// checks, every run, that it still holds exactly that vocabulary.
//
//go:embed o200k_base.bin
var vocabFile string

// vocabMagic opens the vocabulary file.
const vocabMagic = "tb-o200k"

// Slot layout: the low rankBits hold rank+1 (0 marks an empty slot), the
// high bits a tag of the key's hash, so that most probes of a key that is
// not there are rejected without reading the token bytes.
const (
	rankBits = 18
	rankMask = 1<<rankBits - 1
	tagBits  = 32 - rankBits
	tagMask  = 1<<tagBits - 1
)

// vocabulary is a read-only view of the vocabulary file, used in place: no
// map is built, so the tokenizer costs nothing to load. The file is
//
//	magic   8 bytes  "tb-o200k"
//	n       uint32   tokens, ranks 0..n-1
//	bits    uint32   log2 of the slots in the table
//	offsets (n+1) × uint32: token r is data[offsets[r]:offsets[r+1]]
//	slots   (1<<bits) × uint32: open addressing, linear probing
//	data    the tokens' bytes, in rank order
//
// all little-endian. A token is found at the slot its hash's top bits name,
// or one of the slots after it.
type vocabulary struct {
	n       int
	bits    uint
	offsets string
	slots   string
	data    string
}

// parseVocabulary checks the file's header and sizes and slices it up.
func parseVocabulary(file string) (vocabulary, error) {
	const header = len(vocabMagic) + 8
	if len(file) < header || file[:len(vocabMagic)] != vocabMagic {
		return vocabulary{}, errors.New("not an o200k vocabulary file")
	}
	n, bits := int(le32(file, len(vocabMagic))), uint(le32(file, len(vocabMagic)+4))
	if n >= rankMask || bits < 1 || bits > 30 || n >= 1<<bits {
		return vocabulary{}, fmt.Errorf("vocabulary of %d tokens in %d-bit table: out of range", n, bits)
	}
	v := vocabulary{n: n, bits: bits}
	rest := file[header:]
	if len(rest) < 4*(n+1)+(4<<bits) {
		return vocabulary{}, errors.New("vocabulary file is truncated")
	}
	v.offsets, rest = rest[:4*(n+1)], rest[4*(n+1):]
	v.slots, v.data = rest[:(4<<bits)], rest[(4<<bits):]
	if int(le32(v.offsets, 4*n)) != len(v.data) {
		return vocabulary{}, errors.New("vocabulary file's token data does not match its offsets")
	}
	return v, nil
}

// token returns the bytes of the token of rank r.
func (v *vocabulary) token(r int) string {
	return v.data[le32(v.offsets, 4*r):le32(v.offsets, 4*r+4)]
}

// rank returns piece's rank, and whether it is a token at all.
func (v *vocabulary) rank(piece string) (uint32, bool) {
	h := hash(piece)
	tag := uint32(h) & tagMask
	mask := 1<<v.bits - 1
	for i := int(h >> (64 - v.bits)); ; i = (i + 1) & mask {
		slot := le32(v.slots, 4*i)
		if slot == 0 {
			return 0, false
		}
		if slot>>rankBits == tag {
			if r := int(slot&rankMask) - 1; v.token(r) == piece {
				return uint32(r), true
			}
		}
	}
}

// hash is 64-bit FNV-1a with a final mix, so that both its top bits (the
// slot) and its low bits (the tag) depend on every byte. It is part of the
// file format: changing it means regenerating the file.
func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// le32 reads the little-endian uint32 at s[i:i+4].
func le32(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}
