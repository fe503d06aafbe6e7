package trust

import (
	"encoding/json"
	"testing"
)

func TestMemoFollowsChanges(t *testing.T) {
	var m memo
	d := sample()
	h, _ := m.assess("gh", d)
	if h != d.Hash() {
		t.Fatalf("memo hash %s, want %s", h, d.Hash())
	}
	changes := []func(*Definition){
		func(d *Definition) { d.Description = "<IMPORTANT>x</IMPORTANT>" },
		func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":"object"}`) },
		func(d *Definition) { d.OutputSchema = nil },
		func(d *Definition) { d.Annotations.DestructiveHint = ptr(true) },
		func(d *Definition) { d.Title = "t" },
	}
	for i, change := range changes {
		c := sample()
		change(&c)
		got, flags := m.assess("gh", c)
		if got != c.Hash() || len(flags) != len(Check(c)) {
			t.Errorf("change %d: memo gives %s %v, want %s %v", i, got, flags, c.Hash(), Check(c))
		}
	}
	if got, _ := m.assess("other", d); got != d.Hash() {
		t.Error("another server's tool of the same name got a wrong hash")
	}
	var none *memo
	if got, _ := none.assess("gh", d); got != d.Hash() {
		t.Error("a nil memo does not compute")
	}
}
