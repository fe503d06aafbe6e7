package trust

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolbridge/toolbridge/config"
)

// Pin is one tool's recorded definition.
type Pin struct {
	// Hash is Definition.Hash of the pinned definition.
	Hash string `json:"hash"`
	// PinnedAt is when the definition was pinned.
	PinnedAt time.Time `json:"pinned_at"`
	// Approved is set when a person approved the definition ("toolbridge
	// trust approve"), rather than it being pinned on first use. Only an
	// approved pin releases a suspicious tool under block_suspicious.
	Approved bool `json:"approved,omitempty"`
	// Definition is the pinned definition, kept for diffs. A Store keeps
	// it only on disk: see storedPin.
	Definition Definition `json:"definition"`
}

// NewPin pins d at now.
func NewPin(d Definition, now time.Time, approved bool) Pin { return pinAt(d, d.Hash(), now, approved) }

// pinAt is NewPin for a definition whose hash is known.
func pinAt(d Definition, hash string, now time.Time, approved bool) Pin {
	return Pin{Hash: hash, PinnedAt: now.UTC().Truncate(time.Second), Approved: approved, Definition: d}
}

// ServerPins is one server's state file.
type ServerPins struct {
	// Version is the file format, FormatVersion.
	Version int `json:"version"`
	// Tools are the pins by tool name.
	Tools map[string]Pin `json:"tools"`
}

// FormatVersion is the pin file format this package writes.
const FormatVersion = 1

// storedPin is a pin as a Store keeps it in memory: what a review of an
// unchanged tool needs (its hash), what a listing shows (when, approved),
// and not the definition, which only a changed tool's reason needs. A
// memory store keeps the field prints instead, to name what changed; a
// file store keeps nothing more and reads the file again for a changed
// tool (rare: only while a change is held).
type storedPin struct {
	hash     string
	at       int64 // PinnedAt in Unix seconds (pins are taken to the second)
	approved bool
	prints   *fieldPrints // nil in a file store
	// def is the fingerprint of the pinned definition (see pinnedPrint),
	// when it was known: a review of a tool whose bytes are the pinned
	// ones takes the pin's hash and need not hash the tool.
	def    [sha256.Size]byte
	hasDef bool
}

// store returns p as a file store keeps it in memory.
func (p Pin) store() storedPin {
	sp := storedPin{hash: p.Hash, at: p.PinnedAt.Unix(), approved: p.Approved}
	if p.Definition.Name != "" {
		sp.def, sp.hasDef = pinnedPrint(p.Definition), true
	}
	return sp
}

// storePrinted returns p as a memory store keeps it, with prints, the
// field prints of its definition when known (else computed).
func (p Pin) storePrinted(prints *fieldPrints) storedPin {
	sp := p.store()
	if prints == nil {
		fp := p.Definition.prints()
		prints = &fp
	}
	sp.prints = prints
	return sp
}

// pin is the stored pin as a Pin, without its definition.
func (sp storedPin) pin() Pin {
	return Pin{Hash: sp.hash, PinnedAt: time.Unix(sp.at, 0).UTC(), Approved: sp.approved}
}

// pinSet is one server's pins as a review reads them: read in full, with
// their definitions (Evaluate, or a file store's pins read again), or as a
// Store keeps them.
type pinSet struct {
	full   *ServerPins
	stored map[string]storedPin
	// stale pins are a shared store's as last read, kept while it cannot
	// be reached (see NewSharedStore).
	stale bool
}

// lookup returns the pin of tool name, what names its changed fields (the
// pinned definition (full) or the field prints) and the fingerprint of
// the pinned definition when it is known.
func (s *pinSet) lookup(name string) (Pin, *fieldPrints, *[sha256.Size]byte, bool) {
	if s.full != nil {
		p, ok := s.full.Tools[name]
		return p, nil, nil, ok
	}
	sp, ok := s.stored[name]
	if !sp.hasDef {
		return sp.pin(), sp.prints, nil, ok
	}
	return sp.pin(), sp.prints, &sp.def, ok
}

// names returns the names of the pinned tools.
func (s *pinSet) names() iter.Seq[string] {
	if s.full != nil {
		return maps.Keys(s.full.Tools)
	}
	return maps.Keys(s.stored)
}

// errNoDefinition is evaluate's answer when a changed tool's fields
// cannot be named from the pins given: the caller reads them in full.
var errNoDefinition = errors.New("the pinned definition is not in memory")

// State is where a tool stands against its pin.
type State string

// The states.
const (
	// StatePinned: the definition matches its pin.
	StatePinned State = "pinned"
	// StateNew: the tool has no pin yet.
	StateNew State = "new"
	// StateChanged: the definition differs from its pin.
	StateChanged State = "changed"
	// StateUnchecked: trust mode off; nothing is compared.
	StateUnchecked State = "unchecked"
)

// Verdict is one tool's standing.
type Verdict struct {
	// Server and Name identify the tool.
	Server, Name string
	// State compares the definition with its pin.
	State State
	// Held tools are quarantined: not listed, not searchable, not
	// callable. Only mode pin holds anything.
	Held bool
	// Reason says why the tool is held or, in mode warn, why it would be;
	// "" when nothing is wrong.
	Reason string
	// FirstUse is set when this review pinned the tool on first sight.
	FirstUse bool
	// Changed names the fields that differ from the pin.
	Changed []string
	// Flags are the suspicious-description findings.
	Flags []Flag
	// Pin is the recorded pin, when there is one. Its Definition is set
	// by Evaluate and, for a changed tool, by a file Store's Review; a
	// Store keeps no definitions in memory (see storedPin).
	Pin *Pin
	// Definition is the tool as the server offers it now, and Hash its hash.
	Definition Definition
	Hash       string
}

