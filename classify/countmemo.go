package classify

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config/statefile"
)

// countMemoFile is the state file that keeps token counts between runs.
const countMemoFile = "memo/tokens.json"

// CountMemoFormatVersion is the count memo file format this package writes.
const CountMemoFormatVersion = 1

// maxCountMemo bounds the counts a memo keeps and reads: past it, new
// counts are not remembered.
const maxCountMemo = 200000

// countRecord is one packed count: the SHA-256 of a tool's text (see
// toolText) and its token count, big-endian.
const countRecord = sha256.Size + 4

// maxCount is the largest count a memo file may hold: more tokens than
// any tool's text of the 16 MiB an MCP message may sensibly carry.
const maxCount = 1 << 24

// CountMemo is a Counter that remembers the count of each tool's text,
// by the text's SHA-256, in a state file, so that a start whose tools did
// not change does not tokenize them again (a cold o200k_base count is
// about 70 µs a tool). Counts depend on the text and the tokenizer only,
// and the file names its tokenizer. A count is no security decision: a
// wrong one could only move the bridge-mode threshold.
type CountMemo struct {
	Counter
	dir statefile.Dir

	mu sync.Mutex
	// old are the counts read from the file; now those used or made in
	// this run, which are what Save writes.
	old, now map[[sha256.Size]byte]int
	saved    [sha256.Size]byte
}

// NewCountMemo wraps c with a memo kept in dir. Call Load before use.
func NewCountMemo(c Counter, dir statefile.Dir) *CountMemo {
	return &CountMemo{Counter: c, dir: dir, now: map[[sha256.Size]byte]int{}}
}

// Count is c's Count, from the memo when it holds the tool's text.
func (m *CountMemo) Count(tool mcp.Tool) int {
	text := toolText(tool)
	k := sha256.Sum256(text)
	m.mu.Lock()
	n, ok := m.now[k]
	if !ok {
		if n, ok = m.old[k]; ok {
			m.now[k] = n
		}
	}
	m.mu.Unlock()
	if ok {
		return n
	}
	if b, isBPE := m.Counter.(*bpeCounter); isBPE {
		n = b.countString(string(text))
	} else {
		n = m.Counter.Count(tool)
	}
	m.mu.Lock()
	if len(m.now) < maxCountMemo {
		m.now[k] = n
	}
	m.mu.Unlock()
	return n
}

// countMemoDoc is the file: the tokenizer, and the records packed
// (countRecord bytes each, base64 in JSON) with their SHA-256, so that a
// file damaged in place is noticed.
type countMemoDoc struct {
	Version   int    `json:"version"`
	Tokenizer string `json:"tokenizer"`
	Sum       string `json:"sum"`
	Counts    []byte `json:"counts"`
}

