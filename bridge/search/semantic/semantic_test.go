package semantic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		n      int
		want   [][]float32
		reason string
	}{
		{"in order", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]}`, 2, [][]float32{{1, 2}, {3, 4}}, ""},
		{"reversed", `{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}`, 2, [][]float32{{1, 2}, {3, 4}}, ""},
		{"no index: by position", `{"data":[{"embedding":[1]},{"embedding":[2]}],"model":"m","usage":{}}`, 2, [][]float32{{1}, {2}}, ""},
		{"exponent", `{"data":[{"index":0,"embedding":[1e-3,-2.5E2]}]}`, 1, [][]float32{{0.001, -250}}, ""},
		{"not json", `<html>bad gateway</html>`, 1, nil, ReasonMalformed},
		{"truncated", `{"data":[{"index":0,"embedding":[1,`, 1, nil, ReasonMalformed},
		{"empty", ``, 1, nil, ReasonMalformed},
		{"strings", `{"data":[{"index":0,"embedding":["a","b"]}]}`, 1, nil, ReasonMalformed},
		{"base64 answer", `{"data":[{"index":0,"embedding":"AACAPw=="}]}`, 1, nil, ReasonMalformed},
		{"no data", `{"object":"list"}`, 1, nil, ReasonCount},
		{"null data", `{"data":null}`, 1, nil, ReasonCount},
		{"too few", `{"data":[{"index":0,"embedding":[1]}]}`, 2, nil, ReasonCount},
		{"too many", `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}]}`, 1, nil, ReasonCount},
		{"repeated index", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`, 2, nil, ReasonCount},
		{"index out of range", `{"data":[{"index":5,"embedding":[1]}]}`, 1, nil, ReasonCount},
		{"negative index", `{"data":[{"index":-1,"embedding":[1]}]}`, 1, nil, ReasonCount},
		{"dimensions differ", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]}]}`, 2, nil, ReasonDimension},
		{"empty vector", `{"data":[{"index":0,"embedding":[]}]}`, 1, nil, ReasonDimension},
		{"null vector", `{"data":[{"index":0,"embedding":null}]}`, 1, nil, ReasonDimension},
		{"NaN literal", `{"data":[{"index":0,"embedding":[1,NaN]}]}`, 1, nil, ReasonNotFinite},
		{"NaN string", `{"data":[{"index":0,"embedding":[1,"NaN"]}]}`, 1, nil, ReasonNotFinite},
		{"Infinity", `{"data":[{"index":0,"embedding":[-Infinity,1]}]}`, 1, nil, ReasonNotFinite},
		{"beyond float32", `{"data":[{"index":0,"embedding":[1e39]}]}`, 1, nil, ReasonNotFinite},
		{"beyond float64", `{"data":[{"index":0,"embedding":[1e400]}]}`, 1, nil, ReasonMalformed},
		{"too many dimensions", `{"data":[{"index":0,"embedding":[` + strings.Repeat("0,", maxDims) + `0]}]}`, 1, nil, ReasonDimension},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResponse([]byte(tt.raw), tt.n)
			if tt.reason != "" {
				if err == nil || ReasonOf(err) != tt.reason {
					t.Fatalf("ParseResponse = %v, %v; want reason %q", got, err, tt.reason)
				}
				if !strings.HasPrefix(err.Error(), "decoding the answer: ") {
					t.Errorf("error %q lacks its context", err)
				}
				return
			}
			if err != nil || !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("ParseResponse = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// FuzzParseResponse checks that no answer panics the parser and that what
// it accepts is usable: n vectors of one dimension, finite numbers.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]}`,
		`{"data":[{"embedding":[0.5]}]}`,
		`{"data":[{"index":0,"embedding":[NaN]}]}`,
		`{"data":[{"index":3,"embedding":[1]}]}`,
		`{"data":null}`, `[]`, `null`, `{"data":[{"index":0,"embedding":[1e39]}]}`,
	} {
		f.Add([]byte(s), 2)
		f.Add([]byte(s), 1)
	}
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vecs, err := ParseResponse(raw, n)
		if err != nil {
			if ReasonOf(err) == "error" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d texts", len(vecs), n)
		}
		for _, v := range vecs {
			if len(v) == 0 || len(v) != len(vecs[0]) {
				t.Fatalf("dimensions %d and %d", len(v), len(vecs[0]))
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("non-finite component %v", x)
				}
			}
		}
	})
}