// Review is the outcome of comparing one server's tools with its pins.
type Review struct {
	Server string
	// Verdicts has one entry per offered tool, in the order given.
	Verdicts []Verdict
	// NewPins are the pins first use adds; the caller stores them.
	NewPins map[string]Pin
	// Gone are pinned tools the server no longer offers (sorted). Their
	// pins stay: a tool that comes back changed is still caught.
	Gone []string
	// prints are the field prints of NewPins, by name, where the review
	// computed them: a memory store keeps them (see memo.assessPrints).
	prints map[string]*fieldPrints
}

// Evaluate compares a server's offered tools with its pins under policy p.
// pins is nil when the server has no pin file yet (a new server). It does
// no I/O: the caller stores r.NewPins. approveCmd renders the command that
// approves a tool, given its name; it is named in each reason.
func Evaluate(p config.Trust, server string, pins *ServerPins, defs []Definition, now time.Time, approveCmd func(tool string) string) Review {
	var set *pinSet
	if pins != nil {
		set = &pinSet{full: pins}
	}
	r, _ := evaluate(p, server, set, defs, now, approveCmd, nil) // full pins name every change
	return r
}

// evaluate is Evaluate on a pin set (nil: no pins yet), with the hashes
// and flags taken from memo, which may be nil. It fails, with
// errNoDefinition, only for stored pins that keep neither definitions nor
// prints (a file store's) when a tool changed.
func evaluate(p config.Trust, server string, pins *pinSet, defs []Definition, now time.Time, approveCmd func(tool string) string, memo *memo) (Review, error) {
	r := Review{Server: server, NewPins: map[string]Pin{}}
	offered := map[string]bool{}
	for _, d := range defs {
		offered[d.Name] = true
		print := fingerprint(d)
		var pin *Pin
		var pinned *fieldPrints
		var pinnedDef *[sha256.Size]byte
		if pins != nil && p.Mode != config.TrustOff {
			if old, fp, dp, ok := pins.lookup(d.Name); ok {
				pin, pinned, pinnedDef = &old, fp, dp
			}
		}
		var hash string
		var flags []Flag
		var prints *fieldPrints
		if pin != nil && pinnedDef != nil && *pinnedDef == print {
			// The tool is, byte for byte, the definition its pin holds:
			// the pin, not a memo, gives its hash. Flags from the memo file
			// are used only where they cannot hold or release the tool:
			// under block_suspicious, an unapproved tool is scanned afresh.
			hash = pin.Hash
			flags = memo.flagsOf(server, d, print, !p.BlockSuspicious || pin.Approved)
		} else {
			hash, flags, prints = memo.assessPrints(server, d, print)
		}
		v := Verdict{Server: server, Name: d.Name, Definition: d, Hash: hash, Flags: flags}
		var reasons []string
		if p.Mode == config.TrustOff {
			v.State = StateUnchecked
			r.Verdicts = append(r.Verdicts, v)
			continue
		}
		v.Pin = pin
		switch {
		case pin == nil:
			v.State = StateNew
		case pin.Hash == v.Hash:
			v.State = StatePinned
		default:
			v.State = StateChanged
			switch {
			case pins.full != nil:
				v.Changed = ChangedFields(pin.Definition, d)
			case pinned != nil:
				v.Changed = changedSince(*pinned, d)
			default:
				return Review{Server: server}, fmt.Errorf("naming what changed in tool %q: %w", d.Name, errNoDefinition)
			}
			if len(v.Changed) == 0 {
				// Same content, different hash: a pin written by another
				// version's canonical form. Name the hash, not a field.
				v.Changed = []string{"hash"}
			}
			reasons = append(reasons, fmt.Sprintf("its %s changed since it was pinned on %s", andList(v.Changed), pin.PinnedAt.UTC().Format(time.DateOnly)))
		}
		if v.State == StateNew && pins == nil && p.NewServers == config.NewServersQuarantine {
			reasons = append(reasons, fmt.Sprintf("server %q is new and trust.new_servers is quarantine", server))
		}
		approved := pin != nil && pin.Approved && v.State == StatePinned
		if p.BlockSuspicious && len(v.Flags) > 0 && !approved {
			reasons = append(reasons, "its "+v.Flags[0].String()+suspiciousMore(len(v.Flags)-1))
		}
		if v.State == StateNew && len(reasons) == 0 {
			np := pinAt(d, v.Hash, now, false)
			r.NewPins[d.Name] = np
			if prints != nil {
				if r.prints == nil {
					r.prints = map[string]*fieldPrints{}
				}
				r.prints[d.Name] = prints
			}
			v.Pin, v.FirstUse, v.State = &np, true, StatePinned
		}
		if len(reasons) > 0 {
			v.Held = p.Mode == config.TrustPin
			v.Reason = strings.Join(reasons, "; ")
			if approveCmd != nil {
				v.Reason += "; review and approve it with: " + approveCmd(d.Name)
			}
		}
		r.Verdicts = append(r.Verdicts, v)
	}
	if pins != nil {
		for name := range pins.names() {
			if !offered[name] {
				r.Gone = append(r.Gone, name)
			}
		}
		slices.Sort(r.Gone)
	}
	return r, nil
}

func suspiciousMore(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (and 1 more flag)"
	}
	return fmt.Sprintf(" (and %d more flags)", n)
}

// andList joins words as "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
