package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// metatoolDir holds the MetaTool tool-retrieval set (MIT, LICENSE beside
// it): one server, "plugins", of 199 tools, and queries people wrote for
// them.
const metatoolDir = "../../../bridge/search/testdata/metatool"

// plainQuery is a MetaTool query with the one tool it needs.
type plainQuery struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Want  []string `json:"relevant"`
}

// wordRE finds the words of a text, after camelCase is split.
var (
	wordRE  = regexp.MustCompile(`[a-z0-9]+`)
	camelRE = regexp.MustCompile(`([a-z])([A-Z])`)
)

// commonWords are words nearly every request or description has; sharing
// one does not make a query lexically findable.
var commonWords = strings.Fields("the and for you your can are with what how this that any from have has some about get give need help want use using into there which where will would could should does not all one more other out new make me")

// stems are a text's words of three letters or more, cut to their first
// four letters (a crude stem: "papers" and "paper" meet), without the
// common words.
func stems(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRE.FindAllString(strings.ToLower(camelRE.ReplaceAllString(text, "$1 $2")), -1) {
		if len(w) >= 3 && !slices.Contains(commonWords, w) {
			out[w[:min(len(w), 4)]] = true
		}
	}
	return out
}

// plainLanguageQueries picks n MetaTool queries, spread evenly over the
// set, that need one tool and share no word (by stems) with that tool's
// name or description: only the meaning connects them.
func plainLanguageQueries(t *testing.T, n int) []plainQuery {
	t.Helper()
	var cat struct {
		Servers []struct {
			Name  string `json:"name"`
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"tools"`
		} `json:"servers"`
	}
	raw, err := os.ReadFile(metatoolDir + "/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatal(err)
	}
	words := map[string]map[string]bool{}
	for _, s := range cat.Servers {
		for _, tool := range s.Tools {
			words[s.Name+"::"+tool.Name] = stems(tool.Name + " " + tool.Description)
		}
	}
	f, err := os.Open(metatoolDir + "/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []plainQuery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q plainQuery
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("reading %s: %v", f.Name(), err)
		}
		if len(q.Want) != 1 || words[q.Want[0]] == nil {
			continue
		}
		shared := false
		for w := range stems(q.Query) {
			shared = shared || words[q.Want[0]][w]
		}
		if !shared {
			all = append(all, q)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(all) < n {
		t.Fatalf("only %d MetaTool queries share no word with their tool, want %d", len(all), n)
	}
	out := make([]plainQuery, n)
	for i := range out {
		out[i] = all[i*len(all)/n]
	}
	return out
}

// searchIDs runs tool_search and returns the ids it found, in order.
func searchIDs(t *testing.T, g *gateway, query string, limit int) []string {
	t.Helper()
	res, text := g.call(t, "tool_search", map[string]any{"query": query, "limit": limit})
	if res.IsError {
		t.Fatalf("tool_search %q: %s", query, text)
	}
	return hitIDs(t, res)
}

// hitIDs reads the ids out of a tool_search result's structuredContent.
func hitIDs(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Tools []struct {
			ID string `json:"id"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("tool_search structuredContent: %v: %s", err, raw)
	}
	ids := make([]string, len(sc.Tools))
	for i, h := range sc.Tools {
		ids[i] = h.ID
	}
	return ids
}

// metatoolConfig serves the MetaTool catalog through the drift server in
// bridge mode, with extra YAML appended.
func metatoolConfig(t *testing.T, extra string) string {
	t.Helper()
	path, err := filepath.Abs(metatoolDir + "/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	return driftConfig(t, &catalogFile{path: path}, extra, "plugins")
}

// embeddingsYAML is the search.embeddings block for server e. The query
// timeout is far above what a warm model needs (tens of milliseconds), so
// that a loaded machine does not turn a reranked search into a fallback,
// and below the client's own bound on a call.
func embeddingsYAML(e *testenv.Embeddings, keyEnv string, timeout time.Duration) string {
	return fmt.Sprintf("search:\n  embeddings:\n    url: %s\n    model: %s\n    timeout: %s\n    api_key_env: %s\n", e.URL, e.Model, timeout, keyEnv)
}

// waitEmbedded waits until toolbridge logs that the semantic rerank
// embedded the whole catalog, and fails the test if it does not.
func waitEmbedded(t *testing.T, stderr *testenv.SyncBuffer) {
	t.Helper()
	// A CPU-only model on a loaded 2-core machine: the bound is for a hang.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	done := regexp.MustCompile(`tools embedded.* embedded=(\d+) of=(\d+)`)
	out := stderr.WaitFor(ctx, func(s string) bool {
		for _, m := range done.FindAllStringSubmatch(s, -1) {
			if m[1] == m[2] {
				return true
			}
		}
		return false
	})
	if ctx.Err() != nil {
		t.Fatalf("toolbridge never logged the whole catalog embedded\nstderr:\n%s", out)
	}
}

// TestSemanticRerankFindsPlainLanguage serves the MetaTool catalog through
// the real toolbridge twice, without and with search.embeddings pointing at
// a real embeddings model, and asks both the same plain-language requests,
// each sharing no word with the tool it needs. The hybrid ranking must put
// the needed tool in the top 5 for at least four more of them, and for at
// least four that the lexical ranking misses (with USE-lite at the
// default weight it finds 6 against 1, 5 only through the embeddings; the
// weight of 0.125 before the request-dependent weight found 3).
func TestSemanticRerankFindsPlainLanguage(t *testing.T) {
	const keyEnv, key = "TB_E2E_EMBEDDINGS_KEY", "sk-e2e-canary-8f3a"
	emb := testenv.EmbeddingsServer(t, testenv.EmbeddingsOptions{APIKey: key})
	queries := plainLanguageQueries(t, 40)

	lexical := startStdio(t, nil, "serve", "-c", metatoolConfig(t, ""), "--mode", "on")
	hybrid := startStdio(t, []string{keyEnv + "=" + key}, "serve", "-c", metatoolConfig(t, embeddingsYAML(emb, keyEnv, 30*time.Second)), "--mode", "on")
	waitEmbedded(t, hybrid.stderr)

	var lexHits, hybHits int
	var onlyHybrid []string
	for _, q := range queries {
		lex := slices.Contains(searchIDs(t, lexical, q.Query, 5), q.Want[0])
		hyb := slices.Contains(searchIDs(t, hybrid, q.Query, 5), q.Want[0])
		if lex {
			lexHits++
		}
		if hyb {
			hybHits++
		}
		if hyb && !lex {
			onlyHybrid = append(onlyHybrid, fmt.Sprintf("%q -> %s", q.Query, q.Want[0]))
		}
		t.Logf("%-11s lexical %-5v hybrid %-5v %q -> %s", q.ID, lex, hyb, q.Query, q.Want[0])
	}
	t.Logf("Hit@5 over %d plain-language queries: lexical %d, hybrid %d; found only by the hybrid ranking: %d", len(queries), lexHits, hybHits, len(onlyHybrid))
	if hybHits < lexHits+4 || len(onlyHybrid) < 4 {
		t.Errorf("the hybrid ranking found %d (lexical %d), %d of them only through the embeddings; want at least 4 more than the lexical ranking, at least 4 only through the embeddings", hybHits, lexHits, len(onlyHybrid))
	}
	if n := emb.Requests(200); n == 0 {
		t.Errorf("the embeddings server answered no request\n%s", emb.Stderr())
	}
	for name, out := range map[string]string{"toolbridge stderr": hybrid.stderr.String(), "embeddings server stderr": emb.Stderr()} {
		if strings.Contains(out, key) {
			t.Errorf("the API key shows in the %s", name)
		}
	}
}

// httpSession is an MCP client on a toolbridge served over HTTP; every
// answer it got is kept, to be searched for secrets.
type httpSession struct {
	c    *client.Client
	seen []string
}

// newHTTPSession connects and initializes a client on base/mcp.
func newHTTPSession(t *testing.T, base string) *httpSession {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge-e2e", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return &httpSession{c: c}
}

// search runs tool_search with limit 5 and returns the hit ids. A call
// that does not answer within the bound fails the test: the bound is far
// above any timeout configured here, so only a hang reaches it.
func (s *httpSession) search(t *testing.T, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_search"
	req.Params.Arguments = map[string]any{"query": query, "limit": 5}
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tool_search %q: %v", query, err)
	}
	raw, _ := json.Marshal(res)
	s.seen = append(s.seen, string(raw))
	if res.IsError {
		t.Fatalf("tool_search %q: %s", query, textOf(res))
	}
	return hitIDs(t, res)
}

// TestSemanticRerankSurvivesItsEndpoint serves the MetaTool catalog over
// HTTP with search.embeddings on a real model whose API key comes from an
// environment variable. The official TypeScript SDK client finds tools
// through the hybrid ranking, over HTTP and over stdio, its answers held
// to tool_search's outputSchema. Then the endpoint hangs (SIGSTOP) and dies (SIGKILL)
// mid-session: tool_search keeps answering with the lexical ranking, the
// log names each failure, and the key shows in no output.
func TestSemanticRerankSurvivesItsEndpoint(t *testing.T) {
	const keyEnv, key = "TB_E2E_EMBEDDINGS_KEY", "sk-e2e-canary-51d7"
	emb := testenv.EmbeddingsServer(t, testenv.EmbeddingsOptions{APIKey: key})
	t.Setenv(keyEnv, key)
	// The hung endpoint costs one query timeout, then the rerank skips it.
	cfg := metatoolConfig(t, "telemetry: {exporter: stdout}\n"+embeddingsYAML(emb, keyEnv, 15*time.Second))
	g := startHTTPProc(t, "-c", cfg, "--mode", "on")
	waitEmbedded(t, g.stderr)
	s := newHTTPSession(t, g.base)

	// The hybrid ranking's finds among the plain-language queries: the
	// TypeScript SDK client must get the same tools.
	var found []testenv.TSSearch
	for _, q := range plainLanguageQueries(t, 40) {
		if slices.Contains(s.search(t, q.Query), q.Want[0]) {
			found = append(found, testenv.TSSearch{Query: q.Query, Want: q.Want[0]})
		}
	}
	if len(found) < 3 {
		t.Fatalf("the hybrid ranking found only %d of 40 plain-language queries' tools", len(found))
	}
	report, driverErr, err := testenv.NPM(t).RunTSSession(t.Context(), testenv.TSSession{
		Session: testenv.SessionSearch, Transport: "http", URL: g.base + "/mcp", Searches: found[:3],
	})
	if err != nil {
		t.Fatalf("%v\n--- driver stderr ---\n%s", err, driverErr)
	}
	for _, p := range report.Problems() {
		t.Errorf("TypeScript SDK client: %s", p)
	}
	for _, st := range report.Steps {
		t.Logf("TypeScript SDK client: %s: ok=%v %s", st.Name, st.OK, st.Detail)
	}
	// The same over stdio, with a toolbridge the driver starts: it embeds
	// the catalog in the background, so each query is asked again until
	// the hybrid ranking has it (every answer held to the outputSchema).
	stdioReport, stdioErr, err := testenv.NPM(t).RunTSSession(t.Context(), testenv.TSSession{
		Session: testenv.SessionSearch, Transport: "stdio", Searches: found[:3], SearchRetryMs: 240_000,
		Command: binary, Args: []string{"serve", "-c", metatoolConfig(t, embeddingsYAML(emb, keyEnv, 15*time.Second)), "--mode", "on"},
		Env: map[string]string{keyEnv: key, "XDG_STATE_HOME": t.TempDir()},
	})
	if err != nil {
		t.Fatalf("%v\n--- driver stderr ---\n%s", err, stdioErr)
	}
	for _, p := range stdioReport.Problems() {
		t.Errorf("TypeScript SDK client over stdio: %s", p)
	}
	for _, st := range stdioReport.Steps {
		t.Logf("TypeScript SDK client over stdio: %s: ok=%v %s", st.Name, st.OK, st.Detail)
	}
	driverErr += "\n" + stdioErr

	// A lexical query keeps its answer whatever the endpoint does.
	const query, want = "weather forecast for tomorrow", "plugins::WeatherTool"
	if ids := s.search(t, query); !slices.Contains(ids, want) {
		t.Fatalf("with the endpoint up, %q found %v, want %s", query, ids, want)
	}
	for _, step := range []struct {
		name   string
		fail   func() error
		reason string
	}{
		{"hung", emb.Freeze, "timeout"},
		{"killed", func() error { emb.Stop(); return nil }, "unreachable"},
	} {
		if err := step.fail(); err != nil {
			t.Fatal(err)
		}
		// After a failure the rerank may skip the endpoint for a while;
		// search until the log names this failure (bounded: a hang fails
		// the search itself).
		logged := regexp.MustCompile(`semantic rerank.*reason="?` + step.reason)
		for i := 0; !logged.MatchString(g.stderr.String()); i++ {
			if i == 120 {
				t.Fatalf("%s endpoint: toolbridge never logged a %q failure\nstderr:\n%s", step.name, step.reason, g.stderr.String())
			}
			if ids := s.search(t, fmt.Sprintf("%s %d", query, i)); !slices.Contains(ids, want) {
				t.Fatalf("%s endpoint: %q found %v, want %s from the lexical ranking", step.name, query, ids, want)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	for line := range strings.Lines(g.stderr.String()) {
		if strings.Contains(line, "semantic rerank") {
			t.Logf("toolbridge: %s", strings.TrimSpace(line))
		}
	}

	resp, err := http.Get(g.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	readyz, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = s.c.Close()
	for name, out := range map[string]string{
		"toolbridge stdout": g.stdout.String(), "toolbridge stderr (logs and spans)": g.stderr.String(),
		"/readyz": string(readyz), "tool_search answers": strings.Join(s.seen, "\n"),
		"the TypeScript client's stderr": driverErr,
	} {
		if strings.Contains(out, key) {
			t.Errorf("the API key shows in %s", name)
		}
	}
	if !strings.Contains(g.stderr.String(), "tools/call tool_search") {
		t.Errorf("no tool_search span on stderr: the span check above could not fail\n%s", g.stderr.String())
	}
}

// TestSemanticRerankWrongKey: an endpoint that refuses the key (401) leaves
// tool_search to the lexical ranking; the log names the refusal, and
// neither the key sent nor the endpoint's answer shows it.
func TestSemanticRerankWrongKey(t *testing.T) {
	const keyEnv, key = "TB_E2E_EMBEDDINGS_KEY", "sk-e2e-canary-c09e"
	emb := testenv.EmbeddingsServer(t, testenv.EmbeddingsOptions{APIKey: "sk-e2e-the-server-wants-this"})
	g := startStdio(t, []string{keyEnv + "=" + key}, "serve", "-c", metatoolConfig(t, embeddingsYAML(emb, keyEnv, 30*time.Second)), "--mode", "on")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if n := emb.WaitRequests(ctx, 401, 1); n == 0 {
		t.Fatalf("the endpoint refused no request: toolbridge did not try it\n%s", emb.Stderr())
	}
	logged := g.stderr.WaitFor(ctx, func(s string) bool { return strings.Contains(s, "http status 401") })
	if !strings.Contains(logged, "http status 401") {
		t.Fatalf("toolbridge did not log the 401\nstderr:\n%s", logged)
	}
	const query, want = "weather forecast for tomorrow", "plugins::WeatherTool"
	res, text := g.call(t, "tool_search", map[string]any{"query": query, "limit": 5})
	if res.IsError || !slices.Contains(hitIDs(t, res), want) {
		t.Fatalf("tool_search %q with the key refused: isError=%v %s; want %s from the lexical ranking", query, res.IsError, text, want)
	}
	// The answer says it is the lexical ranking, and why: before, only
	// the log did.
	var sr struct {
		Ranking     string `json:"ranking"`
		RankingNote string `json:"ranking_note"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &sr); err != nil || sr.Ranking != "lexical" || !strings.Contains(sr.RankingNote, "http status 401") ||
		!strings.Contains(text, "Ranking: lexical (") {
		t.Errorf("the answer does not say it ranked lexically and why: %s\n%s", raw, text)
	}
	if n := emb.Requests(200); n != 0 {
		t.Errorf("the endpoint embedded %d requests with a wrong key", n)
	}
	raw, _ = json.Marshal(res)
	for name, out := range map[string]string{"toolbridge stderr": g.stderr.String(), "the tool_search answer": string(raw)} {
		if strings.Contains(out, key) {
			t.Errorf("the API key shows in %s", name)
		}
	}
}
