package demo

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestNotesTools(t *testing.T) {
	c := connect(t, "notes")
	ts := "2024-03-15T13:30:00Z"
	runCases(t, c, []toolCase{
		{name: "empty list", tool: "list_notes", args: `{}`, want: map[string]any{"total": 0, "notes": []any{}}},
		{name: "create first", tool: "create_note",
			args: `{"title":"Groceries","body":"milk\neggs","tags":["Shopping","#home"]}`,
			want: map[string]any{"id": "n1", "title": "Groceries", "body": "milk\neggs", "tags": []string{"home", "shopping"}, "created": ts, "updated": ts}},
		{name: "create second", tool: "create_note",
			args: `{"title":"Meeting notes","body":"Discuss the Q2 roadmap with Ana.","tags":["work"]}`,
			want: map[string]any{"id": "n2", "tags": []string{"work"}}},
		{name: "create without body", tool: "create_note", args: `{"title":"Ideas"}`,
			want: map[string]any{"id": "n3", "body": "", "tags": []string{}}},
		{name: "read back", tool: "get_note", args: `{"id":"n1"}`,
			want: map[string]any{"title": "Groceries", "body": "milk\neggs"}},
		{name: "update body", tool: "update_note", args: `{"id":"n3","body":"solar kettle"}`,
			want: map[string]any{"title": "Ideas", "body": "solar kettle"}},
		{name: "update title", tool: "update_note", args: `{"id":"n3","title":"Inventions"}`,
			want: map[string]any{"title": "Inventions", "body": "solar kettle"}},
		{name: "append", tool: "append_to_note", args: `{"id":"n1","text":"bread"}`,
			want: map[string]any{"body": "milk\neggs\nbread"}},
		{name: "append with separator", tool: "append_to_note", args: `{"id":"n3","text":"wind sock","separator":", "}`,
			want: map[string]any{"body": "solar kettle, wind sock"}},
		{name: "tag", tool: "tag_note", args: `{"id":"n2","tags":["urgent","work"]}`,
			want: map[string]any{"tags": []string{"urgent", "work"}}},
		{name: "untag", tool: "untag_note", args: `{"id":"n2","tags":["URGENT"]}`,
			want: map[string]any{"tags": []string{"work"}}},
		{name: "list by tag", tool: "list_notes", args: `{"tag":"work"}`,
			want: map[string]any{"total": 1, "returned": 1},
			check: func(t *testing.T, got map[string]any) {
				if id := got["notes"].([]any)[0].(map[string]any)["id"]; id != "n2" {
					t.Errorf("listed %v, want n2", id)
				}
			}},
		{name: "list sorted by title with limit", tool: "list_notes", args: `{"sort":"title","limit":2}`,
			want: map[string]any{"total": 3, "returned": 2},
			check: func(t *testing.T, got map[string]any) {
				notes := got["notes"].([]any)
				if a, b := notes[0].(map[string]any)["title"], notes[1].(map[string]any)["title"]; a != "Groceries" || b != "Inventions" {
					t.Errorf("title order %v, %v; want Groceries, Inventions", a, b)
				}
			}},
		{name: "search substring", tool: "search_notes", args: `{"query":"ROAD"}`,
			want: map[string]any{"total": 1},
			check: func(t *testing.T, got map[string]any) {
				m := got["matches"].([]any)[0].(map[string]any)
				if m["id"] != "n2" || !strings.Contains(m["snippet"].(string), "roadmap") {
					t.Errorf("match %v, want n2 with a snippet around roadmap", m)
				}
			}},
		{name: "search word mode needs whole words", tool: "search_notes", args: `{"query":"road","mode":"word"}`,
			want: map[string]any{"total": 0, "matches": []any{}}},
		{name: "search word mode all words", tool: "search_notes", args: `{"query":"roadmap ana","mode":"word"}`,
			want: map[string]any{"total": 1}},
		{name: "search title match first", tool: "search_notes", args: `{"query":"e"}`,
			check: func(t *testing.T, got map[string]any) {
				if got["total"] != float64(3) {
					t.Errorf("total %v, want 3", got["total"])
				}
			}},
		{name: "list tags", tool: "list_tags", args: `{}`,
			want: map[string]any{"tags": []map[string]any{{"tag": "home", "count": 1}, {"tag": "shopping", "count": 1}, {"tag": "work", "count": 1}}}},
		{name: "rename tag", tool: "rename_tag", args: `{"from":"home","to":"household"}`,
			want: map[string]any{"from": "home", "to": "household", "notes": 1}},
		{name: "export", tool: "export_notes", args: `{}`, want: map[string]any{"count": 3},
			text: "## Groceries",
			check: func(t *testing.T, got map[string]any) {
				md := got["markdown"].(string)
				for _, want := range []string{"# Notes", "## Meeting notes", "#household #shopping", "milk\neggs\nbread"} {
					if !strings.Contains(md, want) {
						t.Errorf("markdown lacks %q:\n%s", want, md)
					}
				}
			}},
		{name: "export by tag", tool: "export_notes", args: `{"tag":"work"}`, want: map[string]any{"count": 1}},
		{name: "delete", tool: "delete_note", args: `{"id":"n3"}`, want: map[string]any{"id": "n3", "title": "Inventions", "deleted": true}},

		// Broken input.
		{name: "read deleted", tool: "get_note", args: `{"id":"n3"}`, errHas: []string{`note "n3" not found`}},
		{name: "delete twice", tool: "delete_note", args: `{"id":"n3"}`, errHas: []string{`"n3" not found`}},
		{name: "empty title", tool: "create_note", args: `{"title":"   "}`, errHas: []string{"title must not be empty"}},
		{name: "multi-line title", tool: "create_note", args: `{"title":"a\nb"}`, errHas: []string{"single line"}},
		{name: "long title", tool: "create_note", args: fmt.Sprintf(`{"title":%q}`, strings.Repeat("x", 201)), errHas: []string{"title is too long"}},
		{name: "bad tag", tool: "create_note", args: `{"title":"t","tags":["no spaces please"]}`, errHas: []string{`invalid tag "no spaces please"`}},
		{name: "tag not a string", tool: "create_note", args: `{"title":"t","tags":[1]}`, errHas: []string{`"tags"`, "item 0 must be a string"}},
		{name: "update nothing", tool: "update_note", args: `{"id":"n1"}`, errHas: []string{"at least one of"}},
		{name: "update missing note", tool: "update_note", args: `{"id":"n99","title":"x"}`, errHas: []string{`"n99" not found`}},
		{name: "untag absent tag", tool: "untag_note", args: `{"id":"n1","tags":["nope"]}`, errHas: []string{"none of the tags nope"}},
		{name: "empty tags", tool: "tag_note", args: `{"id":"n1","tags":[]}`, errHas: []string{"at least one tag"}},
		{name: "search empty query", tool: "search_notes", args: `{"query":"  "}`, errHas: []string{`"query" must not be empty`}},
		{name: "search bad mode", tool: "search_notes", args: `{"query":"x","mode":"fuzzy"}`, errHas: []string{`"mode" must be one of substring, word`}},
		{name: "list limit too big", tool: "list_notes", args: `{"limit":1000}`, errHas: []string{`"limit" must be between 1 and 100`}},
		{name: "list limit fractional", tool: "list_notes", args: `{"limit":2.5}`, errHas: []string{`"limit" must be an integer`}},
		{name: "rename to same", tool: "rename_tag", args: `{"from":"work","to":"WORK"}`, errHas: []string{"same tag"}},
		{name: "rename unused", tool: "rename_tag", args: `{"from":"ghost","to":"spirit"}`, errHas: []string{`no note has the tag "ghost"`}},
		{name: "append empty", tool: "append_to_note", args: `{"id":"n1","text":""}`, errHas: []string{`"text" must not be empty`}},
		{name: "body too long", tool: "append_to_note", args: fmt.Sprintf(`{"id":"n1","text":%q}`, strings.Repeat("y", maxNoteBytes)), errHas: []string{"note body is too long"}},
	})
}

