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
	DefaultWeight   = 0.3
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
	// maxClauses bounds the clauses embedded with a request (the lexical
	// index scores at most six).
	maxClauses = 6
)

// Options configure a Ranker. Zero fields take the defaults.
type Options struct {
	// Embedder embeds tools and queries (a *Client); required.
	Embedder Embedder
	// Weight is the semantic share of the fused score, in (0, 1], for a
	// request of seven terms or more; Search gives a shorter one
	// terms/7 of it, and a Request whose Terms is 0 (unknown) the whole.
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
	// tune overrides the fusion's constants (for the harness, through
	// export_test.go); nil takes defaultTuning.
	tune *tuning
}

// tuning are the constants of the fusion, measured with the harness.
type tuning struct {
	// clause is the share of a clause's semantic score in a tool's
	// semantic score; 0 or less ignores the clauses.
	clause float64
	// termsFull is the number of terms from which a request gets the full
	// weight; fewer get terms/termsFull of it. 0 is always the full weight.
	termsFull int
}

// defaultTuning was measured with USE-lite on the tuning halves (README,
// "Semantic rerank"): a clause's best tool counts as much as the
// request's, and a request of fewer than seven terms gets terms/7 of the
// weight.
var defaultTuning = tuning{clause: 1, termsFull: 7}

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

// Request is a query as the lexical index reads it (search.Request,
// from search.Index.Read): the fusion embeds each clause too, and weighs
// the rerank by the request's terms.
type Request struct {
	// Query is the request's text.
	Query string
	// Terms counts its query terms; 0 is unknown.
	Terms int
	// Clauses are the clauses the lexical index scores apart, nil when it
	// does not split the request.
	Clauses []string
}

// Search ranks req: it embeds the request and its clauses in one
// call to the endpoint (bounded by Options.Timeout), asks lexical for
// the lexical ranking, best first, and fuses the two. On any failure of
// the endpoint it returns lexical(limit) unchanged and the reason in
// Outcome. lexical may be called once; its limit may exceed limit, to
// get fusion candidates.
func (r *Ranker) Search(ctx context.Context, req Request, limit int, lexical func(limit int) []Hit) ([]Hit, Outcome) {
	query := req.Query
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
	qs, err := r.embedQuery(ctx, r.texts(req))
	oc.Embed = time.Since(start)
	if err != nil {
		oc.Status, oc.Reason = "fallback", ReasonOf(err)
		if ctx.Err() == nil { // the caller's own cancel is no failure
			r.logFailure("embedding a query", err)
			r.cool(oc.Reason)
		}
		return lexical(limit), oc
	}
	dim := r.store.Dim()
	if bad := slices.IndexFunc(qs, func(q []float32) bool { return len(q) != dim }); bad >= 0 {
		err := &Error{Reason: ReasonDimension, Err: fmt.Errorf("embedding a query: %w", errDimension(len(qs[bad]), dim))}
		oc.Status, oc.Reason = "fallback", err.Reason
		r.logFailure("embedding a query", err)
		r.cool(oc.Reason)
		return lexical(limit), oc
	}
	lex := lexical(max(limit, r.o.Depth))
	hits, err := r.fuse(qs, req.Terms, lex, limit)
	if err != nil { // the store changed dimension meanwhile
		oc.Status, oc.Reason = "fallback", ReasonOf(err)
		r.logFailure("ranking a query", err)
		return lex[:min(limit, len(lex))], oc
	}
	oc.Status = "reranked"
	return hits, oc
}

// texts are what a request embeds: its text, then each clause's when
// the clauses are to count.
func (r *Ranker) texts(req Request) []string {
	cut := func(s string) string {
		if len(s) > maxQueryBytes {
			return strings.ToValidUTF8(s[:maxQueryBytes], "")
		}
		return s
	}
	out := []string{cut(req.Query)}
	if r.tune().clause > 0 && len(req.Clauses) > 1 {
		for _, c := range req.Clauses[:min(len(req.Clauses), maxClauses)] {
			out = append(out, cut(c))
		}
	}
	return out
}

