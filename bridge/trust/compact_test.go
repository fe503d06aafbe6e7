package trust

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/statefile"
)

// The field prints name the same fields as ChangedFields does with the
// pinned definition in hand, for every kind of change.
func TestChangedSinceMatchesChangedFields(t *testing.T) {
	changes := map[string]func(*Definition){
		"nothing":     func(*Definition) {},
		"name":        func(d *Definition) { d.Name = "create_issue2" },
		"title":       func(d *Definition) { d.Title = "" },
		"description": func(d *Definition) { d.Description += " <IMPORTANT>x</IMPORTANT>" },
		"schema key order": func(d *Definition) {
			d.InputSchema = json.RawMessage(` {"required":["title"],"type":"object","properties":{"n":{"maximum":10,"type":"integer"},"title":{"type":"string"}}}`)
		},
		"schema value": func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"number spelling": func(d *Definition) {
			d.InputSchema = json.RawMessage(strings.Replace(string(d.InputSchema), "10", "10.0", 1))
		},
		"schema not json":     func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":`) },
		"output null":         func(d *Definition) { d.OutputSchema = json.RawMessage("null") },
		"output gone":         func(d *Definition) { d.OutputSchema = nil },
		"annotation flipped":  func(d *Definition) { d.Annotations.DestructiveHint = ptr(true) },
		"annotations cleared": func(d *Definition) { d.Annotations = Annotations{} },
		"all but the name": func(d *Definition) {
			*d = Definition{Name: d.Name, Description: "other", InputSchema: json.RawMessage(`[]`)}
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			old, now := sample(), sample()
			change(&now)
			for _, pair := range [][2]Definition{{old, now}, {now, old}} {
				want := ChangedFields(pair[0], pair[1])
				if got := changedSince(pair[0].prints(), pair[1]); !slices.Equal(got, want) {
					t.Errorf("changedSince = %v, ChangedFields = %v", got, want)
				}
			}
		})
	}
}

func FuzzChangedSince(f *testing.F) {
	f.Add("a b", "a c", `{"a":1}`, `{"a":1.0}`, "t", "")
	f.Add("", "", `{"b":1,"a":2}`, `{"a":2,"b":1}`, "", "t")
	f.Add("x", "x", "not json", " null ", "", "")
	f.Fuzz(func(t *testing.T, d1, d2, s1, s2, t1, t2 string) {
		a := Definition{Name: "t", Title: t1, Description: d1, InputSchema: json.RawMessage(s1)}
		b := Definition{Name: "t", Title: t2, Description: d2, InputSchema: json.RawMessage(s2)}
		if got, want := changedSince(a.prints(), b), ChangedFields(a, b); !slices.Equal(got, want) {
			t.Fatalf("changedSince = %v, ChangedFields = %v", got, want)
		}
		// digest is Hash and prints in one pass.
		if h, p := a.digest(); h != a.Hash() || p != a.prints() {
			t.Fatal("digest disagrees with Hash and prints")
		}
	})
}

