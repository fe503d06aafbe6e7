package bridge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/bridge/search/semantic"
)

// What tool_search's answer says beyond the ranking (#27): hits the client
// already lists, deprecated tools, weak hits, destructive tools when the
// request does not ask to change anything, and the ranking in force.

// weakRatio marks a hit weak when its score is under this share of the
// best hit's. The search drops hits under 0.2 of the best; those between
// are kept (a request may need a second tool), but a model should not read
// them as matches as good as the first.
const weakRatio = 0.6

// deprecatedFactor is what a deprecated tool's score is multiplied by, so
// that the tool it names instead ranks above it.
const deprecatedFactor = 0.5

// destructiveFactor is what the score of a tool marked destructive
// (destructiveHint true) is multiplied by when the request has no word
// that asks to change or remove something: "remember that Alice works at
// Acme" ranked memory's delete_observations above create_entities. It is
// small: it only reorders hits of close scores.
const destructiveFactor = 0.8

// ranked is one hit of the index with the tool it names and its score
// after the adjustments.
type ranked struct {
	t     *Tool
	score float64
}

// adjust applies the deprecated and destructive penalties to the index's
// hits and orders them again; hits of tools not in cat are dropped.
// summaries, if not nil, holds each tool's deprecation, read once per
// definition rather than once per search (see hitSummaries).
func adjust(cat *Catalog, query string, hits []search.Hit, summaries *hitSummaries) []ranked {
	changes := asksToChange(query)
	out := make([]ranked, 0, len(hits))
	for _, h := range hits {
		t, ok := cat.ByID(h.ID)
		if !ok {
			continue
		}
		score := h.Score
		if dep, _ := summaries.deprecated(t); dep && !h.Exact {
			score *= deprecatedFactor
		}
		if !changes && !h.Exact && markedDestructive(t) {
			score *= destructiveFactor
		}
		out = append(out, ranked{t: t, score: score})
	}
	slices.SortStableFunc(out, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	return out
}

// markedDestructive: the tool says it is destructive (destructiveHint
// true, not read-only). Tools without annotations, which MCP counts as
// destructive, are most tools; penalising them all would say nothing.
func markedDestructive(t *Tool) bool {
	a := t.Tool.Annotations
	return a.DestructiveHint != nil && *a.DestructiveHint && (a.ReadOnlyHint == nil || !*a.ReadOnlyHint)
}

// changeStems begin the words of a request that asks to change, replace or
// remove something: with one of them, a destructive tool may be what is
// wanted. A stem that also begins other words ("set" in "settings") only
// spares a penalty.
var changeStems = []string{
	"delet", "remov", "eras", "drop", "destro", "purg", "clear", "wip", "forget", "overwrit",
	"kill", "terminat", "stop", "reset", "revok", "cancel", "unlink", "uninstall", "truncat",
	"writ", "edit", "updat", "modif", "chang", "mov", "renam", "replac", "set", "sav", "stor",
	"put", "patch", "merg", "push", "commit", "clos", "archiv", "rm", "del", "undo", "revert",
	"discard", "empty", "prune", "clean", "uninvit", "ban", "block", "disabl", "deactivat", "expir",
}

// asksToChange reports whether query has a word that asks to change or
// remove something.
func asksToChange(query string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r >= 0x80)
	}) {
		for _, s := range changeStems {
			if strings.HasPrefix(w, s) {
				return true
			}
		}
	}
	return false
}

// instead is the id of the tool a deprecated tool names instead, when the
// same server has it. The answer depends only on cat, which never changes,
// and t: it is kept in cat, so that a deprecated tool found again does not
// walk the whole catalog again (10,000 tools on every search that finds
// one, where the rest of the answer costs a few hundred microseconds).
func instead(cat *Catalog, t *Tool, summaries *hitSummaries) (bool, string) {
	dep, repl := summaries.deprecated(t)
	if !dep || repl == "" {
		return dep, ""
	}
	if id, ok := cat.replacements.Load(t.ID); ok {
		return true, id.(string)
	}
	id := ""
	for _, o := range cat.Tools {
		if o.Server == t.Server && (o.Name == repl || o.Exposed == repl) {
			id = o.ID
			break
		}
	}
	cat.replacements.Store(t.ID, id)
	return true, id
}

// callName is the name the model knows a hit by: the name the client
// lists it under when it is listed, the configured name when a tools:
// rule renamed it, else its name on its server.
func callName(t *Tool) string {
	if !t.Deferred {
		return t.Exposed
	}
	if n := t.renamedAs(); n != "" {
		return n
	}
	return t.Name
}

// Ranking names the ranking a tool_search answer has: "lexical" (the
// index's BM25F) or "semantic" (the index's, reranked by embeddings).
const (
	RankingLexical  = "lexical"
	RankingSemantic = "semantic"
)

// ranking says which ranking an answer has and, when search.embeddings is
// set but the rerank did not run on every tool, why: while the rerank is
// still embedding the catalog, or after its endpoint failed, a model and
// its user would otherwise take a lexical ranking for the semantic one.
func (g *Gateway) ranking(oc semantic.Outcome) (string, string) {
	if g.semantic == nil || oc.Status == "" {
		return RankingLexical, ""
	}
	failure := g.semantic.LastFailure()
	switch {
	case oc.Status == "reranked" && oc.Embedded < oc.Tools:
		note := fmt.Sprintf("the semantic rerank has embedded %d of %d tools so far; the others rank lexically", oc.Embedded, oc.Tools)
		if failure != "" {
			note += fmt.Sprintf(" (the embeddings endpoint failed: %s)", failure)
		}
		return RankingSemantic, note
	case oc.Status == "reranked":
		return RankingSemantic, ""
	case oc.Status == "fallback":
		return RankingLexical, fmt.Sprintf("the embeddings endpoint failed (%s); this answer is the lexical ranking", oc.Reason)
	case oc.Reason == "empty query":
		return RankingLexical, ""
	case failure != "":
		return RankingLexical, fmt.Sprintf("no tool is embedded: the embeddings endpoint failed (%s); this answer is the lexical ranking", failure)
	}
	return RankingLexical, fmt.Sprintf("the semantic rerank is still embedding the catalog (%d of %d tools); this answer is the lexical ranking", oc.Embedded, oc.Tools)
}