func TestNewClientRejects(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:11434", "ftp://x/v1", "http:///v1", "https://user:sk-secret@x.example/v1", "https://x.example/v1?key=sk-secret", "https://x.example/v1#sk-secret"} {
		_, err := NewClient(ClientOptions{URL: u, Model: "m"})
		if err == nil {
			t.Errorf("NewClient(%q) accepted", u)
			continue
		}
		if strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("NewClient(%q) error shows the secret: %v", u, err)
		}
	}
	if _, err := NewClient(ClientOptions{URL: "http://127.0.0.1:1/v1"}); err == nil {
		t.Error("NewClient without a model accepted")
	}
}

func TestClientBatchesAndOrders(t *testing.T) {
	f := newFakeEndpoint(t)
	c, err := NewClient(ClientOptions{URL: f.url() + "/", Model: "m", BatchSize: 3, APIKey: "sk-test-key"})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if !slices.Equal(vecs[i], bagOfWords(s, f.dim)) {
			t.Errorf("vector %d is not %q's", i, s)
		}
	}
	if n := f.requestCount(); n != 3 {
		t.Errorf("%d requests for 7 texts in batches of 3, want 3", n)
	}
	for _, a := range f.auth {
		if a != "Bearer sk-test-key" {
			t.Errorf("Authorization %q", a)
		}
	}
}