// TestNotesConcurrent hammers one store from many goroutines; run with
// -race to check the locking.
func TestNotesConcurrent(t *testing.T) {
	c := connect(t, "notes")
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				res := call(t, c, "create_note", fmt.Sprintf(`{"title":"w%d-%d","tags":["w%d"]}`, w, i, w))
				if res.IsError {
					errs <- textOf(res)
					continue
				}
				id := structuredOf(t, res)["id"].(string)
				if res := call(t, c, "append_to_note", fmt.Sprintf(`{"id":%q,"text":"more"}`, id)); res.IsError {
					errs <- textOf(res)
				}
				call(t, c, "search_notes", `{"query":"w"}`)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	got := structuredOf(t, call(t, c, "list_notes", `{"limit":100}`))
	if got["total"] != float64(workers*each) {
		t.Errorf("total %v notes, want %d", got["total"], workers*each)
	}
	ids := map[any]bool{}
	for _, n := range got["notes"].([]any) {
		ids[n.(map[string]any)["id"]] = true
	}
	if len(ids) != workers*each {
		t.Errorf("%d distinct ids, want %d", len(ids), workers*each)
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("a", 100) + "needle" + strings.Repeat("ü", 100)
	s := snippet(long, 100)
	if !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") || !strings.Contains(s, "needle") {
		t.Errorf("snippet = %q", s)
	}
	if !isValidUTF8(s) {
		t.Errorf("snippet cut a rune: %q", s)
	}
	if got := snippet("short text", 0); got != "short text" {
		t.Errorf("snippet of a short text = %q", got)
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
