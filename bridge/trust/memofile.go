package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/toolbridge/toolbridge/config/statefile"
)

// memoFile is the state file that keeps the screening flags between runs
// (see memo). It holds derived values only: the pins stay the authority
// on what is pinned and approved.
const memoFile = "memo/review.json"

// MemoFormatVersion is the memo file format this package writes.
const MemoFormatVersion = 1

// maxMemoFileBytes bounds the memo file: maxMemo entries of long names
// and a few flags each fit well within it. A larger file is not read.
const maxMemoFileBytes = 64 << 20

// memoDoc is the memo file. Sum is the hex SHA-256 of Entries as written,
// so that a file damaged in place (a truncated or edited entry) is
// noticed even when it still parses; Key is rulesKey of the toolbridge
// that wrote it.
type memoDoc struct {
	Version int             `json:"version"`
	Key     string          `json:"key"`
	Sum     string          `json:"sum"`
	Entries json.RawMessage `json:"entries"`
}

// memoTool is one tool's entry: the fingerprint of the definition its
// flags were computed from.
type memoTool struct {
	Print []byte `json:"print"`
	Flags []Flag `json:"flags,omitempty"`
}

// LoadMemo reads the memo file of the store's state directory, made by
// toolbridge version, so that a review of unchanged tools does not scan
// them again. A missing file, or one another version or other rules
// wrote, is no error: the memo starts empty. A file that cannot be read
// or trusted (corrupt, too large, or one someone else could have written)
// is an error that names it; the memo starts empty and the next SaveMemo
// replaces the file. Only a file store has a memo file.
func (s *Store) LoadMemo(version string) error {
	if s.mem != nil || s.shared != nil {
		return nil
	}
	s.memoKey = rulesKey(version)
	entries, sum, err := readMemo(s.dir, s.memoKey)
	if err != nil {
		return fmt.Errorf("reading the review memo (it is ignored and written again): %w", err)
	}
	s.memo.mu.Lock()
	defer s.memo.mu.Unlock()
	s.memo.m = entries
	s.memo.saved = sum
	return nil
}

// readMemo reads the memo file made under key, and the digest of its
// entries; nil when there is none.
func readMemo(dir statefile.Dir, key string) (map[memoKey]memoEntry, [sha256.Size]byte, error) {
	var none [sha256.Size]byte
	path, err := dir.Path(memoFile)
	if err != nil {
		return nil, none, err
	}
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, none, nil
	} else if err == nil && fi.Size() > maxMemoFileBytes {
		return nil, none, &statefile.CorruptError{Path: path, Err: fmt.Errorf("%d bytes, more than the %d a memo may have", fi.Size(), maxMemoFileBytes)}
	}
	b, err := dir.Read(memoFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, none, nil
	}
	if err != nil {
		return nil, none, err
	}
	entries, sum, err := decodeMemo(b, key)
	if err != nil {
		return nil, none, &statefile.CorruptError{Path: path, Err: err}
	}
	return entries, sum, nil
}

// errOtherKey is decodeMemo's answer for a file another toolbridge
// version or other screening rules wrote: not corrupt, just not usable.
var errOtherKey = errors.New("made under other screening rules")

