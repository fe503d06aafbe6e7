package semantic_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/search"
	"github.com/toolbridge/toolbridge/bridge/search/semantic"
)

// The quality harness runs against a real embeddings endpoint:
//
//	TOOLBRIDGE_EMBEDDINGS_URL=http://127.0.0.1:18931/v1 \
//	TOOLBRIDGE_EMBEDDINGS_MODEL=universal-sentence-encoder-lite \
//	TOOLBRIDGE_EMBEDDINGS_CACHE=/work/helpers/embed/cache \
//	go test ./bridge/search/semantic -run '^TestSemanticQuality$' -v -count=1 -timeout 60m
//
// Without TOOLBRIDGE_EMBEDDINGS_URL it is skipped (and says so). The cache
// directory keeps every vector, keyed by model and text hash, so a rerun
// embeds nothing it has embedded before.
const (
	envURL   = "TOOLBRIDGE_EMBEDDINGS_URL"
	envModel = "TOOLBRIDGE_EMBEDDINGS_MODEL"
	envCache = "TOOLBRIDGE_EMBEDDINGS_CACHE"
	envKey   = "TOOLBRIDGE_EMBEDDINGS_API_KEY"
)

// qualitySet is one benchmark of bridge/search/testdata.
type qualitySet struct {
	name     string
	catalogs []string
	queries  string
	tuned    bool // report the tuning and held-out halves
	bySteps  bool
}

var qualitySets = []qualitySet{
	{"bfcl", []string{"bfcl/catalog.json"}, "bfcl/queries.jsonl", true, false},
	{"metatool", []string{"metatool/catalog.json"}, "metatool/queries.jsonl", true, false},
	{"keywords", []string{"reference-servers/catalog.json"}, "keyword-queries.jsonl", false, false},
	{"tasks", []string{"reference-servers/catalog.json", "demo/catalog.json"}, "tasks/queries.jsonl", false, true},
}

// variant is one ranking to measure.
type variant struct {
	name    string
	fusion  semantic.Fusion
	weight  float64 // 0: lexical only
	float32 bool    // float32 vectors instead of int8
	// tune, when set, overrides the fusion's constants (WithTuning).
	tune *tuneVals
}

type tuneVals struct {
	clause    float64
	termsFull int
}

// variants are the rankings measured: the lexical one, the default, and
// the others TOOLBRIDGE_EMBEDDINGS_VARIANTS=all adds (the weights and
// fusions the default was chosen from, on the tuning halves).
func variants() []variant {
	vs := []variant{{name: "lexical"}, {name: fmt.Sprintf("default: weighted w=%g", semantic.DefaultWeight), weight: semantic.DefaultWeight}}
	// TOOLBRIDGE_EMBEDDINGS_TUNE="w/clause/termsFull;..." measures those
	// fusions (WithTuning), e.g. "0.125/0/0" for the fusion before
	// clauses and the request-dependent weight, "0.4/1/10".
	if list := os.Getenv("TOOLBRIDGE_EMBEDDINGS_TUNE"); list != "" {
		for _, f := range strings.Split(list, ";") {
			var w float64
			var tv tuneVals
			if _, err := fmt.Sscanf(f, "%g/%g/%d", &w, &tv.clause, &tv.termsFull); err == nil {
				vs = append(vs, variant{name: "w=" + f, weight: w, tune: &tv})
			}
		}
	}
	if os.Getenv("TOOLBRIDGE_EMBEDDINGS_VARIANTS") != "all" {
		return vs
	}
	vs = append(vs, variant{name: "  same, float32 vectors", weight: semantic.DefaultWeight, float32: true})
	ws := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1}
	if list := os.Getenv("TOOLBRIDGE_EMBEDDINGS_WEIGHTS"); list != "" { // e.g. "0.15,0.25"
		ws = nil
		for _, f := range strings.Split(list, ",") {
			var w float64
			if _, err := fmt.Sscan(f, &w); err == nil {
				ws = append(ws, w)
			}
		}
	}
	for _, w := range ws {
		vs = append(vs, variant{name: fmt.Sprintf("weighted w=%g", w), fusion: semantic.Weighted, weight: w})
	}
	for _, w := range []float64{0.3, 0.5, 0.7, 0.8} {
		vs = append(vs, variant{name: fmt.Sprintf("rrf w=%g", w), fusion: semantic.RRF, weight: w})
	}
	return vs
}

