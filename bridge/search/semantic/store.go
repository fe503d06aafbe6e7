package semantic

import (
	"crypto/sha256"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Tool is one tool as the semantic index sees it.
type Tool struct {
	// ID is the canonical "server::tool" id.
	ID string
	// Server and Name are the tool's server and name.
	Server, Name string
	// Title and Description are the tool's title and description.
	Title, Description string
}

// maxTextBytes bounds the text embedded for one tool: the first part of a
// description says what the tool does, and small models read at most a
// few hundred tokens anyway.
const maxTextBytes = 1500

// Text is what is embedded for t: its name as words ("create_issue" reads
// "create issue"), its title and its description, cut at maxTextBytes.
func (t Tool) Text() string {
	parts := []string{nameWords(t.Name)}
	if t.Title != "" {
		parts = append(parts, t.Title)
	}
	if d := strings.Join(strings.Fields(t.Description), " "); d != "" {
		parts = append(parts, d)
	}
	s := strings.Join(parts, ". ")
	if len(s) > maxTextBytes {
		s = strings.ToValidUTF8(s[:maxTextBytes], "")
	}
	return s
}

// nameWords splits an identifier into words at _, -, ., / and
// lower-to-upper case changes.
func nameWords(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/' || r == ':':
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// textKey identifies a tool text; equal texts share one vector.
type textKey [16]byte

func keyOf(text string) textKey {
	sum := sha256.Sum256([]byte(text))
	return textKey(sum[:16])
}

// entry is one distinct tool text and its vector.
type entry struct {
	key  textKey
	text string // cleared once embedded
	slot int32  // -1 until embedded
	// tools are the tools with this text.
	tools []*tool
}

type tool struct {
	id, server, name string
	ent              *entry
}

// Store holds the tools' vectors: one per distinct text, normalised to
// unit length and quantised to int8 with a per-vector scale (cosine
// rankings from int8 and float32 differ by rounding only; see the
// harness). It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	byKey    map[textKey]*entry
	byID     map[string]*tool
	byServer map[string][]*tool
	// queue holds entries waiting for a vector, oldest first; entries
	// that were embedded or dropped meanwhile are skipped.
	queue []*entry
	// The vectors: slot s is vec[s*dim:(s+1)*dim] x scale[s]; slots[s]
	// is its entry, nil when free.
	dim   int
	vec   []int8
	scale []float32
	// f32, when exact is set, holds the vectors as float32 instead, for
	// the harness to measure what int8 costs in quality.
	exact bool
	f32   []float32
	slots []*entry
	free  []int32
	// max bounds the vectors held; the tools past it rank lexically.
	max int
	// embedded counts the tools whose text has a vector.
	embedded int
}

// DefaultMaxVectors bounds a store's vectors: 100,000 of 1024 dimensions
// take 100 MB.
const DefaultMaxVectors = 100000

// NewStore returns an empty store holding at most maxVectors vectors
// (<= 0: DefaultMaxVectors).
func NewStore(maxVectors int) *Store {
	if maxVectors <= 0 {
		maxVectors = DefaultMaxVectors
	}
	return &Store{byKey: map[textKey]*entry{}, byID: map[string]*tool{}, byServer: map[string][]*tool{}, max: maxVectors}
}

// SetServer replaces the tools of server with tools (none removes the
// server). Tools whose text is already embedded keep their vector; the
// others wait for one (Pending).
func (s *Store) SetServer(server string, tools []Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The old tools go after the new ones are in, so that a text both
	// have keeps its vector.
	old := s.byServer[server]
	delete(s.byServer, server)
	defer func() {
		for _, t := range old {
			s.unref(t)
		}
	}()
	if len(tools) == 0 {
		return
	}
	list := make([]*tool, 0, len(tools))
	for _, t := range tools {
		if prev := s.byID[t.ID]; prev != nil && prev.server != server {
			s.unref(prev) // the same id under another server
		}
		text := t.Text()
		k := keyOf(text)
		e := s.byKey[k]
		if e == nil {
			e = &entry{key: k, text: text, slot: -1}
			s.byKey[k] = e
			s.queue = append(s.queue, e)
		}
		nt := &tool{id: t.ID, server: server, name: t.Name, ent: e}
		e.tools = append(e.tools, nt)
		if e.slot >= 0 {
			s.embedded++
		}
		s.byID[t.ID] = nt
		list = append(list, nt)
	}
	s.byServer[server] = list
}

// unref drops t; its entry goes when its last tool does. Caller holds mu.
func (s *Store) unref(t *tool) {
	if s.byID[t.id] == t {
		delete(s.byID, t.id)
	}
	if list, ok := s.byServer[t.server]; ok {
		s.byServer[t.server] = slices.DeleteFunc(list, func(o *tool) bool { return o == t })
	}
	e := t.ent
	e.tools = slices.DeleteFunc(e.tools, func(o *tool) bool { return o == t })
	if e.slot >= 0 {
		s.embedded--
	}
	if len(e.tools) > 0 {
		return
	}
	delete(s.byKey, e.key)
	if e.slot >= 0 {
		s.slots[e.slot] = nil
		s.free = append(s.free, e.slot)
		e.slot = -1
	}
}

// Pending returns up to n texts that wait for a vector, with their keys,
// oldest first, and whether the store is full (the rest will get none).
func (s *Store) Pending(n int) (keys []textKey, texts []string, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for ; i < len(s.queue) && len(texts) < n; i++ {
		e := s.queue[i]
		if e.slot >= 0 || len(e.tools) == 0 || s.byKey[e.key] != e {
			continue
		}
		keys = append(keys, e.key)
		texts = append(texts, e.text)
	}
	// What was skipped before the first pending entry is done with.
	drop := 0
	for drop < len(s.queue) {
		e := s.queue[drop]
		if e.slot < 0 && len(e.tools) > 0 && s.byKey[e.key] == e {
			break
		}
		drop++
	}
	s.queue = s.queue[drop:]
	full = len(texts) > 0 && len(s.free) == 0 && len(s.slots) >= s.max
	if full {
		return nil, nil, true
	}
	return keys, texts, false
}

// Put stores the vectors of the texts keys name (from Pending). A text
// dropped meanwhile is skipped. It returns errDimension when the vectors'
// dimension differs from the store's.
func (s *Store) Put(keys []textKey, vecs [][]float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range keys {
		e := s.byKey[k]
		if e == nil || e.slot >= 0 {
			continue
		}
		v := vecs[i]
		if s.dim == 0 {
			s.dim = len(v)
		}
		if len(v) != s.dim {
			return &Error{Reason: ReasonDimension, Err: errDimension(len(v), s.dim)}
		}
		var slot int32
		switch {
		case len(s.free) > 0:
			slot = s.free[len(s.free)-1]
			s.free = s.free[:len(s.free)-1]
		case len(s.slots) < s.max:
			slot = int32(len(s.slots))
			s.slots = append(s.slots, nil)
			if s.exact {
				s.f32 = append(s.f32, make([]float32, s.dim)...)
			} else {
				s.vec = append(s.vec, make([]int8, s.dim)...)
			}
			s.scale = append(s.scale, 0)
		default:
			return nil // full: the rest rank lexically
		}
		if s.exact {
			s.scale[slot] = normalize(s.f32[int(slot)*s.dim:int(slot+1)*s.dim], v)
		} else {
			s.scale[slot] = quantize(s.vec[int(slot)*s.dim:int(slot+1)*s.dim], v)
		}
		s.slots[slot] = e
		e.slot = slot
		e.text = ""
		s.embedded += len(e.tools)
	}
	return nil
}

// quantize writes v, normalised to unit length, into dst as int8 and
// returns the scale that maps dst back: v/|v| ~ dst x scale.
func quantize(dst []int8, v []float32) float32 {
	var norm, peak float64
	for _, x := range v {
		norm += float64(x) * float64(x)
		peak = max(peak, math.Abs(float64(x)))
	}
	if norm == 0 || peak == 0 {
		clear(dst)
		return 0
	}
	norm = math.Sqrt(norm)
	k := 127 / peak
	for i, x := range v {
		dst[i] = int8(math.Round(float64(x) * k))
	}
	return float32(peak / norm / 127)
}

// normalize writes v at unit length into dst and returns 1 (0 for a zero
// vector).
func normalize(dst, v []float32) float32 {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		clear(dst)
		return 0
	}
	k := 1 / math.Sqrt(norm)
	for i, x := range v {
		dst[i] = float32(float64(x) * k)
	}
	return 1
}

