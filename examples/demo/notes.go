package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
)

// noteSummary is a note without its body, for listings.
type noteSummary struct {
	ID      string   `json:"id" jsonschema:"the note's id"`
	Title   string   `json:"title" jsonschema:"the note's title"`
	Tags    []string `json:"tags" jsonschema:"the note's tags"`
	Updated string   `json:"updated" jsonschema:"last change time, RFC 3339"`
}

type noteList struct {
	Notes    []noteSummary `json:"notes" jsonschema:"the notes, in the requested order"`
	Total    int           `json:"total" jsonschema:"how many notes matched before the limit"`
	Returned int           `json:"returned" jsonschema:"how many notes are in this result"`
}

type deletedNote struct {
	ID      string `json:"id" jsonschema:"the deleted note's id"`
	Title   string `json:"title" jsonschema:"the deleted note's title"`
	Deleted bool   `json:"deleted" jsonschema:"always true"`
}

type searchMatch struct {
	ID      string `json:"id" jsonschema:"the matching note's id"`
	Title   string `json:"title" jsonschema:"the matching note's title"`
	Snippet string `json:"snippet" jsonschema:"text around the first match"`
}

type noteSearch struct {
	Query   string        `json:"query" jsonschema:"the query as given"`
	Mode    string        `json:"mode" jsonschema:"substring or word"`
	Matches []searchMatch `json:"matches" jsonschema:"matching notes, title matches first"`
	Total   int           `json:"total" jsonschema:"how many notes matched before the limit"`
}

type tagCount struct {
	Tag   string `json:"tag" jsonschema:"the tag"`
	Count int    `json:"count" jsonschema:"how many notes carry it"`
}

type tagList struct {
	Tags []tagCount `json:"tags" jsonschema:"every tag in use, most used first"`
}

type noteExport struct {
	Markdown string `json:"markdown" jsonschema:"the notes as one Markdown document"`
	Count    int    `json:"count" jsonschema:"how many notes were exported"`
}

type tagRename struct {
	From  string `json:"from" jsonschema:"the old tag"`
	To    string `json:"to" jsonschema:"the new tag"`
	Notes int    `json:"notes" jsonschema:"how many notes changed"`
}

// Parameter descriptions shared by several notes tools.
const (
	descNoteID  = "The note's id as returned by create_note or list_notes, e.g. \"n1\"."
	descTags    = "Tags: 1-32 characters each, letters, digits, '-' or '_'; case-insensitive, a leading '#' is dropped."
	descNoteTag = "Only include notes carrying this tag."
)

