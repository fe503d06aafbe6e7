package trust

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"sync"
)

// memo remembers each tool's hash and flags, so that a review of a
// catalog whose tools did not change (a list_changed from one server
// re-reviews them all) compares definitions instead of re-encoding,
// hashing and scanning every schema. An entry is used only for a
// definition equal to the one it was made from.
type memo struct {
	mu sync.Mutex
	m  map[memoKey]memoEntry
}

type memoKey struct{ server, tool string }

type memoEntry struct {
	print [sha256.Size]byte // of the definition's bytes, see fingerprint
	hash  string
	flags []Flag
}

// maxMemo bounds the memo; past it, it starts over.
const maxMemo = 100000

// assess returns d's hash and flags, from the memo when it holds d. A nil
// memo computes them.
func (m *memo) assess(server string, d Definition) (string, []Flag) {
	hash, flags, _ := m.assessPrints(server, d)
	return hash, flags
}

// assessPrints is assess that also returns d's field prints when it
// computed the hash (nil from the memo or a nil memo): a memory store
// keeps them for a tool pinned on first use, which is almost always a
// tool the memo has not seen, and canonicalizing twice would double the
// cost of a first review.
func (m *memo) assessPrints(server string, d Definition) (string, []Flag, *fieldPrints) {
	if m == nil {
		return d.Hash(), Check(d), nil
	}
	k := memoKey{server, d.Name}
	print := fingerprint(d)
	m.mu.Lock()
	e, ok := m.m[k]
	m.mu.Unlock()
	if ok && e.print == print {
		return e.hash, e.flags, nil
	}
	hash, prints := d.digest()
	e = memoEntry{print: print, hash: hash, flags: Check(d)}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[memoKey]memoEntry{}
	}
	m.m[k] = e
	m.mu.Unlock()
	return e.hash, e.flags, &prints
}

// fingerprint digests d's bytes as they are, each field length-prefixed:
// far cheaper than Hash, which re-encodes the schemas, and small to keep
// (a 10,000-tool catalog must not hold its definitions twice).
func fingerprint(d Definition) [sha256.Size]byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	field := func(b string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		io.WriteString(h, b) // sha256's digest copies no string
	}
	field(d.Name)
	field(d.Title)
	field(d.Description)
	field(string(d.InputSchema))
	field(string(d.OutputSchema))
	field(annotationsText(d.Annotations))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
