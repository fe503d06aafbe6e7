package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbridge/toolbridge/bridge/search/semantic"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// embeddingsFake is an OpenAI-compatible embeddings endpoint on 127.0.0.1
// with bag-of-words vectors; mode switches it to failing ("500") or
// hanging ("hang").
type embeddingsFake struct {
	srv  *httptest.Server
	mode atomic.Value
	mu   sync.Mutex
	auth []string
	n    int
}

func newEmbeddingsFake(t *testing.T) *embeddingsFake {
	f := &embeddingsFake{}
	f.mode.Store("")
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.n++
		f.mu.Unlock()
		// Read first: the server notices a client that gave up only once
		// the body is read.
		body, _ := io.ReadAll(r.Body)
		switch f.mode.Load() {
		case "500":
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return
		case "hang":
			<-r.Context().Done()
			return
		}
		var req struct{ Input []string }
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []item `json:"data"`
		}
		for i, s := range req.Input {
			v := make([]float32, 128)
			v[0] = 0.01
			for _, w := range strings.Fields(strings.ToLower(s)) {
				h := fnv.New32a()
				h.Write([]byte(strings.Trim(w, ".,:")))
				v[h.Sum32()%128]++
			}
			out.Data = append(out.Data, item{i, v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

const embeddingsKey = "sk-embed-SECRET-7777"

// startSemantic starts a traced gateway with search.embeddings on f,
// its logs going to the returned buffer.
func startSemantic(t *testing.T, f *embeddingsFake, timeout time.Duration) (*Gateway, *tracetest.InMemoryExporter, *syncLog) {
	t.Helper()
	cfg := bridgeConfig()
	cfg.Search.Embeddings = config.Embeddings{URL: f.srv.URL + "/v1", Model: "m", Timeout: timeout, APIKeyEnv: "EMB_KEY", Weight: 0.3}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	logs := &syncLog{}
	g, err := New(cfg, Options{
		Telemetry: trace.New(tp, sdkmetric.NewMeterProvider()),
		Environ:   []string{"EMB_KEY=" + embeddingsKey},
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	specs := []upstream.Spec{{Name: "issues", InProcess: issueServer()}, {Name: "files", InProcess: fileServer()}, {Name: "alpha", InProcess: echoServer("alpha")}}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	g.WaitSemantic(context.Background(), time.Minute)
	return g, exp, logs
}

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// searchIDs calls tool_search and returns its hits' ids and the span's
// semantic attributes.
func searchIDs(t *testing.T, g *Gateway, exp *tracetest.InMemoryExporter, query string) (ids []string, status, reason string) {
	t.Helper()
	exp.Reset()
	c := connectClient(t, g, mcp.ClientCapabilities{})
	res, text := callText(t, c, toolid.MetaSearch, map[string]any{"query": query, "limit": 5})
	if res.IsError {
		t.Fatalf("tool_search: %s", text)
	}
	var sr SearchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatal(err)
	}
	for _, h := range sr.Tools {
		ids = append(ids, h.ID)
	}
	for _, s := range exp.GetSpans() {
		if v := attr(s, trace.AttrSearchSemantic); v != "" {
			status, reason = v, attr(s, trace.AttrSearchSemanticReason)
		}
	}
	return ids, status, reason
}

func TestToolSearchSemanticRerank(t *testing.T) {
	f := newEmbeddingsFake(t)
	g, exp, logs := startSemantic(t, f, 5*time.Second)
	if st := g.semantic.Store().Stats(); st.Tools == 0 || st.Embedded != st.Tools {
		t.Fatalf("catalog not embedded: %+v", st)
	}
	if st := g.SemanticState(); !strings.HasSuffix(st, " tools embedded") || strings.Contains(st, " 0 of ") {
		t.Errorf("SemanticState = %q", st)
	}
	ids, status, reason := searchIDs(t, g, exp, "create an issue")
	if status != "reranked" || reason != "" || len(ids) == 0 || ids[0] != "issues::create_issue" {
		t.Fatalf("hits %v, span %q %q", ids, status, reason)
	}
	f.mu.Lock()
	for _, a := range f.auth {
		if a != "Bearer "+embeddingsKey {
			t.Errorf("Authorization %q", a)
		}
	}
	f.mu.Unlock()

	// The endpoint fails: the answer is the lexical ranking, and says so.
	lexical, _ := startGateway(t, bridgeConfig(), map[string]*server.MCPServer{"issues": issueServer(), "files": fileServer(), "alpha": echoServer("alpha")})
	want, _, _ := searchIDs(t, lexical, exp, "pull requests")
	f.mode.Store("500")
	ids, status, reason = searchIDs(t, g, exp, "pull requests")
	if status != "fallback" || reason != "http status 500" || !slices.Equal(ids, want) {
		t.Errorf("hits %v, span %q %q; want the lexical %v", ids, status, reason, want)
	}
	if st := g.SemanticState(); !strings.Contains(st, "the endpoint failed (http status 500)") {
		t.Errorf("SemanticState after a failure = %q", st)
	}
	if out := logs.String(); strings.Contains(out, embeddingsKey) || !strings.Contains(out, "http status 500") {
		t.Errorf("log shows the key or not the failure:\n%s", out)
	}
}

func TestToolSearchSemanticHangFallsBack(t *testing.T) {
	f := newEmbeddingsFake(t)
	g, exp, _ := startSemantic(t, f, 100*time.Millisecond)
	f.mode.Store("hang")
	done := make(chan []string, 1)
	go func() {
		ids, status, reason := searchIDs(t, g, exp, "create an issue")
		if status != "fallback" || reason != "timeout" {
			t.Errorf("span %q %q, want a timeout fallback", status, reason)
		}
		done <- ids
	}()
	select {
	case ids := <-done:
		if len(ids) == 0 || ids[0] != "issues::create_issue" {
			t.Errorf("lexical hits %v", ids)
		}
	case <-time.After(time.Minute): // the bound is 100ms: this is a hang
		t.Fatal("tool_search hung on the endpoint")
	}
}

func TestSemanticNeedsItsKey(t *testing.T) {
	cfg := bridgeConfig()
	cfg.Search.Embeddings = config.Embeddings{URL: "http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: "EMB_KEY_UNSET", Weight: 0.5}
	_, err := New(cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "EMB_KEY_UNSET is not set") {
		t.Fatalf("New = %v", err)
	}
}

// The config's default weight is the one the harness measured.
func TestSemanticDefaultWeightIsTheMeasuredOne(t *testing.T) {
	if config.DefaultEmbeddingsWeight != semantic.DefaultWeight || config.DefaultEmbeddingsTimeout != semantic.DefaultTimeout {
		t.Errorf("config defaults %v, %v; bridge/search/semantic's %v, %v", config.DefaultEmbeddingsWeight, config.DefaultEmbeddingsTimeout, semantic.DefaultWeight, semantic.DefaultTimeout)
	}
}
