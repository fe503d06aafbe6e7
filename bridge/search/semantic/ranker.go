package semantic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Hit is one ranked tool. It has the fields of search.Hit, so the gateway
// converts one to the other.
type Hit struct {
	ID     string
	Server string
	Name   string
	Score  float64
	Exact  bool
	Fuzzy  bool
}

// Fusion is how a Ranker combines the lexical and the semantic ranking.
type Fusion int

const (
	// Weighted adds the normalised scores: (1-w) x lexical / best
	// lexical + w x (cosine - floor) / (best cosine - floor), the floor
	// being the cosine of the last semantic candidate.
	Weighted Fusion = iota
	// RRF is weighted reciprocal rank fusion: (1-w) / (60 + lexical
	// rank) + w / (60 + semantic rank).
	RRF
)

// Defaults of Options.
const (
	DefaultWeight   = 0.125
	DefaultTimeout  = 2 * time.Second
	DefaultDepth    = 50
	DefaultCooldown = 10 * time.Second
	// batchTimeout bounds one background batch: a CPU-only model may
	// take seconds for DefaultBatchSize texts.
	batchTimeout = time.Minute
	// backoffMax bounds the wait before the background embedding retries.
	backoffMax = 2 * time.Minute
	// rrfK is reciprocal rank fusion's usual constant.
	rrfK = 60
	// minZ is how far above the catalog's mean cosine, in standard
	// deviations, a tool must be to be answered for a query with no
	// lexical match at all: without it, every query, nonsense included,
	// would get the nearest tools.
	minZ = 2.0
	// maxQueryBytes bounds the query text sent to the endpoint.
	maxQueryBytes = 2000
)

// Options configure a Ranker. Zero fields take the defaults.
type Options struct {
	// Embedder embeds tools and queries (a *Client); required.
	Embedder Embedder
	// Weight is the semantic share of the fused score, in (0, 1].
	Weight float64
	// Fusion is how the rankings are combined (default Weighted).
	Fusion Fusion
	// Timeout bounds one query's embedding.
	Timeout time.Duration
	// Depth is how many candidates each ranking contributes.
	Depth int
	// BatchSize is how many tool texts one background request embeds.
	BatchSize int
	// MaxVectors bounds the vectors held (default DefaultMaxVectors).
	MaxVectors int
	// Cooldown is how long queries skip the endpoint after a query's
	// embedding failed, so a dead endpoint costs one timeout, not one per
	// search; negative is none.
	Cooldown time.Duration
	// Logger gets one line per distinct failure reason, and one when the
	// catalog's embedding catches up.
	Logger *slog.Logger

	// float32 keeps the vectors as float32 rather than int8 (for the
	// harness, through export_test.go).
	float32 bool
}

// Ranker fuses the lexical ranking with the cosine ranking of the tools'
// embeddings. It embeds the catalog in the background (SetServer queues
// new and changed tools) and is safe for concurrent use. Close stops it.
type Ranker struct {
	o     Options
	store *Store

	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}

	mu     sync.Mutex
	logged map[string]bool // failure reasons already logged
	// coolUntil is when queries may try the endpoint again after a failure,
	// and coolReason why they wait.
	coolUntil  time.Time
	coolReason string
	// failures counts the worker's failed batches; full says the store
	// could not take every tool.
	failures int
	full     bool
	// last is the reason of the latest failure, "" when none.
	last string
}

// NewRanker starts a ranker and its background worker.
func NewRanker(o Options) (*Ranker, error) {
	if o.Embedder == nil {
		return nil, errors.New("creating semantic ranker: no embedder")
	}
	if o.Weight == 0 {
		o.Weight = DefaultWeight
	}
	if !(o.Weight > 0 && o.Weight <= 1) {
		return nil, fmt.Errorf("creating semantic ranker: weight %g is not in (0, 1]", o.Weight)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Depth <= 0 {
		o.Depth = DefaultDepth
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Cooldown == 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	st := NewStore(o.MaxVectors)
	st.exact = o.float32
	r := &Ranker{o: o, store: st, kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{}), logged: map[string]bool{}}
	go r.work(ctx)
	return r, nil
}

// Close stops the background embedding and waits for it.
func (r *Ranker) Close() {
	r.stop()
	<-r.done
}

// Store returns the ranker's vector store.
func (r *Ranker) Store() *Store { return r.store }

// SetServer replaces server's tools (none removes the server) and wakes
// the background worker to embed the new and changed ones.
func (r *Ranker) SetServer(server string, tools []Tool) {
	r.store.SetServer(server, tools)
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// work embeds what the store is missing, batch by batch, whenever woken;
// after a failure it waits, doubling from a second up to backoffMax.
func (r *Ranker) work(ctx context.Context) {
	defer close(r.done)
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		}
		start, n := time.Now(), 0
		for ctx.Err() == nil {
			keys, texts, full := r.store.Pending(r.o.BatchSize)
			if full {
				r.mu.Lock()
				r.full = true
				r.mu.Unlock()
				r.logOnce("full", "semantic rerank: the catalog has more distinct tools than the vector store holds; the rest rank lexically", "max_vectors", r.store.max)
				break
			}
			if len(keys) == 0 {
				if n > 0 {
					st := r.store.Stats()
					r.o.Logger.Info("semantic rerank: tools embedded", "tools", n, "embedded", st.Embedded, "of", st.Tools, "dim", st.Dim, "ms", time.Since(start).Milliseconds())
				}
				backoff = time.Second
				break
			}
			bctx, cancel := context.WithTimeout(ctx, batchTimeout)
			vecs, err := r.o.Embedder.Embed(bctx, texts)
			cancel()
			if err == nil && len(vecs) != len(texts) {
				err = &Error{Reason: ReasonCount, Err: fmt.Errorf("embedding %d texts: %d vectors", len(texts), len(vecs))}
			}
			if err == nil {
				err = r.store.Put(keys, vecs)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.logFailure("embedding the catalog", err)
				r.mu.Lock()
				r.failures++
				r.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, backoffMax)
				continue
			}
			n += len(keys)
		}
	}
}