// notesTools returns the notes server's tools, all sharing one fresh store.
func notesTools(now clock) []toolDef {
	st := newNoteStore(now)
	noteOut := mcp.WithOutputSchema[noteView]()
	return []toolDef{
		{newTool("create_note",
			"Create a new note with a title, optional body text and optional tags. Returns the stored note with its generated id (e.g. \"n1\").",
			mcp.WithString("title", mcp.Required(), mcp.Description("One-line title of the note, up to 200 characters."), mcp.MaxLength(maxTitleChars)),
			mcp.WithString("body", mcp.Description("The note's text (Markdown welcome), up to 64 KiB. Default empty.")),
			mcp.WithArray("tags", mcp.Description(descTags), mcp.WithStringItems(), mcp.MaxItems(maxTagsPerNote)),
			noteOut, mutating(false, false),
		), st.createNote},
		{newTool("get_note",
			"Read one note by id: title, full body, tags and timestamps.",
			mcp.WithString("id", mcp.Required(), mcp.Description(descNoteID)),
			noteOut, readOnly(),
		), st.getNote},
		{newTool("update_note",
			"Replace a note's title and/or body. Give at least one of title and body; omitted fields keep their value. To add text at the end, use append_to_note.",
			mcp.WithString("id", mcp.Required(), mcp.Description(descNoteID)),
			mcp.WithString("title", mcp.Description("New one-line title, up to 200 characters."), mcp.MaxLength(maxTitleChars)),
			mcp.WithString("body", mcp.Description("New body text, replacing the old one, up to 64 KiB.")),
			noteOut, mutating(true, true),
		), st.updateNote},
		{newTool("delete_note",
			"Delete a note permanently by id. Returns the deleted note's id and title.",
			mcp.WithString("id", mcp.Required(), mcp.Description(descNoteID)),
			mcp.WithOutputSchema[deletedNote](), mutating(true, false),
		), st.deleteNote},
		{newTool("list_notes",
			"List notes (id, title, tags, update time, no body), optionally only those with a tag, sorted by creation, last update or title.",
			mcp.WithString("tag", mcp.Description(descNoteTag)),
			mcp.WithString("sort", mcp.Description("Order: created (oldest first, the default), updated (newest first) or title (A-Z)."), mcp.Enum("created", "updated", "title"), mcp.DefaultString("created")),
			mcp.WithInteger("limit", mcp.Description("Maximum number of notes to return, 1-100 (default 20)."), mcp.Min(1), mcp.Max(maxNoteList), mcp.DefaultNumber(defaultNoteList)),
			mcp.WithOutputSchema[noteList](), readOnly(),
		), st.listNotes},
		{newTool("search_notes",
			"Full-text search over note titles and bodies, case-insensitive. Mode substring finds the query anywhere; mode word requires every query word to appear as a whole word. Returns matching notes with a snippet.",
			mcp.WithString("query", mcp.Required(), mcp.Description("Text to look for, e.g. \"grocery\" or \"meeting notes\"."), mcp.MinLength(1)),
			mcp.WithString("mode", mcp.Description("substring (default) or word."), mcp.Enum("substring", "word"), mcp.DefaultString("substring")),
			mcp.WithString("tag", mcp.Description(descNoteTag)),
			mcp.WithInteger("limit", mcp.Description("Maximum number of matches, 1-100 (default 20)."), mcp.Min(1), mcp.Max(maxNoteList), mcp.DefaultNumber(defaultNoteList)),
			mcp.WithOutputSchema[noteSearch](), readOnly(),
		), st.searchNotes},
		{newTool("tag_note",
			"Add one or more tags to a note. Tags it already has are kept once.",
			mcp.WithString("id", mcp.Required(), mcp.Description(descNoteID)),
			mcp.WithArray("tags", mcp.Required(), mcp.Description(descTags), mcp.WithStringItems(), mcp.MinItems(1), mcp.MaxItems(maxTagsPerNote)),
			noteOut, mutating(false, true),
		), st.tagNote},
		{newTool("untag_note",
			"Remove one or more tags from a note. It is an error if the note has none of them.",
			mcp.WithString("id", mcp.Required(), mcp.Description(descNoteID)),
			mcp.WithArray("tags", mcp.Required(), mcp.Description("Tags to remove."), mcp.WithStringItems(), mcp.MinItems(1), mcp.MaxItems(maxTagsPerNote)),
			noteOut, mutating(true, true),
		), st.untagNote},
		{newTool("list_tags",
			"List every tag in use with the number of notes carrying it, most used first.",
			mcp.WithOutputSchema[tagList](), readOnly(),
		), st.listTags},
		{newTool("append_to_note",
			"Append text to the end of a note's body, separated by a newline (or the given separator). Handy for logs and running lists.",
			mcp.WithString("id", mcp.Required(), mcp.Description(descNoteID)),
			mcp.WithString("text", mcp.Required(), mcp.Description("Text to append."), mcp.MinLength(1)),
			mcp.WithString("separator", mcp.Description("Put between the old body and the new text when the body is not empty (default a newline)."), mcp.DefaultString("\n")),
			noteOut, mutating(false, false),
		), st.appendToNote},
		{newTool("export_notes",
			"Export notes as one Markdown document: a heading per note, its tags and its body. Optionally only the notes with a tag.",
			mcp.WithString("tag", mcp.Description(descNoteTag)),
			mcp.WithOutputSchema[noteExport](), readOnly(),
		), st.exportNotes},
		{newTool("rename_tag",
			"Rename a tag on every note that carries it (merging into the new tag if a note already has it).",
			mcp.WithString("from", mcp.Required(), mcp.Description("The tag to rename.")),
			mcp.WithString("to", mcp.Required(), mcp.Description("The new tag name. "+descTags)),
			mcp.WithOutputSchema[tagRename](), mutating(false, true),
		), st.renameTagTool},
	}
}

func (s *noteStore) createNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	title, err := a.str("title")
	if err != nil {
		return nil, err
	}
	body, err := a.optStr("body", "")
	if err != nil {
		return nil, err
	}
	tags, err := a.strList("tags", false, maxTagsPerNote)
	if err != nil {
		return nil, err
	}
	n, err := s.create(title, body, tags)
	if err != nil {
		return nil, fmt.Errorf("creating note: %w", err)
	}
	return structured(n, "")
}

func (s *noteStore) getNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	id, err := a.str("id")
	if err != nil {
		return nil, err
	}
	n, err := s.read(id)
	if err != nil {
		return nil, err
	}
	return structured(n, "")
}

