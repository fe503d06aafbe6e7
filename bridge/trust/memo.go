package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"
	"sync"
)

// memo remembers each tool's hash and flags, so that a review of a
// catalog whose tools did not change (a list_changed from one server
// re-reviews them all) compares definitions instead of re-encoding,
// hashing and scanning every schema. An entry is used only for a
// definition equal to the one it was made from.
//
// A file store also keeps the flags in a memo file (see memofile.go), so
// that a start with unchanged tools does not scan every schema again.
// Flags read from that file are used only where they cannot decide
// whether a tool is held (see evaluate); hashes are never read from it.
type memo struct {
	mu sync.Mutex
	m  map[memoKey]memoEntry
	// saved is the digest of the entries last read from or written to the
	// memo file, so that an unchanged memo is not written again.
	saved [sha256.Size]byte
}

type memoKey struct{ server, tool string }

type memoEntry struct {
	print [sha256.Size]byte // of the definition's bytes, see fingerprint
	// hash is "" when not computed in this process: the memo file keeps
	// no hashes, since a hash decides whether a tool is pinned.
	hash  string
	flags []Flag
	// fromFile is set while the flags are the memo file's, not computed
	// in this process.
	fromFile bool
	// used is set once this process reviewed the tool: of a server it
	// reviewed, only those entries are written back, so the file follows
	// the catalog.
	used bool
}

// maxMemo bounds the memo; past it, it starts over.
const maxMemo = 100000

// assess returns d's hash and flags, from the memo when it holds d. A nil
// memo computes them.
func (m *memo) assess(server string, d Definition) (string, []Flag) {
	hash, flags, _ := m.assessPrints(server, d, fingerprint(d))
	return hash, flags
}

// assessPrints is assess given d's fingerprint, that also returns d's
// field prints when it computed the hash (nil from the memo or a nil
// memo): a memory store keeps them for a tool pinned on first use, which
// is almost always a tool the memo has not seen, and canonicalizing twice
// would double the cost of a first review. Flags from the memo file are
// not used: they are computed again.
func (m *memo) assessPrints(server string, d Definition, print [sha256.Size]byte) (string, []Flag, *fieldPrints) {
	if m == nil {
		return d.Hash(), Check(d), nil
	}
	k := memoKey{server, d.Name}
	m.mu.Lock()
	e, ok := m.m[k]
	if ok && e.print == print && e.hash != "" && !e.fromFile {
		if !e.used {
			e.used = true
			m.m[k] = e
		}
		m.mu.Unlock()
		return e.hash, e.flags, nil
	}
	m.mu.Unlock()
	hash, prints := d.digest()
	e = memoEntry{print: print, hash: hash, flags: Check(d), used: true}
	m.put(k, e)
	return e.hash, e.flags, &prints
}

// flagsOf returns d's flags, from the memo when it holds d; fromFile says
// whether flags read from the memo file may be used.
func (m *memo) flagsOf(server string, d Definition, print [sha256.Size]byte, fromFile bool) []Flag {
	if m == nil {
		return Check(d)
	}
	k := memoKey{server, d.Name}
	m.mu.Lock()
	e, ok := m.m[k]
	if ok && e.print == print && (fromFile || !e.fromFile) {
		if !e.used {
			e.used = true
			m.m[k] = e
		}
		m.mu.Unlock()
		return e.flags
	}
	m.mu.Unlock()
	if !ok || e.print != print {
		e = memoEntry{print: print}
	}
	e.flags, e.fromFile, e.used = Check(d), false, true
	m.put(k, e)
	return e.flags
}

// put stores e under k.
func (m *memo) put(k memoKey, e memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[memoKey]memoEntry{}
	}
	m.m[k] = e
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

// pinnedPrint is the fingerprint of a pinned definition as the upstream
// most likely sends it again: a pin file holds the schemas indented, and
// servers send them compact. A server that sends them otherwise only
// misses this shortcut (see evaluate): its tools are hashed.
func pinnedPrint(d Definition) [sha256.Size]byte {
	d.InputSchema = compactJSON(d.InputSchema)
	d.OutputSchema = compactJSON(d.OutputSchema)
	return fingerprint(d)
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// rulesVersion names the screening rules' logic, for the memo file's key:
// raise it with any change to Check that the patterns below do not show
// (a new rule, a changed walk). The patterns and limits themselves are in
// the key already (see rulesKey).
const rulesVersion = 1

// rulesKey is what the flags in a memo file depend on besides the tool:
// the toolbridge version and the screening rules. A file made under
// another key is not used.
func rulesKey(version string) string {
	h := sha256.New()
	parts := []string{
		version, strconv.Itoa(rulesVersion), strconv.Itoa(LongDescription),
		hiddenTag.String(), override.String(), secretFile.String(),
	}
	parts = append(append(append(parts, overrideWords...), secretWords...), commonScripts...)
	for _, s := range parts {
		io.WriteString(h, strconv.Itoa(len(s))+":"+s)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
