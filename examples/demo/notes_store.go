package demo

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Limits of the note store: the demo must stay small whatever a client
// sends it.
const (
	maxNotes        = 10000
	maxTitleChars   = 200
	maxNoteBytes    = 64 << 10
	maxTagsPerNote  = 32
	defaultNoteList = 20
	maxNoteList     = 100
)

// tagPattern is what a tag may look like after lower-casing.
var tagPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// note is one stored note.
type note struct {
	id      string
	seq     int
	title   string
	body    string
	tags    []string // sorted, unique
	created time.Time
	updated time.Time
}

// noteStore is a thread-safe in-memory note store. Each notes server owns
// one.
type noteStore struct {
	mu    sync.Mutex
	now   clock
	next  int
	notes map[string]*note
}

func newNoteStore(now clock) *noteStore {
	return &noteStore{now: now, next: 1, notes: map[string]*note{}}
}

// noteView is a note as tools return it.
type noteView struct {
	ID      string   `json:"id" jsonschema:"the note's id, e.g. n1"`
	Title   string   `json:"title" jsonschema:"the note's title"`
	Body    string   `json:"body" jsonschema:"the note's text"`
	Tags    []string `json:"tags" jsonschema:"the note's tags, sorted"`
	Created string   `json:"created" jsonschema:"creation time, RFC 3339"`
	Updated string   `json:"updated" jsonschema:"last change time, RFC 3339"`
}

func (n *note) view() noteView {
	return noteView{
		ID:      n.id,
		Title:   n.title,
		Body:    n.body,
		Tags:    append([]string{}, n.tags...),
		Created: n.created.UTC().Format(time.RFC3339),
		Updated: n.updated.UTC().Format(time.RFC3339),
	}
}

// checkTitle validates a note title.
func checkTitle(title string) error {
	if strings.TrimSpace(title) == "" {
		return fmt.Errorf("title must not be empty")
	}
	// Characters, not bytes: JSON Schema's maxLength counts characters.
	if n := utf8.RuneCountInString(title); n > maxTitleChars {
		return fmt.Errorf("title is too long: %d characters, the limit is %d", n, maxTitleChars)
	}
	if strings.ContainsAny(title, "\r\n") {
		return fmt.Errorf("title must be a single line")
	}
	return nil
}

func checkBody(body string) error {
	if len(body) > maxNoteBytes {
		return fmt.Errorf("note body is too long: %d bytes, the limit is %d", len(body), maxNoteBytes)
	}
	return nil
}

// normalizeTags lower-cases, validates and de-duplicates tags.
func normalizeTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "#")))
		if !tagPattern.MatchString(t) {
			return nil, fmt.Errorf("invalid tag %q: use 1-32 letters, digits, '-' or '_', starting with a letter or digit", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// get returns the note with id, or an error naming the id.
func (s *noteStore) get(id string) (*note, error) {
	n, ok := s.notes[id]
	if !ok {
		return nil, fmt.Errorf("note %q not found", id)
	}
	return n, nil
}

func (s *noteStore) create(title, body string, tags []string) (noteView, error) {
	if err := checkTitle(title); err != nil {
		return noteView{}, err
	}
	if err := checkBody(body); err != nil {
		return noteView{}, err
	}
	tags, err := normalizeTags(tags)
	if err != nil {
		return noteView{}, err
	}
	if len(tags) > maxTagsPerNote {
		return noteView{}, fmt.Errorf("too many tags: %d, the limit is %d", len(tags), maxTagsPerNote)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.notes) >= maxNotes {
		return noteView{}, fmt.Errorf("the note store is full (%d notes); delete some first", maxNotes)
	}
	now := s.now()
	n := &note{id: "n" + strconv.Itoa(s.next), seq: s.next, title: title, body: body, tags: tags, created: now, updated: now}
	s.next++
	s.notes[n.id] = n
	return n.view(), nil
}

func (s *noteStore) read(id string) (noteView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.get(id)
	if err != nil {
		return noteView{}, err
	}
	return n.view(), nil
}

// modify runs change on the note with id under the lock and bumps its
// update time when change succeeds.
func (s *noteStore) modify(id string, change func(n *note) error) (noteView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.get(id)
	if err != nil {
		return noteView{}, err
	}
	if err := change(n); err != nil {
		return noteView{}, err
	}
	n.updated = s.now()
	return n.view(), nil
}

func (s *noteStore) remove(id string) (noteView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.get(id)
	if err != nil {
		return noteView{}, err
	}
	delete(s.notes, id)
	return n.view(), nil
}

// all returns every note with the tag (or every note when tag is empty),
// ordered by sortBy: created, updated or title.
func (s *noteStore) all(tag, sortBy string) []noteView {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := make([]*note, 0, len(s.notes))
	for _, n := range s.notes {
		if tag == "" || slices.Contains(n.tags, tag) {
			ns = append(ns, n)
		}
	}
	slices.SortFunc(ns, func(a, b *note) int {
		switch sortBy {
		case "updated":
			if c := b.updated.Compare(a.updated); c != 0 {
				return c // newest first
			}
		case "title":
			if c := strings.Compare(strings.ToLower(a.title), strings.ToLower(b.title)); c != 0 {
				return c
			}
		}
		return a.seq - b.seq
	})
	out := make([]noteView, len(ns))
	for i, n := range ns {
		out[i] = n.view()
	}
	return out
}

// tagCounts returns how many notes carry each tag.
func (s *noteStore) tagCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[string]int{}
	for _, n := range s.notes {
		for _, t := range n.tags {
			counts[t]++
		}
	}
	return counts
}

// renameTag replaces tag from with to on every note and returns how many
// notes changed.
func (s *noteStore) renameTag(from, to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := 0
	for _, n := range s.notes {
		i := slices.Index(n.tags, from)
		if i < 0 {
			continue
		}
		n.tags = slices.Delete(n.tags, i, i+1)
		if !slices.Contains(n.tags, to) {
			n.tags = append(n.tags, to)
			slices.Sort(n.tags)
		}
		n.updated = s.now()
		changed++
	}
	return changed
}