func (s *noteStore) updateNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	id, err := a.str("id")
	if err != nil {
		return nil, err
	}
	if !a.has("title") && !a.has("body") {
		return nil, fmt.Errorf("give at least one of \"title\" and \"body\" to update")
	}
	title, err := a.optStr("title", "")
	if err != nil {
		return nil, err
	}
	body, err := a.optStr("body", "")
	if err != nil {
		return nil, err
	}
	if a.has("title") {
		if err := checkTitle(title); err != nil {
			return nil, err
		}
	}
	if err := checkBody(body); err != nil {
		return nil, err
	}
	n, err := s.modify(id, func(n *note) error {
		if a.has("title") {
			n.title = title
		}
		if a.has("body") {
			n.body = body
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return structured(n, "")
}

func (s *noteStore) deleteNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	id, err := a.str("id")
	if err != nil {
		return nil, err
	}
	n, err := s.remove(id)
	if err != nil {
		return nil, err
	}
	return structured(deletedNote{ID: n.ID, Title: n.Title, Deleted: true}, "")
}

// optTag reads an optional tag filter, normalized like stored tags.
func optTag(a args, key string) (string, error) {
	tag, err := a.optStr(key, "")
	if err != nil || tag == "" {
		return "", err
	}
	tags, err := normalizeTags([]string{tag})
	if err != nil {
		return "", err
	}
	return tags[0], nil
}

func (s *noteStore) listNotes(_ context.Context, a args) (*mcp.CallToolResult, error) {
	tag, err := optTag(a, "tag")
	if err != nil {
		return nil, err
	}
	sortBy, err := a.enum("sort", "created", "created", "updated", "title")
	if err != nil {
		return nil, err
	}
	limit, err := a.optInteger("limit", defaultNoteList, 1, maxNoteList)
	if err != nil {
		return nil, err
	}
	all := s.all(tag, sortBy)
	out := noteList{Notes: []noteSummary{}, Total: len(all)}
	for _, n := range all[:min(len(all), int(limit))] {
		out.Notes = append(out.Notes, noteSummary{ID: n.ID, Title: n.Title, Tags: n.Tags, Updated: n.Updated})
	}
	out.Returned = len(out.Notes)
	return structured(out, "")
}

func (s *noteStore) searchNotes(_ context.Context, a args) (*mcp.CallToolResult, error) {
	query, err := a.nonEmpty("query")
	if err != nil {
		return nil, err
	}
	mode, err := a.enum("mode", "substring", "substring", "word")
	if err != nil {
		return nil, err
	}
	tag, err := optTag(a, "tag")
	if err != nil {
		return nil, err
	}
	limit, err := a.optInteger("limit", defaultNoteList, 1, maxNoteList)
	if err != nil {
		return nil, err
	}
	match := substringMatcher(query)
	if mode == "word" {
		match = wordMatcher(query)
	}
	var inTitle, inBody []searchMatch
	for _, n := range s.all(tag, "created") {
		if pos, ok := match(n.Title); ok {
			inTitle = append(inTitle, searchMatch{ID: n.ID, Title: n.Title, Snippet: snippet(n.Title, pos)})
		} else if pos, ok := match(n.Body); ok {
			inBody = append(inBody, searchMatch{ID: n.ID, Title: n.Title, Snippet: snippet(n.Body, pos)})
		}
	}
	all := append(inTitle, inBody...)
	out := noteSearch{Query: query, Mode: mode, Matches: []searchMatch{}, Total: len(all)}
	out.Matches = append(out.Matches, all[:min(len(all), int(limit))]...)
	return structured(out, "")
}

// substringMatcher finds query anywhere, ignoring case; it returns the byte
// offset of the match.
func substringMatcher(query string) func(string) (int, bool) {
	q := strings.ToLower(query)
	return func(text string) (int, bool) {
		i := strings.Index(strings.ToLower(text), q)
		return i, i >= 0
	}
}

// wordMatcher requires every word of query as a whole word; it returns the
// offset of the first query word's first occurrence.
func wordMatcher(query string) func(string) (int, bool) {
	want := words(strings.ToLower(query))
	return func(text string) (int, bool) {
		have := map[string]int{}
		for _, w := range wordSpans(strings.ToLower(text)) {
			if _, seen := have[w.word]; !seen {
				have[w.word] = w.start
			}
		}
		first := -1
		for _, w := range want {
			pos, ok := have[w]
			if !ok {
				return 0, false
			}
			if first < 0 {
				first = pos
			}
		}
		return first, len(want) > 0
	}
}

type wordSpan struct {
	word  string
	start int
}

// wordSpans splits text into runs of letters and digits.
func wordSpans(text string) []wordSpan {
	var out []wordSpan
	start := -1
	for i, r := range text {
		isWord := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case isWord && start < 0:
			start = i
		case !isWord && start >= 0:
			out = append(out, wordSpan{text[start:i], start})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, wordSpan{text[start:], start})
	}
	return out
}

func words(text string) []string {
	spans := wordSpans(text)
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.word
	}
	return out
}