func (r *Ranker) tune() tuning {
	if r.o.tune != nil {
		return *r.o.tune
	}
	return defaultTuning
}

// embedQuery embeds texts, a request and its clauses, in one call.
func (r *Ranker) embedQuery(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	vecs, err := r.o.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, &Error{Reason: ReasonCount, Err: fmt.Errorf("embedding a query: %d vectors for %d texts", len(vecs), len(texts))}
	}
	return vecs, nil
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
	hasV  bool    // the tool has a vector
	sem   float64 // normalised semantic score
	srank int     // 1-based semantic rank among the candidates
	score float64
}

// fuse combines lex (the lexical ranking, best first) with the cosine
// rankings of qs (the request, then its clauses) and returns the best
// limit. terms is the request's number of terms (0 unknown).
func (r *Ranker) fuse(qs [][]float32, terms int, lex []Hit, limit int) ([]Hit, error) {
	want := make(map[string]bool, len(lex))
	for _, h := range lex {
		want[h.ID] = true
	}
	depth := max(limit, r.o.Depth)
	all, ok := r.store.scoreAll(qs, depth, want)
	if !ok {
		return nil, &Error{Reason: ReasonDimension, Err: errDimension(len(qs[0]), all[0].dim)}
	}
	sc := all[0]
	tn := r.tune()
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
	for k, s := range all {
		for _, id := range s.ranked {
			if _, ok := byID[id]; ok {
				continue
			}
			cos := float64(sc.cos[id])
			if len(lex) == 0 && (k > 0 || sc.std == 0 || (cos-sc.mean)/sc.std < minZ) {
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
	}
	// Each query's cosine normalised between its last candidate (0) and
	// its best (1).
	norm := func(s scores, id string) float64 {
		if len(s.ranked) == 0 {
			return 0
		}
		top, floor := float64(s.cos[s.ranked[0]]), float64(s.cos[s.ranked[len(s.ranked)-1]])
		c := float64(s.cos[id])
		switch {
		case top > floor:
			return math.Max(0, math.Min(1, (c-floor)/(top-floor)))
		case c >= top:
			return 1
		}
		return 0
	}
	// A split request's tool is as good semantically as the best of the
	// request's and clause's scores, a clause's counting tn.clause of
	// its own: one vector stands for the whole request, so a step that
	// says little of the request's topic would find no tool through it,
	// where the lexical ranking scores each clause (and keeps its
	// leader).
	for _, c := range cands {
		c.sem = c.lex
		if !c.hasV {
			continue
		}
		c.sem = norm(sc, c.hit.ID)
		if tn.clause > 0 {
			for _, s := range all[1:] {
				c.sem = max(c.sem, tn.clause*norm(s, c.hit.ID))
			}
		}
	}
	// Semantic ranks among the candidates; a tool without a vector takes
	// its lexical place, so it ranks as lexically.
	bySem := slices.Clone(cands)
	slices.SortStableFunc(bySem, func(a, b *fused) int { return cmpDesc(a.sem, b.sem) })
	for i, c := range bySem {
		c.srank = i + 1
	}
	// The weight grows with the request's terms, up to Options.Weight
	// from tn.termsFull terms: a short, keyword-like request ("review pull
	// request") names the words of its tool, which the lexical ranking
	// matches best, and its near-ties are where the embedding flips the
	// right tool off first place; a long plain-language request is where
	// the embedding finds what the words miss. Scaling the weight by how
	// decisive the lexical leader is instead cost MetaTool 1 to 4 points.
	w := r.o.Weight
	if tn.termsFull > 0 && terms > 0 {
		w *= min(1, float64(terms)/float64(tn.termsFull))
	}
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
			c.score = (1-w)*c.lex + w*c.sem
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