func TestSemanticQuality(t *testing.T) {
	base := os.Getenv(envURL)
	if base == "" {
		t.Skipf("skipped: set %s (and %s, %s) to measure the semantic rerank against a real endpoint", envURL, envModel, envCache)
	}
	model := cmpOr(os.Getenv(envModel), "universal-sentence-encoder-lite")
	client, err := semantic.NewClient(semantic.ClientOptions{URL: base, Model: model, APIKey: os.Getenv(envKey)})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := openCache(os.Getenv(envCache), model, client)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.close()
	only := os.Getenv("TOOLBRIDGE_EMBEDDINGS_SETS") // e.g. "bfcl,tasks"
	var table strings.Builder
	fmt.Fprintf(&table, "\nmodel %s at %s\n", model, semantic.Redact(base))
	for _, set := range qualitySets {
		if only != "" && !slices.Contains(strings.Split(only, ","), set.name) {
			continue
		}
		ix, docs, qs := loadSet(t, set)
		// Every query embedded up front, in large batches, into the cache.
		texts := make([]string, 0, len(qs))
		for _, q := range qs {
			texts = append(texts, q.Query)
			// The clauses the ranker embeds with the request.
			texts = append(texts, ix.Read(q.Query).Clauses...)
		}
		start := time.Now()
		if _, err := emb.Embed(context.Background(), texts); err != nil {
			t.Fatalf("%s: embedding the queries: %v", set.name, err)
		}
		t.Logf("%s: %d queries and their clauses (%d texts) embedded or cached in %s", set.name, len(qs), len(texts), time.Since(start).Round(time.Millisecond))

		fmt.Fprintf(&table, "\n%s (%d tools)\n", set.name, ix.Len())
		search.WriteTableHeader(&table)
		var r5 []float64 // Recall@5 of each variant
		for _, v := range variants() {
			rank := lexicalRanker(ix)
			if v.weight > 0 {
				r := newRanker(t, emb, docs, v)
				defer r.Close()
				rank = hybridRanker(t, r, ix)
			}
			m := search.EvaluateFunc(rank, qs, 10)
			r5 = append(r5, m.Recall5)
			search.WriteTableRow(&table, v.name, m)
			if set.tuned {
				tune, hold := search.SplitHalves(qs)
				search.WriteTableRow(&table, "  tuning half", search.EvaluateFunc(rank, tune, 10))
				search.WriteTableRow(&table, "  held-out half", search.EvaluateFunc(rank, hold, 10))
			}
			if set.bySteps {
				one, multi := splitSteps(qs)
				search.WriteTableRow(&table, "  one-tool", search.EvaluateFunc(rank, one, 10))
				search.WriteTableRow(&table, "  multi-tool", search.EvaluateFunc(rank, multi, 10))
			}
		}
		// The default weight was chosen so that no set loses more than
		// 0.003 of Recall@5 to the rerank.
		if r5[1] < r5[0]-0.003 {
			t.Errorf("%s: Recall@5 %.3f with the default rerank, %.3f without", set.name, r5[1], r5[0])
		}
	}
	t.Log(table.String())
}

