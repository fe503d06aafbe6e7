package trust

import (
	"bytes"
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
	def   Definition
	hash  string
	flags []Flag
}

// maxMemo bounds the memo; past it, it starts over.
const maxMemo = 100000

// assess returns d's hash and flags, from the memo when it holds d. A nil
// memo computes them.
func (m *memo) assess(server string, d Definition) (string, []Flag) {
	if m == nil {
		return d.Hash(), Check(d)
	}
	k := memoKey{server, d.Name}
	m.mu.Lock()
	e, ok := m.m[k]
	m.mu.Unlock()
	if ok && sameDefinition(e.def, d) {
		return e.hash, e.flags
	}
	e = memoEntry{def: d, hash: d.Hash(), flags: Check(d)}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[memoKey]memoEntry{}
	}
	m.m[k] = e
	m.mu.Unlock()
	return e.hash, e.flags
}

// sameDefinition reports whether a and b are byte for byte the same.
func sameDefinition(a, b Definition) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		annotationsText(a.Annotations) == annotationsText(b.Annotations)
}
