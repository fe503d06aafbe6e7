package bridge

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// answerQueries are requests a model sends tool_search on the reference
// catalog, for TestSearchAnswerTokens: tasks of the tasks set, the
// issue's examples, a miss and an empty query.
var answerQueries = []string{
	"read a file", "write a file", "create github issue", "forget a person",
	"remember that Alice works at Acme", "sha256 hash of a string",
	"take a screenshot of a web page", "send a message to a slack channel",
	"list my google drive files", "query the postgres database",
	"search the web for news", "weather forecast", "",
}

// TestSearchAnswerTokens measures what tool_search's answers cost, in
// o200k_base tokens, for the text block and for structuredContent
// serialised as a client does (JSON.stringify: compact). Hosts pass one or
// the other to the model (docs/search.md says which), so both are kept
// small. It prints the figures (-v) and holds the text block to the bound
// the compact format reached, so that it does not grow back unnoticed.
// The answers' text is in testdata/search-answers.golden (rewrite it with
// -update-answers), so that a change of what they say shows in review.
func TestSearchAnswerTokens(t *testing.T) {
	ups := map[string]*server.MCPServer{}
	for _, s := range referenceServers(t) {
		ups[s.name] = s.serve(0)
	}
	_, c := startGateway(t, bridgeConfig(), ups)
	counter, err := classify.NewCounter(config.TokenizerO200k)
	if err != nil {
		t.Fatal(err)
	}
	var text, structured, hits, listed int
	var all strings.Builder
	for _, q := range answerQueries {
		res, body := callText(t, c, toolid.MetaSearch, map[string]any{"query": q})
		// As a host serialises it (JSON.stringify): compact, "<" as is.
		sc := compactJSON(res.StructuredContent)
		tt, st := classify.CountText(counter, body), classify.CountText(counter, string(sc))
		text += tt
		structured += st
		var sr SearchResult
		if err := json.Unmarshal(sc, &sr); err != nil {
			t.Fatal(err)
		}
		for _, h := range sr.Tools {
			hits++
			if h.AlreadyListed {
				listed++
			}
		}
		t.Logf("%-36q text %4d tokens, structuredContent %4d tokens", q, tt, st)
		fmt.Fprintf(&all, "=== %q\n%s\n\n", q, body)
	}
	n := len(answerQueries)
	t.Logf("%d answers, %d hits (%d of them already listed): text %d tokens (%.0f an answer), structuredContent %d tokens (%.0f an answer)",
		n, hits, listed, text, float64(text)/float64(n), structured, float64(structured)/float64(n))
	golden := filepath.Join("testdata", "search-answers.golden")
	if *updateAnswers {
		if err := os.WriteFile(golden, []byte(all.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(golden); err != nil {
		t.Fatalf("reading %s (run with -update-answers to write it): %v", golden, err)
	} else if string(want) != all.String() {
		t.Errorf("the answers differ from %s (run with -update-answers to rewrite it, and review the diff):\n%s", golden, all.String())
	}
	if text > textTokensBound {
		t.Errorf("the text blocks cost %d tokens, over the %d the compact format reached", text, textTokensBound)
	}
}

var updateAnswers = flag.Bool("update-answers", false, "rewrite testdata/search-answers.golden")

// textTokensBound is TestSearchAnswerTokens' bound on the text blocks of
// its answers: 3,613 tokens with the compact format, against 4,274 for
// the 55 hits of the format before (the answers now also carry 4 hits
// already listed). Both counts are exact: a fixed catalog, a fixed
// tokenizer.
const textTokensBound = 3650