// decodeMemo parses a memo file made under key and returns its entries
// and their digest (nil entries for a file made under another key).
// Every entry is checked: a file with one bad entry is rejected whole.
func decodeMemo(b []byte, key string) (map[memoKey]memoEntry, [sha256.Size]byte, error) {
	var none [sha256.Size]byte
	if len(b) > maxMemoFileBytes {
		return nil, none, fmt.Errorf("%d bytes, more than the %d a memo may have", len(b), maxMemoFileBytes)
	}
	var doc memoDoc
	if err := statefile.DecodeStrict(b, &doc); err != nil {
		return nil, none, err
	}
	if doc.Version != MemoFormatVersion {
		return nil, none, fmt.Errorf("format version %d, want %d", doc.Version, MemoFormatVersion)
	}
	if doc.Key != key {
		return nil, none, nil // another toolbridge: start over, quietly
	}
	sum := sha256.Sum256(doc.Entries)
	if doc.Sum != hex.EncodeToString(sum[:]) {
		return nil, none, errors.New("its checksum does not match its entries")
	}
	var servers map[string]map[string]memoTool
	if err := json.Unmarshal(doc.Entries, &servers); err != nil {
		return nil, none, fmt.Errorf("entries: %w", err)
	}
	n := 0
	for _, tools := range servers {
		n += len(tools)
	}
	if n > maxMemo {
		return nil, none, fmt.Errorf("%d entries, more than the %d a memo may have", n, maxMemo)
	}
	out := make(map[memoKey]memoEntry, n)
	for server, tools := range servers {
		if _, err := fileName(server); err != nil {
			return nil, none, fmt.Errorf("entries: %w", err)
		}
		for tool, t := range tools {
			if len(t.Print) != sha256.Size {
				return nil, none, fmt.Errorf("entry %s/%s: a print of %d bytes, want %d", server, tool, len(t.Print), sha256.Size)
			}
			for _, f := range t.Flags {
				if f.Rule == "" || f.Where == "" {
					return nil, none, fmt.Errorf("entry %s/%s: a flag without rule or place", server, tool)
				}
			}
			e := memoEntry{flags: t.Flags, fromFile: true}
			copy(e.print[:], t.Print)
			out[memoKey{server, tool}] = e
		}
	}
	return out, sum, nil
}

// SaveMemo writes the flags of the tools this store reviewed since it was
// made, and the file's entries of the servers it did not review, to the
// memo file, atomically (mode 0600), if they differ from what
// the file holds. It does nothing for a store without a memo file (see
// LoadMemo, which must come first).
func (s *Store) SaveMemo() error {
	if s.mem != nil || s.shared != nil || s.memoKey == "" {
		return nil
	}
	s.memoSave.Lock() // one writer at a time, the last state last
	defer s.memoSave.Unlock()
	// The entries' digest first: a start whose memo is the file's (every
	// warm start) stops there, and the file's bytes are never made. They
	// were a second copy of the entries, live at start-up's peak.
	entries, sum, err := s.memo.entries()
	if err != nil {
		return fmt.Errorf("encoding the review memo: %w", err)
	}
	s.memo.mu.Lock()
	same := s.memo.saved == sum
	s.memo.mu.Unlock()
	if same {
		return nil
	}
	b, err := memoBytes(s.memoKey, entries, sum)
	if err != nil {
		return fmt.Errorf("encoding the review memo: %w", err)
	}
	if err := s.dir.Write(memoFile, b); err != nil {
		return fmt.Errorf("saving the review memo: %w", err)
	}
	s.memo.mu.Lock()
	s.memo.saved = sum
	s.memo.mu.Unlock()
	return nil
}

// encode renders the memo as a memo file made under key (see SaveMemo
// for which entries), and the digest of its entries.
func (m *memo) encode(key string) ([]byte, [sha256.Size]byte, error) {
	entries, sum, err := m.entries()
	if err != nil {
		return nil, sum, err
	}
	b, err := memoBytes(key, entries, sum)
	return b, sum, err
}

// memoBytes renders a memo file made under key of entries, whose digest
// is sum.
func memoBytes(key string, entries json.RawMessage, sum [sha256.Size]byte) ([]byte, error) {
	b, err := json.Marshal(memoDoc{Version: MemoFormatVersion, Key: key, Sum: hex.EncodeToString(sum[:]), Entries: entries})
	return append(b, '\n'), err
}

// entries renders the memo's entries (see SaveMemo for which), and their
// digest.
func (m *memo) entries() (json.RawMessage, [sha256.Size]byte, error) {
	servers := map[string]map[string]memoTool{}
	m.mu.Lock()
	// A server this run reviewed keeps the entries of the tools it offers
	// now; one it did not (another config on the same state directory,
	// a server that is down) keeps what the file had.
	reviewed := map[string]bool{}
	for k, e := range m.m {
		if e.used {
			reviewed[k.server] = true
		}
	}
	for k, e := range m.m {
		if !e.used && reviewed[k.server] {
			continue
		}
		if servers[k.server] == nil {
			servers[k.server] = map[string]memoTool{}
		}
		servers[k.server][k.tool] = memoTool{Print: e.print[:], Flags: e.flags}
	}
	m.mu.Unlock()
	entries, err := json.Marshal(servers) // map keys sorted: same memo, same bytes
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	return entries, sha256.Sum256(entries), nil
}