// snippet returns up to ~100 bytes of text around byte offset pos, on rune
// boundaries, with ellipses where it was cut.
func snippet(text string, pos int) string {
	const before, after = 40, 60
	start := max(0, pos-before)
	end := min(len(text), pos+after)
	for start > 0 && !isRuneStart(text[start]) {
		start--
	}
	for end < len(text) && !isRuneStart(text[end]) {
		end++
	}
	s := strings.Join(strings.Fields(text[start:end]), " ")
	if start > 0 {
		s = "…" + s
	}
	if end < len(text) {
		s += "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func (s *noteStore) tagNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	id, err := a.str("id")
	if err != nil {
		return nil, err
	}
	tags, err := requiredTags(a)
	if err != nil {
		return nil, err
	}
	n, err := s.modify(id, func(n *note) error {
		merged, _ := normalizeTags(append(slices.Clone(n.tags), tags...))
		if len(merged) > maxTagsPerNote {
			return fmt.Errorf("note %q would have %d tags, the limit is %d", id, len(merged), maxTagsPerNote)
		}
		n.tags = merged
		return nil
	})
	if err != nil {
		return nil, err
	}
	return structured(n, "")
}

func (s *noteStore) untagNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	id, err := a.str("id")
	if err != nil {
		return nil, err
	}
	tags, err := requiredTags(a)
	if err != nil {
		return nil, err
	}
	n, err := s.modify(id, func(n *note) error {
		kept := slices.DeleteFunc(slices.Clone(n.tags), func(t string) bool { return slices.Contains(tags, t) })
		if len(kept) == len(n.tags) {
			return fmt.Errorf("note %q has none of the tags %s", id, strings.Join(tags, ", "))
		}
		n.tags = kept
		return nil
	})
	if err != nil {
		return nil, err
	}
	return structured(n, "")
}

// requiredTags reads the required, non-empty "tags" argument, normalized.
func requiredTags(a args) ([]string, error) {
	raw, err := a.strList("tags", true, maxTagsPerNote)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("argument \"tags\" must list at least one tag")
	}
	return normalizeTags(raw)
}

func (s *noteStore) listTags(_ context.Context, _ args) (*mcp.CallToolResult, error) {
	out := tagList{Tags: []tagCount{}}
	for t, c := range s.tagCounts() {
		out.Tags = append(out.Tags, tagCount{Tag: t, Count: c})
	}
	slices.SortFunc(out.Tags, func(a, b tagCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	return structured(out, "")
}

func (s *noteStore) appendToNote(_ context.Context, a args) (*mcp.CallToolResult, error) {
	id, err := a.str("id")
	if err != nil {
		return nil, err
	}
	text, err := a.str("text")
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, fmt.Errorf("argument \"text\" must not be empty")
	}
	sep, err := a.optStr("separator", "\n")
	if err != nil {
		return nil, err
	}
	n, err := s.modify(id, func(n *note) error {
		body := text
		if n.body != "" {
			body = n.body + sep + text
		}
		if err := checkBody(body); err != nil {
			return err
		}
		n.body = body
		return nil
	})
	if err != nil {
		return nil, err
	}
	return structured(n, "")
}

func (s *noteStore) exportNotes(_ context.Context, a args) (*mcp.CallToolResult, error) {
	tag, err := optTag(a, "tag")
	if err != nil {
		return nil, err
	}
	notes := s.all(tag, "created")
	var b strings.Builder
	b.WriteString("# Notes\n")
	if len(notes) == 0 {
		b.WriteString("\n_No notes._\n")
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n## %s\n\n", n.Title)
		fmt.Fprintf(&b, "_id %s, updated %s_", n.ID, n.Updated)
		if len(n.Tags) > 0 {
			b.WriteString(" · ")
			for i, t := range n.Tags {
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString("#" + t)
			}
		}
		b.WriteString("\n")
		if n.Body != "" {
			b.WriteString("\n" + strings.TrimRight(n.Body, "\n") + "\n")
		}
	}
	md := b.String()
	return structured(noteExport{Markdown: md, Count: len(notes)}, md)
}

func (s *noteStore) renameTagTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	fromRaw, err := a.str("from")
	if err != nil {
		return nil, err
	}
	toRaw, err := a.str("to")
	if err != nil {
		return nil, err
	}
	tags, err := normalizeTags([]string{fromRaw})
	if err != nil {
		return nil, err
	}
	from := tags[0]
	if tags, err = normalizeTags([]string{toRaw}); err != nil {
		return nil, err
	}
	to := tags[0]
	if from == to {
		return nil, fmt.Errorf("\"from\" and \"to\" are the same tag %q", from)
	}
	n := s.renameTag(from, to)
	if n == 0 {
		return nil, fmt.Errorf("no note has the tag %q", from)
	}
	return structured(tagRename{From: from, To: to, Notes: n}, "")
}
