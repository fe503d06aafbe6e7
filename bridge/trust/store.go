package trust

import (
	"errors"
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
//
// In memory a Store keeps each pin as a storedPin, not the pinned
// definition: a gateway reviews every tool on every catalog change, and a
// 10,000-tool catalog must not be held twice.
type Store struct {
	dir statefile.Dir
	// shared holds the pins instead of dir when gateways share them (the
	// replicas of a team's gateway, in Redis); cache is what it held at
	// each server's last read, for reviews and for while it is down.
	shared Shared
	cache  map[string]sharedPins // guarded by mu
	// unread are the servers whose pins the last review could not read
	// from the shared store, or could not write there (guarded by mu):
	// see Unread.
	unread map[string]bool
	// mem holds the pins instead of dir when there is no state directory.
	// Its maps are replaced, never changed, so a review reads them unlocked.
	mem map[string]map[string]storedPin
	mu  sync.Mutex // serialises read-modify-write within this process
	// memo spares Review re-hashing tools that did not change; read
	// spares it re-reading pin files that did not change.
	memo memo
	read map[string]readPins
	// memoKey is the memo file's key (see LoadMemo), "" without one;
	// memoSave orders SaveMemo's writes.
	memoKey  string
	memoSave sync.Mutex
}

// NewStore returns the pin store in dir.
func NewStore(dir statefile.Dir) *Store { return &Store{dir: dir} }

// NewMemoryStore returns a store that keeps pins in memory only, for a
// process without a state directory: changes within one run are still
// caught, but every run starts on first use. It keeps no definitions,
// only what a review needs (see storedPin).
func NewMemoryStore() *Store { return &Store{mem: map[string]map[string]storedPin{}} }

// Shared is where a Store keeps pins that several gateways share: the
// replicas of one team's gateway, in Redis (package bridge/state
// implements it). Each method is one atomic step in the shared store, so
// replicas pinning and approving at once never undo each other's work.
type Shared interface {
	// Load returns the server's pins (nil when it has none) and their
	// version, a string that changes whenever they do ("" when there are
	// none). When known is the version stored now, Load returns nil pins
	// and known: the caller's copy is current.
	Load(server, known string) (pins *ServerPins, version string, err error)
	// Add stores pins, keeping any already stored for the same tool.
	Add(server string, pins map[string]Pin) error
	// Put stores pins, replacing those stored for the same tools.
	Put(server string, pins map[string]Pin) error
	// Forget removes the named pins, or all of the server's when names
	// is empty, and returns the names it removed, sorted.
	Forget(server string, names []string) ([]string, error)
	// Servers returns the servers that have pins, sorted.
	Servers() ([]string, error)
	// String says where the pins are kept, for messages (no secret).
	String() string
	// Unreachable reports whether err, from one of these methods, means
	// the store could not be asked, as opposed to an answer that is
	// wrong (a pin that does not decode): only then does a review go on
	// with the pins it last read.
	Unreachable(err error) bool
}

// sharedPins is a server's pins as a shared store last gave them: their
// version and what a review needs of each, with the field prints, so
// that a changed tool's fields are named without another read, even while
// the shared store cannot be reached.
type sharedPins struct {
	version string
	tools   map[string]storedPin
}

// NewSharedStore returns a store that keeps the pins in sh, shared by
// several gateways. A review reads them afresh (one round trip when they
// did not change, see Shared.Load). While sh cannot be reached a review
// uses the pins it last read and fails closed: a held tool stays held, a
// tool with no pin is held rather than pinned, approvals wait; a server
// whose pins were never read has all its tools held in mode pin.
func NewSharedStore(sh Shared) *Store {
	return &Store{shared: sh, cache: map[string]sharedPins{}, unread: map[string]bool{}}
}

// Unread reports whether the last review of one of servers could not
// read its pins from the shared store, or write the first-use pins it
// made, and so held or kept what it could not check: the gateway reviews
// again once the store answers.
func (s *Store) Unread(servers ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range servers {
		if s.unread[name] {
			return true
		}
	}
	return false
}

// Persistent reports whether the pins outlive the process.
func (s *Store) Persistent() bool { return s.mem == nil }

// Dir is where the pins are kept: the state directory's pins
// subdirectory, the shared store (see Shared.String), or "" for a memory
// store.
func (s *Store) Dir() string {
	if s.mem != nil {
		return ""
	}
	if s.shared != nil {
		return s.shared.String()
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

// Load returns the server's pins, or nil when it has none yet. A file
// store reads them in full, definitions included; a memory store keeps
// no definitions, so the Definition of each pin it returns holds only the
// tool's name.
func (s *Store) Load(server string) (*ServerPins, error) {
	if s.mem != nil {
		set, err := s.stored(server)
		if set == nil || err != nil {
			return nil, err
		}
		p := &ServerPins{Version: FormatVersion, Tools: make(map[string]Pin, len(set.stored))}
		for tool, sp := range set.stored {
			pin := sp.pin()
			pin.Definition.Name = tool
			p.Tools[tool] = pin
		}
		return p, nil
	}
	name, err := fileName(server)
	if err != nil {
		return nil, err
	}
	if s.shared != nil {
		p, _, err := s.shared.Load(server, "")
		if err != nil {
			return nil, fmt.Errorf("loading pins of server %q: %w", server, err)
		}
		return p, nil
	}
	return s.readFile(server, name) // written atomically: no lock needed to read
}

// readFile reads and checks a server's pin file (name), or returns nil
// when there is none.
func (s *Store) readFile(server, name string) (*ServerPins, error) {
	var p ServerPins
	found, err := s.dir.ReadJSON(name, &p)
	if err != nil {
		return nil, fmt.Errorf("loading pins of server %q: %w", server, err)
	}
	if !found {
		return nil, nil
	}
	if p.Version != FormatVersion {
		path, _ := s.dir.Path(name) // name is valid: ReadJSON read it
		return nil, fmt.Errorf("loading pins of server %q: %w", server,
			&statefile.CorruptError{Path: path, Err: fmt.Errorf("format version %d, want %d", p.Version, FormatVersion)})
	}
	if p.Tools == nil {
		p.Tools = map[string]Pin{}
	}
	return &p, nil
}

// stored returns the server's pins as the store keeps them for reviews,
// or nil when it has none yet.
func (s *Store) stored(server string) (*pinSet, error) {
	name, err := fileName(server)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		if tools, ok := s.mem[server]; ok {
			return &pinSet{stored: tools}, nil
		}
		return nil, nil
	}
	if s.shared != nil {
		return s.storedShared(server)
	}
	// Every write replaces the file (a new inode), so an unchanged
	// file, size and modification time mean the pins read last time.
	path, err := s.dir.Path(name)
	if err != nil {
		return nil, err
	}
	fi, statErr := os.Stat(path)
	if c, ok := s.read[server]; ok && statErr == nil && os.SameFile(c.fi, fi) && c.fi.ModTime().Equal(fi.ModTime()) && c.fi.Size() == fi.Size() {
		return &pinSet{stored: c.tools}, nil
	}
	delete(s.read, server)
	p, err := s.readFile(server, name)
	if err != nil || p == nil {
		return nil, err
	}
	tools := make(map[string]storedPin, len(p.Tools))
	for tool, pin := range p.Tools {
		tools[tool] = pin.store()
	}
	if statErr == nil {
		if s.read == nil {
			s.read = map[string]readPins{}
		}
		s.read[server] = readPins{fi: fi, tools: tools}
	}
	return &pinSet{stored: tools}, nil
}

// storedShared is stored for a shared store; s.mu is held. The round
// trip is made under the lock, which only orders this process's reviews.
func (s *Store) storedShared(server string) (*pinSet, error) {
	c, cached := s.cache[server]
	p, version, err := s.shared.Load(server, c.version)
	if err != nil {
		s.unread[server] = true
	} else {
		delete(s.unread, server)
	}
	switch {
	case err != nil && cached && s.shared.Unreachable(err):
		return &pinSet{stored: c.tools, stale: true}, nil
	case err != nil:
		return nil, fmt.Errorf("loading pins of server %q: %w", server, err)
	case cached && p == nil && version != "" && version == c.version:
		return &pinSet{stored: c.tools}, nil
	case p == nil:
		delete(s.cache, server)
		return nil, nil
	}
	tools := make(map[string]storedPin, len(p.Tools))
	for tool, pin := range p.Tools {
		tools[tool] = pin.storePrinted(nil)
	}
	s.cache[server] = sharedPins{version: version, tools: tools}
	return &pinSet{stored: tools}, nil
}

// readPins is a pin file as last read, so that a gateway re-reviewing on
// every catalog change does not parse an unchanged file again. Its map is
// never changed once made.
type readPins struct {
	fi    os.FileInfo
	tools map[string]storedPin
}

// update changes a server's pins: inFile edits a pin file's, which are
// then written atomically (a file left with no pins is removed), and
// inMemory a memory store's.
func (s *Store) update(server string, inFile func(map[string]Pin), inMemory func(map[string]storedPin)) error {
	name, err := fileName(server)
	if err != nil {
		return err
	}
	if s.shared != nil {
		return errors.New("internal error: a shared store changes pins through Shared")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		tools := maps.Clone(s.mem[server]) // replaced, not changed: see mem
		if tools == nil {
			tools = map[string]storedPin{}
		}
		inMemory(tools)
		if len(tools) == 0 {
			delete(s.mem, server)
		} else {
			s.mem[server] = tools
		}
		return nil
	}
	p, err := s.readFile(server, name)
	if err != nil {
		return err
	}
	if p == nil {
		p = &ServerPins{Tools: map[string]Pin{}}
	}
	inFile(p.Tools)
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

// filePin and memoryPin convert a pin to what a file store and a memory
// store keep of it.
func filePin(p Pin) Pin         { return p }
func memoryPin(p Pin) storedPin { return p.storePrinted(nil) }

// addPins adds pins to tools, keeping any pin tools holds for the same tool.
func addPins[P any](tools map[string]P, pins map[string]Pin, conv func(Pin) P) {
	for name, pin := range pins {
		if _, ok := tools[name]; !ok {
			tools[name] = conv(pin)
		}
	}
}

// approvePins pins defs in tools as approved at now.
func approvePins[P any](tools map[string]P, defs []Definition, now time.Time, conv func(Pin) P) {
	for _, d := range defs {
		tools[d.Name] = conv(NewPin(d, now, true))
	}
}

// forgetPins removes the named pins from tools, or all of them when names
// is empty, and returns the names it removed, sorted.
func forgetPins[P any](tools map[string]P, names []string) []string {
	if len(names) == 0 {
		removed := slices.Sorted(maps.Keys(tools))
		clear(tools)
		return removed
	}
	var removed []string
	for _, n := range names {
		if _, ok := tools[n]; ok {
			delete(tools, n)
			removed = append(removed, n)
		}
	}
	slices.Sort(removed)
	return removed
}

// Add records pins, keeping any pin the file already holds for the same
// tool: two gateways reviewing at once must not replace each other's
// first-use pin, and an approval written meanwhile must stand.
func (s *Store) Add(server string, pins map[string]Pin) error {
	return s.add(server, pins, nil)
}

// add is Add given the field prints of some of the pins, by name.
func (s *Store) add(server string, pins map[string]Pin, prints map[string]*fieldPrints) error {
	if len(pins) == 0 {
		return nil
	}
	if s.shared != nil {
		if err := s.shared.Add(server, pins); err != nil {
			// Not written, so held: the review that wanted them must run
			// again once the store answers (see Unread), or a write that
			// failed just after Redis came back, empty, would leave the
			// server's tools held until the next change of its pins.
			s.mu.Lock()
			s.unread[server] = true
			s.mu.Unlock()
			return fmt.Errorf("saving pins of server %q: %w", server, err)
		}
		// Read them back, so that the pins this review trusted are the
		// ones kept for while the shared store cannot be reached.
		s.mu.Lock()
		defer s.mu.Unlock()
		_, _ = s.storedShared(server)
		return nil
	}
	return s.update(server,
		func(tools map[string]Pin) { addPins(tools, pins, filePin) },
		func(tools map[string]storedPin) {
			addPins(tools, pins, func(p Pin) storedPin { return p.storePrinted(prints[p.Definition.Name]) })
		})
}

// Approve pins the given definitions as approved by a person, replacing
// their pins.
func (s *Store) Approve(server string, defs []Definition, now time.Time) error {
	if len(defs) == 0 {
		return nil
	}
	if s.shared != nil {
		pins := map[string]Pin{}
		approvePins(pins, defs, now, filePin)
		if err := s.shared.Put(server, pins); err != nil {
			return fmt.Errorf("approving tools of server %q: %w", server, err)
		}
		return nil
	}
	return s.update(server,
		func(tools map[string]Pin) { approvePins(tools, defs, now, filePin) },
		func(tools map[string]storedPin) { approvePins(tools, defs, now, memoryPin) })
}

// Forget removes the named pins of a server, or all of them when names is
// empty. It returns the names it removed, sorted.
func (s *Store) Forget(server string, names ...string) ([]string, error) {
	if s.shared != nil {
		if _, err := fileName(server); err != nil {
			return nil, err
		}
		removed, err := s.shared.Forget(server, names)
		if err != nil {
			return nil, fmt.Errorf("forgetting pins of server %q: %w", server, err)
		}
		return removed, nil
	}
	var removed []string
	err := s.update(server,
		func(tools map[string]Pin) { removed = forgetPins(tools, names) },
		func(tools map[string]storedPin) { removed = forgetPins(tools, names) })
	return removed, err
}

// Servers returns the servers that have pins, sorted.
func (s *Store) Servers() ([]string, error) {
	if s.mem != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Sorted(maps.Keys(s.mem)), nil
	}
	if s.shared != nil {
		out, err := s.shared.Servers()
		if err != nil {
			return nil, fmt.Errorf("listing pinned servers: %w", err)
		}
		return out, nil
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
		r, _ := evaluate(p, server, nil, defs, now, approveCmd, &s.memo) // no pins, nothing to name
		return r, nil
	}
	pins, err := s.stored(server)
	if err != nil {
		return Review{Server: server}, err
	}
	r, err := evaluate(p, server, pins, defs, now, approveCmd, &s.memo)
	if err == nil && pins != nil && pins.stale {
		// The shared store cannot be reached: what it holds now is
		// unknown, so nothing is pinned and nothing new is trusted.
		holdUnpinned(p, &r)
		return r, nil
	}
	if errors.Is(err, errNoDefinition) && s.mem == nil {
		// A tool changed: its reason names the changed fields, which
		// only the file's definitions tell. Reading it again may find
		// other pins (another process approved meanwhile); the review
		// is then of those, as a whole.
		full, loadErr := s.Load(server)
		if loadErr != nil {
			return Review{Server: server}, loadErr
		}
		pins = nil
		if full != nil {
			pins = &pinSet{full: full}
		}
		r, err = evaluate(p, server, pins, defs, now, approveCmd, &s.memo)
	}
	if err != nil {
		return Review{Server: server}, fmt.Errorf("reviewing the tools of server %q: %w", server, err)
	}
	if err := s.add(server, r.NewPins, r.prints); err != nil {
		return r, err
	}
	return r, nil
}

// Prepare does the costly part of a later Review of the server's defs
// ahead of it: it reads the pins and fills the memo with the tools'
// hashes and flags. It changes no pins and reports nothing; a Review
// still decides everything. A gateway calls it for each server as it
// comes up, while others are still starting.
//
// A memory store does nothing here: the tools it pins on first use keep
// the field prints that only a review that hashes them computes (see
// memo.assessPrints), so hashing them ahead would cost a second
// canonicalization, and it has no memo file to read either.
func (s *Store) Prepare(p config.Trust, server string, defs []Definition) {
	if s.mem != nil {
		return
	}
	var pins *pinSet
	// A shared store's pins are read by the Review only: a round trip
	// here would be one more per server, and the hashes are the cost.
	if p.Mode != config.TrustOff && s.shared == nil {
		var err error
		if pins, err = s.stored(server); err != nil {
			return // the Review says so
		}
	}
	_, _ = evaluate(p, server, pins, defs, time.Now(), nil, &s.memo)
}

// holdUnpinned turns the first-use pins of a review made on stale pins
// into holds: another gateway may have pinned those tools otherwise, and
// whether it did cannot be known until the shared store answers again.
func holdUnpinned(p config.Trust, r *Review) {
	for i := range r.Verdicts {
		v := &r.Verdicts[i]
		if !v.FirstUse {
			continue
		}
		v.FirstUse, v.State, v.Pin = false, StateNew, nil
		v.Held = p.Mode == config.TrustPin
		v.Reason = "it is not pinned yet and the shared pins cannot be read now (Redis is unavailable), so it cannot be pinned until they can"
	}
	r.NewPins, r.prints = map[string]Pin{}, nil
}
