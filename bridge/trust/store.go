package trust

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

// pinsDir is the state directory's subdirectory of pin files, one per
// server: pins/<server>.json. Server names are ^[a-zA-Z0-9_-]{1,64}$, so a
// name is always a safe file name.
const pinsDir = "pins"

// Store keeps the pins in a state directory. Every write is atomic; a
// corrupt pin file is a *statefile.CorruptError and is never overwritten.
// A Store is safe for concurrent use within one process.
type Store struct {
	dir statefile.Dir
	// mem holds the pins instead of dir when there is no state directory.
	mem map[string]ServerPins
	mu  sync.Mutex // serialises read-modify-write within this process
	// memo spares Review re-hashing tools that did not change; read
	// spares it re-reading pin files that did not change.
	memo memo
	read map[string]readPins
}

// NewStore returns the pin store in dir.
func NewStore(dir statefile.Dir) *Store { return &Store{dir: dir} }

// NewMemoryStore returns a store that keeps pins in memory only, for a
// process without a state directory: changes within one run are still
// caught, but every run starts on first use.
func NewMemoryStore() *Store { return &Store{mem: map[string]ServerPins{}} }

// Persistent reports whether the pins outlive the process.
func (s *Store) Persistent() bool { return s.mem == nil }

// Dir is where the pins are kept: the state directory's pins
// subdirectory, or "" for a memory store.
func (s *Store) Dir() string {
	if s.mem != nil {
		return ""
	}
	p, _ := s.dir.Path(pinsDir)
	return p
}

func fileName(server string) (string, error) {
	if server == "" || strings.ContainsAny(server, "/\\.\x00") {
		return "", fmt.Errorf("invalid server name %q for a pin file", server)
	}
	return pinsDir + "/" + server + ".json", nil
}

// Load returns the server's pins, or nil when it has none yet.
func (s *Store) Load(server string) (*ServerPins, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load(server)
}

func (s *Store) load(server string) (*ServerPins, error) {
	name, err := fileName(server)
	if err != nil {
		return nil, err
	}
	if s.mem != nil {
		p, ok := s.mem[server]
		if !ok {
			return nil, nil
		}
		p.Tools = maps.Clone(p.Tools)
		return &p, nil
	}
	// Every write replaces the file (a new inode), so an unchanged
	// file, size and modification time mean the pins read last time.
	path, err := s.dir.Path(name)
	if err != nil {
		return nil, err
	}
	fi, statErr := os.Stat(path)
	if c, ok := s.read[server]; ok && statErr == nil && os.SameFile(c.fi, fi) && c.fi.ModTime().Equal(fi.ModTime()) && c.fi.Size() == fi.Size() {
		p := c.pins
		p.Tools = maps.Clone(p.Tools)
		return &p, nil
	}
	delete(s.read, server)
	var p ServerPins
	found, err := s.dir.ReadJSON(name, &p)
	if err != nil {
		return nil, fmt.Errorf("loading pins of server %q: %w", server, err)
	}
	if !found {
		return nil, nil
	}
	if p.Version != FormatVersion {
		return nil, fmt.Errorf("loading pins of server %q: %w", server,
			&statefile.CorruptError{Path: path, Err: fmt.Errorf("format version %d, want %d", p.Version, FormatVersion)})
	}
	if p.Tools == nil {
		p.Tools = map[string]Pin{}
	}
	if statErr == nil {
		if s.read == nil {
			s.read = map[string]readPins{}
		}
		s.read[server] = readPins{fi: fi, pins: ServerPins{Version: p.Version, Tools: maps.Clone(p.Tools)}}
	}
	return &p, nil
}

// readPins is a pin file as last read, so that a gateway re-reviewing on
// every catalog change does not parse an unchanged file again.
type readPins struct {
	fi   os.FileInfo
	pins ServerPins
}

// update changes a server's pins in place: fn gets the current pins
// (empty when none) and its changes are written atomically. A file left
// with no pins is removed.
func (s *Store) update(server string, fn func(*ServerPins) error) error {
	name, err := fileName(server)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.load(server)
	if err != nil {
		return err
	}
	if p == nil {
		p = &ServerPins{Tools: map[string]Pin{}}
	}
	if err := fn(p); err != nil {
		return err
	}
	if s.mem != nil {
		if len(p.Tools) == 0 {
			delete(s.mem, server)
		} else {
			p.Version = FormatVersion
			s.mem[server] = *p
		}
		return nil
	}
	if len(p.Tools) == 0 {
		if err := s.dir.Remove(name); err != nil {
			return fmt.Errorf("removing pins of server %q: %w", server, err)
		}
		return nil
	}
	p.Version = FormatVersion
	if err := s.dir.WriteJSON(name, p); err != nil {
		return fmt.Errorf("saving pins of server %q: %w", server, err)
	}
	return nil
}

// Add records pins, keeping any pin the file already holds for the same
// tool: two gateways reviewing at once must not replace each other's
// first-use pin, and an approval written meanwhile must stand.
func (s *Store) Add(server string, pins map[string]Pin) error {
	if len(pins) == 0 {
		return nil
	}
	return s.update(server, func(p *ServerPins) error {
		for name, pin := range pins {
			if _, ok := p.Tools[name]; !ok {
				p.Tools[name] = pin
			}
		}
		return nil
	})
}

// Approve pins the given definitions as approved by a person, replacing
// their pins.
func (s *Store) Approve(server string, defs []Definition, now time.Time) error {
	if len(defs) == 0 {
		return nil
	}
	return s.update(server, func(p *ServerPins) error {
		for _, d := range defs {
			p.Tools[d.Name] = NewPin(d, now, true)
		}
		return nil
	})
}

// Forget removes the named pins of a server, or all of them when names is
// empty. It returns the names it removed, sorted.
func (s *Store) Forget(server string, names ...string) ([]string, error) {
	var removed []string
	err := s.update(server, func(p *ServerPins) error {
		if len(names) == 0 {
			removed = slices.Sorted(maps.Keys(p.Tools))
			clear(p.Tools)
			return nil
		}
		for _, n := range names {
			if _, ok := p.Tools[n]; ok {
				delete(p.Tools, n)
				removed = append(removed, n)
			}
		}
		slices.Sort(removed)
		return nil
	})
	return removed, err
}

// Servers returns the servers that have pins, sorted.
func (s *Store) Servers() ([]string, error) {
	if s.mem != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Sorted(maps.Keys(s.mem)), nil
	}
	files, err := s.dir.List(pinsDir)
	if err != nil {
		return nil, fmt.Errorf("listing pinned servers: %w", err)
	}
	var out []string
	for _, f := range files {
		if name, ok := strings.CutSuffix(f, ".json"); ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// Review loads a server's pins, evaluates its offered tools against them
// (see Evaluate) and stores the pins first use adds. In mode off it reads
// and writes nothing. When the pins cannot be read (a corrupt file, which
// is left as it is) the review is empty; when they are read but the new
// pins cannot be written, the review is whole and the error says the pins
// were not saved.
func (s *Store) Review(p config.Trust, server string, defs []Definition, now time.Time, approveCmd func(tool string) string) (Review, error) {
	if p.Mode == config.TrustOff {
		return evaluate(p, server, nil, defs, now, approveCmd, &s.memo), nil
	}
	pins, err := s.Load(server)
	if err != nil {
		return Review{Server: server}, err
	}
	r := evaluate(p, server, pins, defs, now, approveCmd, &s.memo)
	if err := s.Add(server, r.NewPins); err != nil {
		return r, err
	}
	return r, nil
}