// Stats says how many tools the store knows and how many have a vector.
type Stats struct {
	Tools, Embedded, Vectors, Dim int
	// Bytes is the memory of the vectors.
	Bytes int
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Stats{Tools: len(s.byID), Embedded: s.embedded, Vectors: len(s.slots) - len(s.free), Dim: s.dim, Bytes: len(s.vec) + 4*len(s.f32) + 4*len(s.scale)}
}

// scores holds one query's cosine similarity to every embedded tool.
type scores struct {
	cos map[string]float32 // by tool id
	// ranked are the tool ids by descending cosine, at most the depth
	// asked for.
	ranked []string
	// mean and std are over every embedded tool, for judging how far a
	// tool stands out (semantic-only answers need to).
	mean, std float64
	dim       int
}

// score computes q's cosine similarity to every embedded tool and ranks
// the best depth of them. It returns false when the store has no vectors
// or q's dimension is not theirs. want are tool ids whose cosine is
// wanted too, ranked or not.
func (s *Store) score(q []float32, depth int, want map[string]bool) (scores, bool) {
	sc, ok := s.scoreAll([][]float32{q}, depth, want)
	if !ok {
		return scores{dim: sc[0].dim}, false
	}
	return sc[0], true
}

// scoreAll is score for several query vectors (a request and its
// clauses) in one scan of the vectors. Each result has the cosine of
// every tool wanted or ranked by any of them, so that the rankings can
// be fused tool by tool. The mean and deviation are the same for all
// (those of qs[0]).
func (s *Store) scoreAll(qs [][]float32, depth int, want map[string]bool) ([]scores, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]scores, len(qs))
	for i := range out {
		out[i].dim = s.dim
	}
	if s.dim == 0 || len(qs) == 0 {
		return out, false
	}
	for _, q := range qs {
		if len(q) != s.dim {
			return out, false
		}
	}
	type query struct {
		qi []int8
		qs float32
		qf []float32
	}
	prep := make([]query, len(qs))
	for i, q := range qs {
		prep[i].qi = make([]int8, s.dim)
		prep[i].qs = quantize(prep[i].qi, q)
		if s.exact {
			prep[i].qf = make([]float32, s.dim)
			normalize(prep[i].qf, q)
		}
	}
	type cand struct {
		c float32
		e *entry
	}
	tops := make([][]cand, len(qs))
	for i := range tops {
		tops[i] = make([]cand, 0, depth+1)
	}
	var sum, sumSq float64
	n := 0
	nq := len(qs)
	cos := make([]float32, len(s.slots)*nq)
	for slot, e := range s.slots {
		if e == nil {
			continue
		}
		for i := range prep {
			p := &prep[i]
			var c float32
			if s.exact {
				c = dot32(p.qf, s.f32[slot*s.dim:(slot+1)*s.dim]) * s.scale[slot]
			} else {
				c = float32(dot8(p.qi, s.vec[slot*s.dim:(slot+1)*s.dim])) * p.qs * s.scale[slot]
			}
			cos[slot*nq+i] = c
			if i == 0 {
				k := float64(len(e.tools))
				sum += float64(c) * k
				sumSq += float64(c) * float64(c) * k
				n += len(e.tools)
			}
			top := tops[i]
			if len(top) < depth || c > top[len(top)-1].c {
				j, _ := slices.BinarySearchFunc(top, c, func(a cand, c float32) int {
					if a.c > c {
						return -1
					}
					return 1
				})
				top = slices.Insert(top, j, cand{c, e})
				if len(top) > depth {
					top = top[:depth]
				}
				tops[i] = top
			}
		}
	}
	var mean, std float64
	if n > 0 {
		mean = sum / float64(n)
		std = math.Sqrt(max(0, sumSq/float64(n)-mean*mean))
	}
	// Every tool any query ranks or the caller wants, by slot.
	slots := make(map[string]int, depth*nq+len(want))
	for i := range tops {
		out[i].mean, out[i].std = mean, std
		for _, c := range tops[i] {
			for _, t := range c.e.tools {
				if len(out[i].ranked) == depth {
					break
				}
				out[i].ranked = append(out[i].ranked, t.id)
				slots[t.id] = int(c.e.slot)
			}
		}
	}
	for id := range want {
		if t := s.byID[id]; t != nil && t.ent.slot >= 0 {
			slots[id] = int(t.ent.slot)
		}
	}
	for i := range out {
		out[i].cos = make(map[string]float32, len(slots))
		for id, slot := range slots {
			out[i].cos[id] = cos[slot*nq+i]
		}
	}
	return out, true
}

func dot8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// Dim returns the dimension of the vectors, 0 before the first.
func (s *Store) Dim() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dim
}

// dot32 is the dot product of two float32 vectors of equal length.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// toolInfo returns the server and name of the tool id, for a hit the
// lexical ranking did not have.
func (s *Store) toolInfo(id string) (server, name string, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.byID[id]
	if t == nil {
		return "", "", false
	}
	return t.server, t.name, true
}