// Load reads the memo file. A missing file, or one of another tokenizer,
// is no error: the memo starts empty. A file that cannot be read or
// trusted is an error naming it; the memo starts empty and the next Save
// replaces it.
func (m *CountMemo) Load() error {
	path, err := m.dir.Path(countMemoFile)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("reading the token count memo (it is ignored and written again): %w", &statefile.CorruptError{Path: path, Err: err})
	}
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err == nil && fi.Size() > 4*maxCountMemo*countRecord {
		return fail(fmt.Errorf("%d bytes, more than a memo of %d counts may have", fi.Size(), maxCountMemo))
	}
	b, err := m.dir.Read(countMemoFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the token count memo (it is ignored and written again): %w", err)
	}
	counts, sum, err := decodeCountMemo(b, m.Name())
	if err != nil {
		return fail(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.old, m.saved = counts, sum
	return nil
}

// decodeCountMemo parses a count memo file of tokenizer and returns its
// counts (nil for another tokenizer's) and the digest of its records.
func decodeCountMemo(b []byte, tokenizer string) (map[[sha256.Size]byte]int, [sha256.Size]byte, error) {
	var none [sha256.Size]byte
	var doc countMemoDoc
	if err := statefile.DecodeStrict(b, &doc); err != nil {
		return nil, none, err
	}
	if doc.Version != CountMemoFormatVersion {
		return nil, none, fmt.Errorf("format version %d, want %d", doc.Version, CountMemoFormatVersion)
	}
	if doc.Tokenizer != tokenizer {
		return nil, none, nil // counted by another tokenizer: start over
	}
	sum := sha256.Sum256(doc.Counts)
	if doc.Sum != hex.EncodeToString(sum[:]) {
		return nil, none, errors.New("its checksum does not match its counts")
	}
	if len(doc.Counts)%countRecord != 0 {
		return nil, none, fmt.Errorf("%d bytes of counts, not a whole number of %d-byte records", len(doc.Counts), countRecord)
	}
	if len(doc.Counts)/countRecord > maxCountMemo {
		return nil, none, fmt.Errorf("%d counts, more than the %d a memo may have", len(doc.Counts)/countRecord, maxCountMemo)
	}
	counts := make(map[[sha256.Size]byte]int, len(doc.Counts)/countRecord)
	for r := doc.Counts; len(r) > 0; r = r[countRecord:] {
		var k [sha256.Size]byte
		copy(k[:], r)
		n := binary.BigEndian.Uint32(r[sha256.Size:])
		if n > maxCount {
			return nil, none, fmt.Errorf("a count of %d tokens, more than %d", n, maxCount)
		}
		counts[k] = int(n)
	}
	return counts, sum, nil
}

// Save writes the counts used or made since Load, and those of the file
// that still fit (see records), to the memo file,
// atomically (mode 0600), if they differ from what it holds.
func (m *CountMemo) Save() error {
	// The records' digest first: a start whose counts are the file's
	// (every warm start) stops there, and the file's bytes are never made.
	packed, sum := m.records()
	m.mu.Lock()
	same := sum == m.saved
	m.mu.Unlock()
	if same {
		return nil
	}
	b := m.fileBytes(packed, sum)
	if err := m.dir.Write(countMemoFile, b); err != nil {
		return fmt.Errorf("saving the token count memo: %w", err)
	}
	m.mu.Lock()
	m.saved = sum
	m.mu.Unlock()
	return nil
}

// fileBytes renders a memo file of packed records, whose digest is sum.
func (m *CountMemo) fileBytes(packed []byte, sum [sha256.Size]byte) []byte {
	b, _ := json.Marshal(countMemoDoc{Version: CountMemoFormatVersion, Tokenizer: m.Name(), Sum: hex.EncodeToString(sum[:]), Counts: packed}) // plain fields always encode
	return append(b, '\n')
}

// records packs the counts to save, sorted, and their digest.
func (m *CountMemo) records() ([]byte, [sha256.Size]byte) {
	m.mu.Lock()
	// The file's counts that this run did not use stay (another config
	// on the same state directory, a server that is down), while they
	// fit: past maxCountMemo only this run's are kept.
	// The union is listed by key, not made as a map: a third map of every
	// count was live at start-up's peak.
	keys := slices.Collect(maps.Keys(m.now))
	if ours := len(keys); len(m.old) > 0 {
		for k := range m.old {
			if _, ok := m.now[k]; !ok {
				keys = append(keys, k)
			}
		}
		switch {
		case len(keys) > maxCountMemo:
			keys = keys[:ours]
		case len(keys) == ours:
			// Every count of the file is this run's too (Count moves
			// what it reads): old holds nothing now lacks, and goes.
			m.old = nil
		}
	}
	count := func(k [sha256.Size]byte) int {
		if n, ok := m.now[k]; ok {
			return n
		}
		return m.old[k]
	}
	packed := make([]byte, 0, len(keys)*countRecord)
	sortDigests(keys)
	for _, k := range keys {
		packed = append(packed, k[:]...)
		packed = binary.BigEndian.AppendUint32(packed, uint32(min(count(k), maxCount)))
	}
	m.mu.Unlock()
	return packed, sha256.Sum256(packed)
}

func sortDigests(keys [][sha256.Size]byte) {
	slices.SortFunc(keys, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
}
