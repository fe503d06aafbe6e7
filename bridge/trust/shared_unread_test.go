package trust

import (
	"errors"
	"testing"
	"time"
)

// failingShared is a shared store that answers reads (no pins yet) and
// fails every write, as a Redis does for a moment after it came back.
type failingShared struct{ adds int }

var errWriteFailed = errors.New("connection reset by peer")

func (f *failingShared) Load(string, string) (*ServerPins, string, error) { return nil, "", nil }
func (f *failingShared) Add(string, map[string]Pin) error {
	f.adds++
	return errWriteFailed
}
func (f *failingShared) Put(string, map[string]Pin) error          { return errWriteFailed }
func (f *failingShared) Forget(string, []string) ([]string, error) { return nil, errWriteFailed }
func (f *failingShared) Servers() ([]string, error)                { return nil, nil }
func (f *failingShared) String() string                            { return "failing" }
func (f *failingShared) Unreachable(err error) bool                { return errors.Is(err, errWriteFailed) }

// TestSharedAddFailureIsRetried: first-use pins a review could not write
// to the shared store leave the server Unread, so that the gateway
// reviews again once the store answers; before, a write that failed just
// after Redis came back empty left the tools held until the next change.
func TestSharedAddFailureIsRetried(t *testing.T) {
	sh := &failingShared{}
	s := NewSharedStore(sh)
	if s.Unread("repo") {
		t.Fatal("Unread before any review")
	}
	pins := map[string]Pin{"create_issue": NewPin(Definition{Name: "create_issue"}, time.Now(), false)}
	if err := s.Add("repo", pins); !errors.Is(err, errWriteFailed) {
		t.Fatalf("Add = %v, want the write's error", err)
	}
	if sh.adds != 1 {
		t.Fatalf("%d writes, want 1", sh.adds)
	}
	if !s.Unread("repo") {
		t.Error("a failed write of first-use pins does not make the server Unread: no review would try again")
	}
	if s.Unread("other") {
		t.Error("another server is Unread")
	}
}