// failures are the ways an endpoint can fail, each with its reason.
var failures = []struct {
	name   string
	h      http.HandlerFunc
	reason string
}{
	{"401 echoing the key", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}, "http status 401"},
	{"404", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "model not found", http.StatusNotFound) }, "http status 404"},
	{"500", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	}, "http status 500"},
	{"malformed", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"data":[{"index":0,"embedding":[1,`)) }, ReasonMalformed},
	{"wrong count", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"data":[]}`)) }, ReasonCount},
	{"NaN", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"index":0,"embedding":[NaN,1]}]}`))
	}, ReasonNotFinite},
	{"wrong dimension", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"index":0,"embedding":[1,2,3]}]}`))
	}, ReasonDimension},
	{"huge answer", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"index":0,"embedding":[`))
		w.Write(bytes.Repeat([]byte("0.000000000000,"), (maxAnswerBase+maxAnswerPerText)/15+1))
		w.Write([]byte(`0]}]}`))
	}, ReasonMalformed},
	{"connection dropped", func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}, ReasonUnreachable},
}

const testKey = "sk-test-SECRET-4242"

// testRanker returns a ranker on f with three tools embedded, and the
// buffer its logs go to.
func testRanker(t *testing.T, f *fakeEndpoint, o Options) (*Ranker, *syncBuffer) {
	t.Helper()
	c, err := NewClient(ClientOptions{URL: f.url(), Model: "m", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	o.Embedder = c
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if o.Cooldown == 0 {
		o.Cooldown = -1
	}
	r, err := NewRanker(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	r.SetServer("kb", []Tool{
		{ID: "kb::delete_entities", Server: "kb", Name: "delete_entities", Description: "Forget people and things: remove entities from the knowledge graph"},
		{ID: "kb::create_relations", Server: "kb", Name: "create_relations", Description: "Link entities with relations"},
		{ID: "kb::read_graph", Server: "kb", Name: "read_graph", Description: "Read the whole knowledge graph"},
	})
	waitEmbedded(t, r, 3)
	return r, logs
}

func waitEmbedded(t *testing.T, r *Ranker, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.Store().Stats().Embedded != n {
		if time.Now().After(deadline) {
			t.Fatalf("embedded %+v, want %d", r.Store().Stats(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lexicalOf is a lexical ranking that always answers hits, recording the
// limits it was asked for.
func lexicalOf(hits ...Hit) (func(int) []Hit, *[]int) {
	var asked []int
	return func(n int) []Hit {
		asked = append(asked, n)
		return hits[:min(n, len(hits))]
	}, &asked
}

func TestRankerReranks(t *testing.T) {
	f := newFakeEndpoint(t)
	r, _ := testRanker(t, f, Options{Weight: 0.8})
	// Lexically, "forget" matched nothing but read_graph's "graph".
	lex, asked := lexicalOf(Hit{ID: "kb::read_graph", Server: "kb", Name: "read_graph", Score: 3})
	hits, oc := r.Search(context.Background(), Request{Query: "forget people and things"}, 2, lex)
	if oc.Status != "reranked" || oc.Embedded != 3 || oc.Tools != 3 {
		t.Fatalf("outcome %+v", oc)
	}
	if len(hits) != 2 || hits[0].ID != "kb::delete_entities" {
		t.Fatalf("hits %+v, want delete_entities first", hits)
	}
	if hits[0].Server != "kb" || hits[0].Name != "delete_entities" {
		t.Errorf("semantic hit lacks server or name: %+v", hits[0])
	}
	if (*asked)[0] < DefaultDepth {
		t.Errorf("lexical asked for %d candidates, want at least %d", (*asked)[0], DefaultDepth)
	}
	// An exact hit stays first whatever the cosine says.
	lex, _ = lexicalOf(Hit{ID: "kb::read_graph", Score: 1003, Exact: true})
	if hits, _ := r.Search(context.Background(), Request{Query: "forget people read_graph"}, 3, lex); hits[0].ID != "kb::read_graph" {
		t.Errorf("exact hit not first: %+v", hits)
	}
}

func TestRankerRRF(t *testing.T) {
	f := newFakeEndpoint(t)
	r, _ := testRanker(t, f, Options{Weight: 0.7, Fusion: RRF})
	lex, _ := lexicalOf(Hit{ID: "kb::read_graph", Score: 3}, Hit{ID: "kb::delete_entities", Score: 2})
	hits, oc := r.Search(context.Background(), Request{Query: "forget people"}, 3, lex)
	if oc.Status != "reranked" || len(hits) == 0 || hits[0].ID != "kb::delete_entities" {
		t.Fatalf("hits %+v %+v", hits, oc)
	}
}

func TestRankerNoLexicalMatch(t *testing.T) {
	f := newFakeEndpoint(t)
	f.dim = 4096 // few collisions of unrelated words
	r, _ := testRanker(t, f, Options{})
	// Nothing lexical and nothing close: no answer rather than the nearest.
	lex, _ := lexicalOf()
	if hits, _ := r.Search(context.Background(), Request{Query: "xylophone quartz"}, 5, lex); len(hits) != 0 {
		t.Errorf("nonsense got %+v", hits)
	}
}

func TestRankerFallsBack(t *testing.T) {
	lexHits := []Hit{{ID: "kb::read_graph", Score: 3}, {ID: "kb::create_relations", Score: 2}}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEndpoint(t)
			r, logs := testRanker(t, f, Options{})
			f.set(tt.h)
			for range 2 {
				lex, asked := lexicalOf(lexHits...)
				hits, oc := r.Search(context.Background(), Request{Query: "forget people"}, 1, lex)
				if oc.Status != "fallback" || oc.Reason != tt.reason {
					t.Errorf("outcome %+v, want fallback %q", oc, tt.reason)
				}
				if !slices.Equal(hits, lexHits[:1]) || !slices.Equal(*asked, []int{1}) {
					t.Errorf("hits %+v (asked %v), want the lexical ranking", hits, *asked)
				}
			}
			out := logs.String()
			if n := strings.Count(out, "reason="); n != 1 {
				t.Errorf("%d log lines for one reason, want 1:\n%s", n, out)
			}
			if !strings.Contains(out, `"`+tt.reason+`"`) && !strings.Contains(out, "reason="+tt.reason) {
				t.Errorf("log does not name the reason %q:\n%s", tt.reason, out)
			}
			if strings.Contains(out, testKey) {
				t.Errorf("log shows the API key:\n%s", out)
			}
		})
	}
}

func TestRankerHangFallsBackWithinTimeout(t *testing.T) {
	f := newFakeEndpoint(t)
	r, logs := testRanker(t, f, Options{Timeout: 100 * time.Millisecond, Cooldown: time.Hour})
	f.mu.Lock()
	f.hang = make(chan struct{})
	f.mu.Unlock()
	lex, _ := lexicalOf(Hit{ID: "kb::read_graph", Score: 1})
	done := make(chan Outcome, 1)
	go func() {
		_, oc := r.Search(context.Background(), Request{Query: "forget people"}, 5, lex)
		done <- oc
	}()
	select {
	case oc := <-done:
		if oc.Status != "fallback" || oc.Reason != ReasonTimeout {
			t.Errorf("outcome %+v, want a timeout fallback", oc)
		}
	case <-time.After(time.Minute): // far beyond the 100ms bound: it hangs
		t.Fatal("search did not return: the timeout does not bound it")
	}
	// Cooling down: the next search does not wait on the endpoint again.
	before := f.requestCount()
	_, oc := r.Search(context.Background(), Request{Query: "forget people"}, 5, lex)
	if after := f.requestCount(); oc.Status != "fallback" || !strings.Contains(oc.Reason, "cooling down") || after != before {
		t.Errorf("second search %+v asked the endpoint (%d -> %d requests)", oc, before, after)
	}
	if !strings.Contains(logs.String(), "reason=timeout") {
		t.Errorf("timeout not logged:\n%s", logs)
	}
}

func TestRankerCachesVectors(t *testing.T) {
	f := newFakeEndpoint(t)
	r, _ := testRanker(t, f, Options{})
	if got := len(f.texts()); got != 3 {
		t.Fatalf("embedded %d texts for 3 tools", got)
	}
	lex, _ := lexicalOf()
	r.Search(context.Background(), Request{Query: "forget people"}, 5, lex)
	r.Search(context.Background(), Request{Query: "link people"}, 5, lex)
	got := f.texts()
	if len(got) != 5 || got[3] != "forget people" || got[4] != "link people" {
		t.Fatalf("after two queries the endpoint embedded %q: tools again?", got[3:])
	}
	// One tool changes, one is new, one stays: only two texts go out.
	r.SetServer("kb", []Tool{
		{ID: "kb::delete_entities", Server: "kb", Name: "delete_entities", Description: "Forget people and things: remove entities from the knowledge graph"},
		{ID: "kb::create_relations", Server: "kb", Name: "create_relations", Description: "Link two entities with a named relation"},
		{ID: "kb::search_nodes", Server: "kb", Name: "search_nodes", Description: "Find entities"},
	})
	waitEmbedded(t, r, 3)
	got = f.texts()[5:]
	slices.Sort(got)
	want := []string{"create relations. Link two entities with a named relation", "search nodes. Find entities"}
	if !slices.Equal(got, want) {
		t.Errorf("re-embedded %q, want %q", got, want)
	}
	if st := r.Store().Stats(); st.Vectors != 3 || st.Tools != 3 {
		t.Errorf("stats %+v: the replaced vectors were not freed", st)
	}
	// A second server with a tool of the same text shares its vector.
	r.SetServer("kb2", []Tool{{ID: "kb2::search_nodes", Server: "kb2", Name: "search_nodes", Description: "Find entities"}})
	waitEmbedded(t, r, 4)
	if st := r.Store().Stats(); st.Vectors != 3 || len(f.texts()) != 7 {
		t.Errorf("stats %+v, %d texts: the same text was embedded twice", st, len(f.texts()))
	}
	r.SetServer("kb", nil)
	r.SetServer("kb2", nil)
	if st := r.Store().Stats(); st.Tools != 0 || st.Vectors != 0 {
		t.Errorf("stats %+v after removing every server", st)
	}
}

func TestRankerBackgroundRetries(t *testing.T) {
	f := newFakeEndpoint(t)
	f.set(failures[2].h) // 500
	c, err := NewClient(ClientOptions{URL: f.url(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	r, err := NewRanker(Options{Embedder: c, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetServer("s", []Tool{{ID: "s::a", Name: "a", Description: "alpha"}})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "http status 500") {
		if time.Now().After(deadline) {
			t.Fatalf("no failure logged:\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Until it succeeds, searches rank lexically and say why.
	lex, _ := lexicalOf(Hit{ID: "s::a", Score: 1})
	if _, oc := r.Search(context.Background(), Request{Query: "alpha"}, 5, lex); oc.Status != "lexical" {
		t.Errorf("outcome %+v before any vector", oc)
	}
	f.set(nil)
	waitEmbedded(t, r, 1) // the retry, a second later
}

func TestStoreBounded(t *testing.T) {
	f := newFakeEndpoint(t)
	c, _ := NewClient(ClientOptions{URL: f.url(), Model: "m"})
	logs := &syncBuffer{}
	r, err := NewRanker(Options{Embedder: c, MaxVectors: 2, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetServer("s", []Tool{{ID: "s::a", Name: "a"}, {ID: "s::b", Name: "b"}, {ID: "s::c", Name: "c"}})
	waitEmbedded(t, r, 2)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "more distinct tools") {
		if time.Now().After(deadline) {
			t.Fatalf("store full not logged:\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := r.Store().Stats(); st.Vectors != 2 || st.Tools != 3 {
		t.Errorf("stats %+v", st)
	}
	// The tool without a vector ranks as lexically: at its lexical place.
	lex, _ := lexicalOf(Hit{ID: "s::c", Score: 5}, Hit{ID: "s::a", Score: 1})
	hits, oc := r.Search(context.Background(), Request{Query: "c"}, 2, lex)
	if oc.Status != "reranked" || len(hits) == 0 || hits[0].ID != "s::c" {
		t.Errorf("hits %+v %+v", hits, oc)
	}
}

func TestQuantizedCosine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewStore(0)
	const dim, n = 512, 200
	raw := make([][]float32, n)
	var tools []Tool
	for i := range raw {
		raw[i] = make([]float32, dim)
		for j := range raw[i] {
			raw[i][j] = float32(rng.NormFloat64())
		}
		tools = append(tools, Tool{ID: fmt.Sprint("s::t", i), Name: fmt.Sprint("t", i)})
	}
	s.SetServer("s", tools)
	keys, _, _ := s.Pending(n)
	if err := s.Put(keys, raw); err != nil {
		t.Fatal(err)
	}
	q := raw[7]
	want := map[string]bool{}
	for _, tl := range tools {
		want[tl.ID] = true
	}
	sc, ok := s.score(q, 10, want)
	if !ok {
		t.Fatal("no scores")
	}
	worst := 0.0
	for i, tl := range tools {
		worst = max(worst, math.Abs(float64(sc.cos[tl.ID])-cosine(q, raw[i])))
	}
	if worst > 0.02 {
		t.Errorf("int8 cosine off by up to %.4f", worst)
	}
	if sc.ranked[0] != "s::t7" {
		t.Errorf("a vector is not its own nearest: %v", sc.ranked[:3])
	}
	if err := s.Put(keys[:1], [][]float32{{1, 2}}); err != nil {
		t.Errorf("an embedded key was put again: %v", err)
	}
	s.SetServer("s2", []Tool{{ID: "s2::x", Name: "x"}})
	k2, _, _ := s.Pending(1)
	if err := s.Put(k2, [][]float32{{1, 2}}); ReasonOf(err) != ReasonDimension {
		t.Errorf("a vector of another dimension: %v", err)
	}
}

func TestToolText(t *testing.T) {
	tests := []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "create_issue", Description: "Create an\n  issue."}, "create issue. Create an issue."},
		{Tool{Name: "getUserByID", Title: "User"}, "get User By ID. User"},
		{Tool{Name: "a.b-c/d"}, "a b c d"},
		{Tool{Name: ""}, ""},
		{Tool{Name: "x", Description: strings.Repeat("é", maxTextBytes)}, ""}, // checked below
	}
	for _, tt := range tests[:4] {
		if got := tt.tool.Text(); got != tt.want {
			t.Errorf("Text(%+v) = %q, want %q", tt.tool, got, tt.want)
		}
	}
	long := tests[4].tool.Text()
	if len(long) > maxTextBytes || !strings.HasPrefix(long, "x. éé") || !utf8Valid(long) {
		t.Errorf("long text cut badly: %d bytes", len(long))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestNewRankerRejects(t *testing.T) {
	if _, err := NewRanker(Options{}); err == nil {
		t.Error("no embedder accepted")
	}
	for _, w := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := NewRanker(Options{Embedder: &Client{}, Weight: w}); err == nil {
			t.Errorf("weight %v accepted", w)
		}
	}
}

func TestErrorsShowNoSecret(t *testing.T) {
	f := newFakeEndpoint(t)
	f.set(failures[0].h)
	c, _ := NewClient(ClientOptions{URL: f.url(), Model: "m", APIKey: testKey})
	_, err := c.Embed(context.Background(), []string{"x"})
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "Incorrect API key provided: ****") {
		t.Errorf("error %v", err)
	}
	if !strings.HasPrefix(err.Error(), "embedding 1 texts at "+f.url()+"/embeddings: status 401") {
		t.Errorf("error %q lacks its context", err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Error("not an *Error")
	}
}

// syncBuffer is a bytes.Buffer safe for the ranker's worker and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