// Wait returns when every tool has a vector, when the background
// embedding fails or the store is full, or when ctx ends.
func (r *Ranker) Wait(ctx context.Context) {
	r.mu.Lock()
	start := r.failures
	r.mu.Unlock()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st := r.store.Stats()
		r.mu.Lock()
		stop := st.Embedded == st.Tools || r.full || r.failures > start
		r.mu.Unlock()
		if stop {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// LastFailure returns the reason of the latest failure of the endpoint
// ("" when there was none).
func (r *Ranker) LastFailure() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// logFailure logs err once per distinct reason.
func (r *Ranker) logFailure(doing string, err error) {
	reason := ReasonOf(err)
	r.mu.Lock()
	r.last = reason
	r.mu.Unlock()
	r.logOnce(reason, "semantic rerank: "+doing+" failed; tool search ranks lexically meanwhile", "reason", reason, "error", err)
}

func (r *Ranker) logOnce(key, msg string, args ...any) {
	r.mu.Lock()
	seen := r.logged[key]
	r.logged[key] = true
	r.mu.Unlock()
	if !seen {
		r.o.Logger.Warn(msg, args...)
	}
}

// Outcome says how one search was ranked.
type Outcome struct {
	// Status is "reranked", "lexical" (nothing to rerank with: no
	// vectors yet, an empty query) or "fallback" (the endpoint failed).
	Status string
	// Reason says why the status is not "reranked".
	Reason string
	// Embedded and Tools count the tools with a vector and all tools.
	Embedded, Tools int
	// Embed is the time the query's embedding took.
	Embed time.Duration
}

// Search ranks query: it embeds the query (bounded by Options.Timeout),
// asks lexical for the lexical ranking, best first, and fuses the two.
// On any failure of the endpoint it returns lexical(limit) unchanged and
// the reason in Outcome. lexical may be called once; its limit may exceed
// limit, to get fusion candidates.
func (r *Ranker) Search(ctx context.Context, query string, limit int, lexical func(limit int) []Hit) ([]Hit, Outcome) {
	st := r.store.Stats()
	oc := Outcome{Embedded: st.Embedded, Tools: st.Tools}
	if strings.TrimSpace(query) == "" {
		oc.Status, oc.Reason = "lexical", "empty query"
		return lexical(limit), oc
	}
	if st.Embedded == 0 {
		oc.Status, oc.Reason = "lexical", "no tool embedded yet"
		return lexical(limit), oc
	}
	if reason, cooling := r.cooling(); cooling {
		oc.Status, oc.Reason = "fallback", reason+" (cooling down)"
		return lexical(limit), oc
	}
	start := time.Now()
	q, err := r.embedQuery(ctx, query)
	oc.Embed = time.Since(start)
	if err != nil {
		oc.Status, oc.Reason = "fallback", ReasonOf(err)
		if ctx.Err() == nil { // the caller's own cancel is no failure
			r.logFailure("embedding a query", err)
			r.cool(oc.Reason)
		}
		return lexical(limit), oc
	}
	if dim := r.store.Dim(); len(q) != dim {
		err := &Error{Reason: ReasonDimension, Err: fmt.Errorf("embedding a query: %w", errDimension(len(q), dim))}
		oc.Status, oc.Reason = "fallback", err.Reason
		r.logFailure("embedding a query", err)
		r.cool(oc.Reason)
		return lexical(limit), oc
	}
	lex := lexical(max(limit, r.o.Depth))
	hits, err := r.fuse(q, lex, limit)
	if err != nil { // the store changed dimension meanwhile
		oc.Status, oc.Reason = "fallback", ReasonOf(err)
		r.logFailure("ranking a query", err)
		return lex[:min(limit, len(lex))], oc
	}
	oc.Status = "reranked"
	return hits, oc
}

func (r *Ranker) embedQuery(ctx context.Context, query string) ([]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	if len(query) > maxQueryBytes {
		query = strings.ToValidUTF8(query[:maxQueryBytes], "")
	}
	vecs, err := r.o.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, &Error{Reason: ReasonCount, Err: fmt.Errorf("embedding a query: %d vectors", len(vecs))}
	}
	return vecs[0], nil
}

func (r *Ranker) cooling() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.coolReason, time.Now().Before(r.coolUntil)
}