// A memory store keeps each pin's hash, time, approval and field prints,
// never the definition, and still names what changed.
func TestMemoryStoreKeepsPrintsNotDefinitions(t *testing.T) {
	s := NewMemoryStore()
	p := config.Trust{Mode: config.TrustPin, NewServers: config.NewServersTrust}
	d := sample()
	r, err := s.Review(p, "gh", []Definition{d}, t0, approveCmd)
	if err != nil || !r.Verdicts[0].FirstUse {
		t.Fatalf("first review = %+v, %v", r.Verdicts, err)
	}
	sp := s.mem["gh"][d.Name]
	if sp.hash != d.Hash() || sp.at != t0.Unix() || sp.approved || sp.prints == nil || *sp.prints != d.prints() {
		t.Fatalf("stored pin = %+v, want the hash, time and prints of the definition", sp)
	}
	if r.prints[d.Name] == nil {
		t.Error("the first review computed no prints for its new pin: the store canonicalized it a second time")
	}

	changed := d
	changed.Description = "Creates an issue. <IMPORTANT>x</IMPORTANT>"
	changed.OutputSchema = nil
	r, err = s.Review(p, "gh", []Definition{changed}, t0.Add(24*time.Hour), approveCmd)
	if err != nil {
		t.Fatal(err)
	}
	v := r.Verdicts[0]
	want := Evaluate(p, "gh", &ServerPins{Tools: map[string]Pin{d.Name: NewPin(d, t0, false)}}, []Definition{changed}, t0.Add(24*time.Hour), approveCmd).Verdicts[0]
	if !v.Held || v.Reason != want.Reason || !slices.Equal(v.Changed, []string{FieldDescription, FieldOutputSchema}) {
		t.Fatalf("changed: held %v, changed %v, reason %q; want held, [description outputSchema], %q", v.Held, v.Changed, v.Reason, want.Reason)
	}

	if err := s.Approve("gh", []Definition{changed}, t0.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	pins, err := s.Load("gh")
	if err != nil {
		t.Fatal(err)
	}
	got := pins.Tools[d.Name]
	if got.Hash != changed.Hash() || !got.Approved || !got.PinnedAt.Equal(t0.Add(48*time.Hour)) || got.Definition.Name != d.Name || got.Definition.Description != "" {
		t.Fatalf("Load = %+v; want the approved hash and time, and a definition holding only the name", got)
	}
}

// A stored pin that keeps nothing to name a change with (a memory store's
// pin without prints: a bug, not a state a store makes) is a clear error,
// not a panic or a silent pass.
func TestMemoryStoreBrokenPinIsAnError(t *testing.T) {
	s := NewMemoryStore()
	d := sample()
	s.mem["gh"] = map[string]storedPin{d.Name: {hash: "sha256:0000", at: t0.Unix()}}
	r, err := s.Review(config.Trust{Mode: config.TrustPin}, "gh", []Definition{d}, t0, nil)
	if !errors.Is(err, errNoDefinition) || !strings.Contains(err.Error(), `server "gh"`) || !strings.Contains(err.Error(), `tool "create_issue"`) {
		t.Fatalf("err = %v, want one naming the server, the tool and that the definition is not in memory", err)
	}
	if len(r.Verdicts) != 0 {
		t.Fatalf("verdicts %+v from a failed review: a caller would trust them", r.Verdicts)
	}
	// The unchanged case does not need what the pin lacks.
	s.mem["gh"] = map[string]storedPin{d.Name: {hash: d.Hash(), at: t0.Unix()}}
	if r, err := s.Review(config.Trust{Mode: config.TrustPin}, "gh", []Definition{d}, t0, nil); err != nil || r.Verdicts[0].State != StatePinned {
		t.Fatalf("unchanged tool: %+v, %v", r.Verdicts, err)
	}
}

// A file store keeps only hashes in memory; a changed tool's fields are
// named from the file, read again, exactly as from a full read.
func TestFileStoreNamesChangesFromTheFile(t *testing.T) {
	s, root := newStore(t)
	p := config.Trust{Mode: config.TrustPin, NewServers: config.NewServersTrust}
	a, b := sample(), sample()
	b.Name = "b"
	if _, err := s.Review(p, "gh", []Definition{a, b}, t0, approveCmd); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Review(p, "gh", []Definition{a, b}, t0, approveCmd); err != nil {
		t.Fatal(err)
	}
	cached, ok := s.read["gh"]
	if !ok || len(cached.tools) != 2 {
		t.Fatalf("read cache = %+v, want the file's 2 pins", cached)
	}
	for name, sp := range cached.tools {
		if sp.prints != nil || sp.hash == "" {
			t.Errorf("cached pin %s = %+v, want its hash and no prints", name, sp)
		}
	}

	changed := b
	changed.InputSchema = json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`)
	r, err := s.Review(p, "gh", []Definition{a, changed}, t0.Add(time.Hour), approveCmd)
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.Load("gh")
	if err != nil {
		t.Fatal(err)
	}
	want := Evaluate(p, "gh", full, []Definition{a, changed}, t0.Add(time.Hour), approveCmd)
	for i, v := range r.Verdicts {
		w := want.Verdicts[i]
		if v.State != w.State || v.Held != w.Held || v.Reason != w.Reason || !slices.Equal(v.Changed, w.Changed) {
			t.Errorf("%s: state %s, held %v, changed %v, reason %q; Evaluate on the file gives %s, %v, %v, %q",
				v.Name, v.State, v.Held, v.Changed, v.Reason, w.State, w.Held, w.Changed, w.Reason)
		}
	}
	if v := r.Verdicts[1]; !v.Held || v.Pin == nil || v.Pin.Definition.Name != "b" {
		t.Fatalf("changed tool: %+v; want held, with the pinned definition read from the file", v)
	}

	// The file turns corrupt while the cache still holds its pins: the
	// review of a changed tool reads it, and fails naming it.
	path := filepath.Join(root, "pins", "gh.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := []byte(`{"version":1,"tools":` + strings.Repeat(" ", len(raw)-len(`{"version":1,"tools":`)))
	if err := os.WriteFile(path, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	// Same inode, size and time: the cache cannot tell the file changed.
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	r, err = s.Review(p, "gh", []Definition{a, changed}, t0.Add(time.Hour), approveCmd)
	var ce *statefile.CorruptError
	if !errors.As(err, &ce) || ce.Path != path || len(r.Verdicts) != 0 {
		t.Fatalf("review with a corrupt file behind the cache: %d verdicts, err %v; want none and a CorruptError naming %s", len(r.Verdicts), err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != string(corrupt) {
		t.Fatal("the corrupt file was changed")
	}
}

// A file approved by another process between the cached read and the
// read a change needs is reviewed as a whole from the new file.
func TestFileStoreChangeApprovedMeanwhile(t *testing.T) {
	s, _ := newStore(t)
	other := NewStore(s.dir)
	p := config.Trust{Mode: config.TrustPin, NewServers: config.NewServersTrust}
	d := sample()
	if _, err := s.Review(p, "gh", []Definition{d}, t0, approveCmd); err != nil {
		t.Fatal(err)
	}
	changed := d
	changed.Title = "New title"
	if r, err := s.Review(p, "gh", []Definition{changed}, t0, approveCmd); err != nil || !r.Verdicts[0].Held {
		t.Fatalf("changed: %+v, %v; want held", r.Verdicts, err)
	}
	if err := other.Approve("gh", []Definition{changed}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Review(p, "gh", []Definition{changed}, t0.Add(2*time.Hour), approveCmd)
	if v := r.Verdicts[0]; err != nil || v.Held || v.State != StatePinned || !v.Pin.Approved {
		t.Fatalf("after approval elsewhere: %+v, %v; want pinned, approved", v, err)
	}
}