// TestEndpointLatency measures the added latency of one query's
// embedding through the real endpoint, uncached (p50/p99 over the task
// set's queries): the request alone, and the request with its clauses in
// one call, as the ranker sends them.
func TestEndpointLatency(t *testing.T) {
	base := os.Getenv(envURL)
	if base == "" {
		t.Skipf("skipped: set %s to measure the endpoint's latency", envURL)
	}
	model := cmpOr(os.Getenv(envModel), "universal-sentence-encoder-lite")
	client, err := semantic.NewClient(semantic.ClientOptions{URL: base, Model: model, APIKey: os.Getenv(envKey)})
	if err != nil {
		t.Fatal(err)
	}
	ix, _, qs := loadSet(t, qualitySets[3])
	var one, all, split []time.Duration
	texts := 0
	for _, q := range qs {
		start := time.Now()
		if _, err := client.Embed(context.Background(), []string{q.Query}); err != nil {
			t.Fatal(err)
		}
		one = append(one, time.Since(start))
		batch := append([]string{q.Query}, ix.Read(q.Query).Clauses...)
		start = time.Now()
		if _, err := client.Embed(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, time.Since(start))
		if len(batch) > 1 {
			split = append(split, time.Since(start))
			texts += len(batch)
		}
	}
	pct := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("p50 %s p99 %s max %s", d[len(d)/2], d[len(d)*99/100], d[len(d)-1])
	}
	t.Logf("endpoint call, %d queries: the request alone %s; with its clauses %s", len(qs), pct(one), pct(all))
	if len(split) > 0 {
		t.Logf("the %d split requests (%.1f texts each): %s", len(split), float64(texts)/float64(len(split)), pct(split))
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// loadSet indexes a set's catalogs as the gateway does and loads its
// queries; docs are the tools by server.
func loadSet(t *testing.T, set qualitySet) (*search.Index, []search.ServerDocs, []search.Query) {
	t.Helper()
	// The gateway's index options (bridge.New).
	ix := search.New(search.Options{MaxLimit: 1 << 16})
	var docs []search.ServerDocs
	for _, c := range set.catalogs {
		cat, err := search.LoadCatalog(filepath.Join("..", "testdata", c))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cat {
			ix.Upsert(s.Server, s.Docs)
		}
		docs = append(docs, cat...)
	}
	qs, err := search.LoadQueries(filepath.Join("..", "testdata", set.queries))
	if err != nil {
		t.Fatal(err)
	}
	return ix, docs, qs
}

func splitSteps(qs []search.Query) (one, multi []search.Query) {
	for _, q := range qs {
		if len(q.Relevant) > 1 {
			multi = append(multi, q)
		} else {
			one = append(one, q)
		}
	}
	return one, multi
}

// newRanker builds a ranker over docs and waits until every tool is
// embedded.
func newRanker(t *testing.T, emb semantic.Embedder, docs []search.ServerDocs, v variant) *semantic.Ranker {
	t.Helper()
	o := semantic.Options{Embedder: emb, Weight: v.weight, Fusion: v.fusion, Cooldown: -1, BatchSize: 256}
	if v.float32 {
		o = semantic.WithFloat32(o)
	}
	if v.tune != nil {
		o = semantic.WithTuning(o, v.tune.clause, v.tune.termsFull)
	}
	r, err := semantic.NewRanker(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range docs {
		r.SetServer(s.Server, toolsOf(s.Docs))
	}
	deadline := time.Now().Add(30 * time.Minute)
	for {
		st := r.Store().Stats()
		if st.Tools > 0 && st.Embedded == st.Tools {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog not embedded: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lexicalRanker(ix *search.Index) func(string, int) []string {
	return func(q string, k int) []string { return ids(semantic.FromSearch(ix.Search(q, k).Hits)) }
}

// hybridRanker ranks as the gateway's tool_search does (bridge/meta.go).
func hybridRanker(t *testing.T, r *semantic.Ranker, ix *search.Index) func(string, int) []string {
	return func(q string, k int) []string {
		rq := ix.Read(q)
		req := semantic.Request{Query: q, Terms: rq.Terms, Clauses: rq.Clauses}
		hits, oc := r.Search(context.Background(), req, k, func(n int) []semantic.Hit { return semantic.FromSearch(ix.Search(q, n).Hits) })
		if oc.Status != "reranked" && strings.TrimSpace(q) != "" {
			t.Errorf("query %q not reranked: %+v", q, oc)
		}
		return ids(hits)
	}
}

func ids(hits []semantic.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// diskCache is an Embedder that keeps every vector in an append-only file
// per model (16-byte text hash, uint32 dimension, float32s) and asks the
// endpoint only for texts it has not seen.
type diskCache struct {
	inner semantic.Embedder
	mu    sync.Mutex
	m     map[[16]byte][]float32
	f     *os.File
	w     *bufio.Writer
}

func openCache(dir, model string, inner semantic.Embedder) (*diskCache, error) {
	c := &diskCache{inner: inner, m: map[[16]byte][]float32{}}
	if dir == "" {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the cache: %w", err)
	}
	name := regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(model, "_") + ".vec"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the cache: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		var hdr [20]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break // a torn last record is re-embedded
			}
			return nil, fmt.Errorf("reading the cache: %w", err)
		}
		dim := binary.LittleEndian.Uint32(hdr[16:])
		if dim == 0 || dim > 1<<14 {
			return nil, fmt.Errorf("reading the cache %s: corrupt record (dimension %d)", f.Name(), dim)
		}
		buf := make([]byte, 4*dim)
		if _, err := io.ReadFull(r, buf); err != nil {
			break
		}
		v := make([]float32, dim)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		c.m[[16]byte(hdr[:16])] = v
	}
	c.f, c.w = f, bufio.NewWriterSize(f, 1<<20)
	return c, nil
}

func textHash(s string) [16]byte {
	sum := sha256.Sum256([]byte(s))
	return [16]byte(sum[:16])
}

// Embed returns the cached vectors and embeds the rest, 1024 texts at a
// time (the client batches them further), appending them to the file.
func (c *diskCache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []int
	c.mu.Lock()
	seen := map[[16]byte]bool{}
	for i, s := range texts {
		k := textHash(s)
		if v, ok := c.m[k]; ok {
			out[i] = v
		} else if !seen[k] {
			seen[k] = true
			miss = append(miss, i)
		}
	}
	c.mu.Unlock()
	for start := 0; start < len(miss); start += 1024 {
		part := miss[start:min(start+1024, len(miss))]
		batch := make([]string, len(part))
		for j, i := range part {
			batch[j] = texts[i]
		}
		vecs, err := c.inner.Embed(ctx, batch)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		for j, i := range part {
			k := textHash(texts[i])
			c.m[k] = vecs[j]
			if c.w != nil {
				var hdr [20]byte
				copy(hdr[:16], k[:])
				binary.LittleEndian.PutUint32(hdr[16:], uint32(len(vecs[j])))
				c.w.Write(hdr[:])
				for _, x := range vecs[j] {
					c.w.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(x)))
				}
			}
		}
		if c.w != nil {
			if err := c.w.Flush(); err != nil {
				c.mu.Unlock()
				return nil, fmt.Errorf("writing the cache: %w", err)
			}
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range texts {
		if out[i] == nil {
			out[i] = c.m[textHash(s)]
		}
	}
	return out, nil
}

func (c *diskCache) close() {
	if c.f != nil {
		c.f.Close()
	}
}

// toolsOf converts documents as the gateway does (bridge/index.go).
func toolsOf(docs []search.Document) []semantic.Tool {
	out := make([]semantic.Tool, len(docs))
	for i, d := range docs {
		out[i] = semantic.Tool{ID: d.ID, Server: d.Server, Name: d.Name, Title: d.Title, Description: d.Description}
	}
	return out
}