func (r *Ranker) cool(reason string) {
	if r.o.Cooldown < 0 {
		return
	}
	r.mu.Lock()
	r.coolUntil, r.coolReason = time.Now().Add(r.o.Cooldown), reason
	r.mu.Unlock()
}

// fused is one candidate of the fusion.
type fused struct {
	hit   Hit
	lex   float64 // lexical score normalised by the best, 0 if none
	lrank int     // 1-based lexical rank, 0 if none
	cos   float64
	hasV  bool // the tool has a vector
	srank int  // 1-based semantic rank among the candidates
	score float64
}

// fuse combines lex (the lexical ranking, best first) with q's cosine
// ranking and returns the best limit.
func (r *Ranker) fuse(q []float32, lex []Hit, limit int) ([]Hit, error) {
	want := make(map[string]bool, len(lex))
	for _, h := range lex {
		want[h.ID] = true
	}
	sc, ok := r.store.score(q, max(limit, r.o.Depth), want)
	if !ok {
		return nil, &Error{Reason: ReasonDimension, Err: errDimension(len(q), sc.dim)}
	}
	var out []Hit
	cands := make([]*fused, 0, len(lex)+len(sc.ranked))
	byID := make(map[string]*fused, cap(cands))
	best := 0.0
	for _, h := range lex {
		if !h.Exact {
			best = max(best, h.Score)
		}
	}
	for i, h := range lex {
		if h.Exact {
			// A query that names a tool gets that tool first, as lexically.
			out = append(out, h)
			byID[h.ID] = nil
			continue
		}
		c := &fused{hit: h, lrank: i + 1}
		if best > 0 {
			c.lex = min(1, h.Score/best)
		}
		c.cos, c.hasV = float64(sc.cos[h.ID]), hasKey(sc.cos, h.ID)
		cands = append(cands, c)
		byID[h.ID] = c
	}
	for _, id := range sc.ranked {
		if _, ok := byID[id]; ok {
			continue
		}
		cos := float64(sc.cos[id])
		if len(lex) == 0 && (sc.std == 0 || (cos-sc.mean)/sc.std < minZ) {
			continue
		}
		server, name, ok := r.store.toolInfo(id)
		if !ok {
			continue
		}
		c := &fused{hit: Hit{ID: id, Server: server, Name: name}, cos: cos, hasV: true}
		cands = append(cands, c)
		byID[id] = c
	}
	// Semantic ranks among the candidates; a tool without a vector takes
	// its lexical place, so it ranks as lexically.
	bySem := slices.Clone(cands)
	slices.SortStableFunc(bySem, func(a, b *fused) int { return cmpDesc(a.cos, b.cos) })
	for i, c := range bySem {
		c.srank = i + 1
	}
	top, floor := 0.0, 0.0
	if len(sc.ranked) > 0 {
		top = float64(sc.cos[sc.ranked[0]])
		floor = float64(sc.cos[sc.ranked[len(sc.ranked)-1]])
	}
	w := r.o.Weight
	for _, c := range cands {
		switch r.o.Fusion {
		case RRF:
			srank := c.srank
			if !c.hasV {
				srank = c.lrank
			}
			if c.lrank > 0 {
				c.score += (1 - w) / float64(rrfK+c.lrank)
			}
			c.score += w / float64(rrfK+srank)
		default:
			sem := c.lex
			if c.hasV {
				sem = 0
				if top > floor {
					sem = math.Max(0, math.Min(1, (c.cos-floor)/(top-floor)))
				} else if c.cos >= top {
					sem = 1
				}
			}
			c.score = (1-w)*c.lex + w*sem
		}
	}
	// Ties keep the candidates' order: lexical first, then semantic.
	// Exact hits keep their lexical score, which includes the index's
	// exact bonus and so stays above every fused score (at most 1).
	slices.SortStableFunc(cands, func(a, b *fused) int { return cmpDesc(a.score, b.score) })
	for _, c := range cands {
		if len(out) >= limit {
			break
		}
		h := c.hit
		h.Score = c.score
		out = append(out, h)
	}
	return out[:min(limit, len(out))], nil
}

func hasKey(m map[string]float32, k string) bool {
	_, ok := m[k]
	return ok
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
