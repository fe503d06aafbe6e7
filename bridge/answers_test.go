package bridge

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/search/semantic"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// referenceBridge serves the 13 reference servers in bridge mode.
func referenceBridge(t *testing.T) (*Gateway, *client.Client) {
	t.Helper()
	ups := map[string]*server.MCPServer{}
	for _, s := range referenceServers(t) {
		ups[s.name] = s.serve(0)
	}
	return startGateway(t, bridgeConfig(), ups)
}

// searchFor runs tool_search and decodes its structured answer.
func searchFor(t *testing.T, c *client.Client, args map[string]any) (SearchResult, string) {
	t.Helper()
	res, text := callText(t, c, toolid.MetaSearch, args)
	if res.IsError {
		t.Fatalf("tool_search %v: %s", args, text)
	}
	var sr SearchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	return sr, text
}

func hitIndex(sr SearchResult, id string) int {
	return slices.IndexFunc(sr.Tools, func(h SearchHit) bool { return h.ID == id })
}

// TestSearchAnswersOnTheReferenceCatalog checks the examples on
// the reference servers; each failed before:
//   - "remember that Alice works at Acme" ranked memory's delete_observations
//     (destructive) above create_entities; a request that asks to remove
//     ("forget a person") still gets the destructive tool first;
//   - the core set listed filesystem's deprecated read_file and deferred
//     read_text_file; a search that finds read_file says it is deprecated
//     and what to use instead, and ranks it below;
//   - "write a file" could not find write_file (listed already): it is a
//     hit marked already_listed, and the hits far below it are weak;
//   - answers say which ranking they have.
func TestSearchAnswersOnTheReferenceCatalog(t *testing.T) {
	_, c := referenceBridge(t)

	sr, _ := searchFor(t, c, map[string]any{"query": "remember that Alice works at Acme"})
	create, del := hitIndex(sr, "memory::create_entities"), hitIndex(sr, "memory::delete_observations")
	if create < 0 || (del >= 0 && del < create) {
		t.Errorf("create_entities at %d, delete_observations at %d: %v", create, del, ids(sr))
	}
	sr, _ = searchFor(t, c, map[string]any{"query": "forget a person"})
	if len(sr.Tools) == 0 || sr.Tools[0].ID != "memory::delete_entities" {
		t.Errorf("forget a person: %v, want memory::delete_entities first", ids(sr))
	}

	listed := toolNames(t, c)
	if !slices.Contains(listed, "read_text_file") || slices.Contains(listed, "read_file") {
		t.Errorf("tools/list = %v, want read_text_file listed and the deprecated read_file not", listed)
	}
	sr, text := searchFor(t, c, map[string]any{"query": "read_file", "limit": 10})
	i := hitIndex(sr, "filesystem::read_file")
	if i < 0 {
		t.Fatalf("read_file not found: %v", ids(sr))
	}
	if h := sr.Tools[i]; !h.Deprecated || h.Instead != "filesystem::read_text_file" {
		t.Errorf("read_file hit %+v, want deprecated, instead filesystem::read_text_file", h)
	}
	if !strings.Contains(text, "filesystem::read_file — ") || !strings.Contains(text, "DEPRECATED: use filesystem::read_text_file") {
		t.Errorf("text does not say read_file is deprecated:\n%s", text)
	}
	sr, _ = searchFor(t, c, map[string]any{"query": "read a file", "limit": 10})
	if rt, rf := hitIndex(sr, "filesystem::read_text_file"), hitIndex(sr, "filesystem::read_file"); rt < 0 || (rf >= 0 && rf < rt) {
		t.Errorf("read a file: read_text_file at %d, deprecated read_file at %d: %v", rt, rf, ids(sr))
	}

	sr, text = searchFor(t, c, map[string]any{"query": "write a file"})
	if len(sr.Tools) < 2 || sr.Tools[0].ID != "filesystem::write_file" || !sr.Tools[0].AlreadyListed || sr.Tools[0].Weak {
		t.Fatalf("write a file: %+v, want write_file first, already listed", sr.Tools)
	}
	for _, h := range sr.Tools[1:] {
		if !h.Weak {
			t.Errorf("%s (%.2f against %.2f) is not marked weak", h.ID, h.Score, sr.Tools[0].Score)
		}
	}
	if !strings.Contains(text, "1. write_file — already listed: call it directly\n2. (weak match) ") {
		t.Errorf("text:\n%s", text)
	}
	if sr.Ranking != RankingLexical || sr.RankingNote != "" || strings.Contains(text, "Ranking:") {
		t.Errorf("without embeddings: ranking %q, note %q", sr.Ranking, sr.RankingNote)
	}
}

