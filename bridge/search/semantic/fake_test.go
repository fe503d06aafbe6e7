package semantic

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeEndpoint is an OpenAI-compatible embeddings endpoint on 127.0.0.1
// whose vectors are deterministic bags of words: texts sharing words have
// a high cosine. It records every text it embedded, and its behaviour can
// be switched to a failure.
type fakeEndpoint struct {
	srv *httptest.Server
	dim int

	mu       sync.Mutex
	embedded []string
	requests int
	auth     []string
	// fail, if set, answers instead of the normal handler.
	fail http.HandlerFunc
	// hang, if not nil, blocks each request until it is closed.
	hang chan struct{}
}

func newFakeEndpoint(t *testing.T) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{dim: 64}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		if f.hang != nil {
			close(f.hang)
			f.hang = nil
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeEndpoint) url() string { return f.srv.URL + "/v1" }

func (f *fakeEndpoint) set(fail http.HandlerFunc) {
	f.mu.Lock()
	f.fail = fail
	f.mu.Unlock()
}

func (f *fakeEndpoint) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func (f *fakeEndpoint) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.embedded...)
}

func (f *fakeEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests++
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	fail, hang := f.fail, f.hang
	f.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return
	}
	if fail != nil {
		fail(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Input) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.embedded = append(f.embedded, req.Input...)
	f.mu.Unlock()
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var out struct {
		Data []item `json:"data"`
	}
	// Answered in reverse order: clients must place vectors by index.
	for i := len(req.Input) - 1; i >= 0; i-- {
		out.Data = append(out.Data, item{Index: i, Embedding: bagOfWords(req.Input[i], f.dim)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// bagOfWords hashes each lowercased word of s into one of dim buckets.
func bagOfWords(s string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dim)]++
	}
	v[0] += 0.01 // no zero vector
	return v
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}