func ids(sr SearchResult) []string {
	var out []string
	for _, h := range sr.Tools {
		out = append(out, h.ID)
	}
	return out
}

func TestAsksToChange(t *testing.T) {
	for q, want := range map[string]bool{
		"remember that Alice works at Acme": false,
		"forget a person":                   true,
		"Delete the old branch":             true,
		"write a file":                      true,
		"list my issues":                    false,
		"sha256 hash of a string":           false,
		"":                                  false,
	} {
		if got := asksToChange(q); got != want {
			t.Errorf("asksToChange(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestSearchAnswerNamesItsRanking: with search.embeddings set, an answer
// the semantic rerank did not rank says so, and why: before, a failed
// endpoint or a wrong model name left one WARN line and answers that
// looked the same.
func TestSearchAnswerNamesItsRanking(t *testing.T) {
	answer := func(g *Gateway) (SearchResult, string) {
		return searchFor(t, connectClient(t, g, mcp.ClientCapabilities{}), map[string]any{"query": "create an issue"})
	}
	f := newEmbeddingsFake(t)
	g, _, _ := startSemantic(t, f, 5*time.Second)
	sr, text := answer(g)
	if sr.Ranking != RankingSemantic || sr.RankingNote != "" || strings.Contains(text, "Ranking:") {
		t.Errorf("reranked: ranking %q, note %q\n%s", sr.Ranking, sr.RankingNote, text)
	}
	f.mode.Store("500")
	sr, text = answer(g)
	if sr.Ranking != RankingLexical || !strings.Contains(sr.RankingNote, "the embeddings endpoint failed (http status 500)") ||
		!strings.Contains(text, "Ranking: lexical (the embeddings endpoint failed (http status 500)") {
		t.Errorf("endpoint down: ranking %q, note %q\n%s", sr.Ranking, sr.RankingNote, text)
	}

	// The endpoint refuses from the start (a wrong model name): no tool
	// is embedded, and every answer says why.
	down := newEmbeddingsFake(t)
	down.mode.Store("500")
	g, _, _ = startSemantic(t, down, 5*time.Second)
	sr, text = answer(g)
	if sr.Ranking != RankingLexical || !strings.Contains(sr.RankingNote, "no tool is embedded: the embeddings endpoint failed (http status 500)") ||
		!strings.Contains(text, "Ranking: lexical (") {
		t.Errorf("never embedded: ranking %q, note %q\n%s", sr.Ranking, sr.RankingNote, text)
	}
	if len(sr.Tools) == 0 || sr.Tools[0].ID != "issues::create_issue" {
		t.Errorf("the lexical ranking still answers: %v", ids(sr))
	}
}

// TestRankingNotes covers what an answer says of each state of the
// semantic rerank, the ones a fake endpoint cannot hold still included.
func TestRankingNotes(t *testing.T) {
	g, _, _ := startSemantic(t, newEmbeddingsFake(t), 5*time.Second)
	for _, tc := range []struct {
		oc            semantic.Outcome
		ranking, note string
	}{
		{semantic.Outcome{Status: "reranked", Embedded: 7, Tools: 7}, RankingSemantic, ""},
		{semantic.Outcome{Status: "reranked", Embedded: 3, Tools: 7}, RankingSemantic, "the semantic rerank has embedded 3 of 7 tools so far; the others rank lexically"},
		{semantic.Outcome{Status: "lexical", Reason: "no tool embedded yet", Tools: 527}, RankingLexical, "the semantic rerank is still embedding the catalog (0 of 527 tools); this answer is the lexical ranking"},
		{semantic.Outcome{Status: "fallback", Reason: "timeout"}, RankingLexical, "the embeddings endpoint failed (timeout); this answer is the lexical ranking"},
		{semantic.Outcome{Status: "lexical", Reason: "empty query"}, RankingLexical, ""},
		{semantic.Outcome{}, RankingLexical, ""},
	} {
		if r, n := g.ranking(tc.oc); r != tc.ranking || n != tc.note {
			t.Errorf("ranking(%+v) = %q, %q; want %q, %q", tc.oc, r, n, tc.ranking, tc.note)
		}
	}
}

// TestDescribeShowsTheNameAndTheRealTool: a tool a tools: rule renamed is
// described under its new name, with its canonical id; search hits name
// both too.
func TestDescribeShowsTheNameAndTheRealTool(t *testing.T) {
	cfg := bridgeConfig()
	cfg.Tools = []config.ToolRule{{Match: "issues::create_issue", Name: "open_ticket"}}
	_, c := startBridge(t, cfg)
	res, text := callText(t, c, toolid.MetaDescribe, map[string]any{"tool_name": "open_ticket"})
	if res.IsError || !strings.Contains(text, `"id":"issues::create_issue","server":"issues","name":"open_ticket"`) {
		t.Errorf("tool_describe open_ticket:\n%s", text)
	}
	sr, text := searchFor(t, c, map[string]any{"query": "create issue"})
	if len(sr.Tools) == 0 || sr.Tools[0].ID != "issues::create_issue" || sr.Tools[0].Name != "open_ticket" ||
		!strings.Contains(text, "1. issues::create_issue (or open_ticket) — ") {
		t.Errorf("tool_search: %+v\n%s", sr.Tools, text)
	}
}

// TestDeprecationIsKeptPerDefinitionAndCatalog checks what tool_search
// remembers between searches (hitSummaries, Catalog.replacements): a
// tool's deprecation follows its description, and the tool named in its
// place is looked up in each catalog, never carried over from another.
func TestDeprecationIsKeptPerDefinitionAndCatalog(t *testing.T) {
	hs := newHitSummaries()
	old := &Tool{ID: "fs::read_file", Server: "fs", Name: "read_file", Exposed: "read_file",
		Tool: &mcp.Tool{Name: "read_file", Description: "Read a file. DEPRECATED: Use read_text_file instead."}}
	repl := &Tool{ID: "fs::read_text_file", Server: "fs", Name: "read_text_file", Exposed: "read_text_file",
		Tool: &mcp.Tool{Name: "read_text_file", Description: "Read a file as text."}}
	other := &Tool{ID: "git::read_text_file", Server: "git", Name: "read_text_file", Exposed: "git__read_text_file",
		Tool: &mcp.Tool{Name: "read_text_file", Description: "Read a file of the repository."}}
	withRepl := &Catalog{Tools: []*Tool{old, repl, other}}
	without := &Catalog{Tools: []*Tool{old, other}}
	for range 2 { // the second time from what was kept
		if dep, id := instead(withRepl, old, hs); !dep || id != "fs::read_text_file" {
			t.Errorf("with the replacement: instead = %v, %q; want true, fs::read_text_file", dep, id)
		}
		// Another catalog, where only another server has the name.
		if dep, id := instead(without, old, hs); !dep || id != "" {
			t.Errorf("without the replacement: instead = %v, %q; want true, \"\"", dep, id)
		}
		if dep, id := instead(withRepl, repl, hs); dep || id != "" {
			t.Errorf("the replacement itself: instead = %v, %q; want false", dep, id)
		}
	}
	// The same tool, no longer deprecated: what was kept must not answer.
	fixed := *old
	fixed.Tool.Description = "Read a file."
	if dep, id := instead(without, &fixed, hs); dep || id != "" {
		t.Errorf("after its description changed: instead = %v, %q; want false", dep, id)
	}
	if e := hs.get(&fixed); e.text != "Read a file." || e.short != "Read a file." {
		t.Errorf("summary after the change = %q / %q, want the new description", e.short, e.text)
	}
	// A long description: the text block's cut is clip's, made once.
	long := *repl
	long.Tool.Description = strings.Repeat("ü", 400)
	if e := hs.get(&long); e.text != clip(e.short, maxTextDescription) || e.short != clip(long.Tool.Description, maxDescription) {
		t.Errorf("long description: short %d runes, text %d runes", len([]rune(e.short)), len([]rune(e.text)))
	}
}
