package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// embedResponse is the OpenAI embeddings answer, with the embedding left raw
// so that both encodings can be read.
type embedResponse struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// postEmbeddings sends body to the server and returns the status and the
// decoded answer.
func postEmbeddings(t *testing.T, e *Embeddings, auth string, body any) (int, embedResponse) {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/embeddings", strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s/embeddings: %v", e.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	var out embedResponse
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %.300s", resp.StatusCode, err, data)
	}
	return resp.StatusCode, out
}

// cosine is the cosine similarity of two vectors of equal length.
func cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

// TestEmbeddingsServer runs the real model: every vector has 512 finite
// numbers, sentences that mean the same are closer than unrelated ones, the
// base64 encoding carries the same vector, bad requests get clear 4xx
// answers, and Stop leaves nothing running.
func TestEmbeddingsServer(t *testing.T) {
	const key = "sk-testenv-4711"
	e := EmbeddingsServer(t, EmbeddingsOptions{APIKey: key})
	if !strings.HasPrefix(e.URL, "http://127.0.0.1:") || !strings.HasSuffix(e.URL, "/v1") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT/v1", e.URL)
	}

	sentences := []string{"search academic papers", "find scholarly articles", "weather forecast"}
	status, resp := postEmbeddings(t, e, key, map[string]any{"model": e.Model, "input": sentences})
	if status != http.StatusOK {
		t.Fatalf("status %d, error %+v", status, resp.Error)
	}
	if resp.Object != "list" || resp.Model != EmbeddingsModel || len(resp.Data) != len(sentences) {
		t.Fatalf("answer object=%q model=%q with %d vectors, want a list from %s with %d", resp.Object, resp.Model, len(resp.Data), EmbeddingsModel, len(sentences))
	}
	vecs := make([][]float64, len(sentences))
	for i, d := range resp.Data {
		if d.Index != i {
			t.Fatalf("data[%d].index = %d", i, d.Index)
		}
		if err := json.Unmarshal(d.Embedding, &vecs[i]); err != nil {
			t.Fatalf("data[%d].embedding is not a number list: %v", i, err)
		}
		if len(vecs[i]) != EmbeddingsDimensions {
			t.Fatalf("data[%d] has %d numbers, want %d", i, len(vecs[i]), EmbeddingsDimensions)
		}
		for _, x := range vecs[i] {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("data[%d] holds %v", i, x)
			}
		}
	}
	waitCtx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got := e.WaitRequests(waitCtx, http.StatusOK, 1); got != 1 {
		t.Errorf("WaitRequests(200, 1) = %d after one request; stderr:\n%s", got, e.Stderr())
	}
	papers, articles, weather := vecs[0], vecs[1], vecs[2]
	same, off1, off2 := cosine(papers, articles), cosine(papers, weather), cosine(articles, weather)
	t.Logf("cos(papers, articles)=%.3f cos(papers, weather)=%.3f cos(articles, weather)=%.3f", same, off1, off2)
	if same <= off1 || same <= off2 {
		t.Errorf("%q and %q (cos %.3f) are not closer than either is to %q (%.3f, %.3f)", sentences[0], sentences[1], same, sentences[2], off1, off2)
	}

	t.Run("base64 carries the same vector", func(t *testing.T) {
		status, resp := postEmbeddings(t, e, key, map[string]any{"model": e.Model, "input": sentences[0], "encoding_format": "base64"})
		if status != http.StatusOK || len(resp.Data) != 1 {
			t.Fatalf("status %d with %d vectors, error %+v", status, len(resp.Data), resp.Error)
		}
		var b64 string
		if err := json.Unmarshal(resp.Data[0].Embedding, &b64); err != nil {
			t.Fatalf("embedding is not a base64 string: %v", err)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(raw)/4)
		if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, got); err != nil {
			t.Fatal(err)
		}
		if len(got) != EmbeddingsDimensions {
			t.Fatalf("%d floats, want %d", len(got), EmbeddingsDimensions)
		}
		for i := range got {
			if math.Abs(float64(got[i])-papers[i]) > 1e-4 {
				t.Fatalf("float[%d] = %v, the float answer had %v", i, got[i], papers[i])
			}
		}
	})

	bad := []struct {
		name   string
		auth   string
		body   any
		status int
		want   string
	}{
		{name: "no key", body: map[string]any{"model": e.Model, "input": "x"}, status: 401, want: "API key"},
		{name: "wrong key", auth: "sk-other", body: map[string]any{"model": e.Model, "input": "x"}, status: 401, want: "API key"},
		{name: "not JSON", auth: key, body: "{", status: 400, want: "not JSON"},
		{name: "no model", auth: key, body: map[string]any{"input": "x"}, status: 400, want: "model is required"},
		{name: "unknown model", auth: key, body: map[string]any{"model": "text-embedding-3-small", "input": "x"}, status: 404, want: "not found"},
		{name: "empty input", auth: key, body: map[string]any{"model": e.Model, "input": []string{}}, status: 400, want: "non-empty array"},
		{name: "token ids", auth: key, body: map[string]any{"model": e.Model, "input": []int{1, 2}}, status: 400, want: "strings"},
		{name: "other dimensions", auth: key, body: map[string]any{"model": e.Model, "input": "x", "dimensions": 256}, status: 400, want: "dimensions must be 512"},
		{name: "too large", auth: key, body: map[string]any{"model": e.Model, "input": strings.Repeat("a", 9<<20)}, status: 413, want: "request body over"},
	}
	// answered counts the bad requests sent per status (a -run filter may
	// skip some), for the server's own count below.
	answered := map[int]int{}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			answered[tt.status]++
			status, resp := postEmbeddings(t, e, tt.auth, tt.body)
			if status != tt.status || resp.Error == nil || !strings.Contains(resp.Error.Message, tt.want) {
				t.Fatalf("status %d, error %+v; want %d with %q", status, resp.Error, tt.status, tt.want)
			}
		})
	}

	for status, n := range answered {
		if got := e.WaitRequests(waitCtx, status, n); got != n {
			t.Errorf("the server logged %d answers with %d, want %d; stderr:\n%s", got, status, n, e.Stderr())
		}
	}
	if strings.Contains(e.Stderr(), key) {
		t.Errorf("the server's stderr holds the API key:\n%s", e.Stderr())
	}

	// Frozen, the server keeps its port but answers nothing.
	if err := e.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozenCtx, cancelFrozen := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancelFrozen()
	frozen, err := http.NewRequestWithContext(frozenCtx, http.MethodPost, e.URL+"/embeddings", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(frozen); err == nil {
		resp.Body.Close()
		t.Errorf("a frozen server answered %s", resp.Status)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request to a frozen server failed with %v, want it to hang until its deadline", err)
	}

	pid := e.pid
	e.Stop() // ends a frozen server too
	e.Stop() // a second Stop is a no-op
	if ProcessAlive(pid) {
		t.Errorf("the embeddings server (pid %d) is still alive after Stop", pid)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.URL+"/embeddings", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a stopped server still answered %s", resp.Status)
	}
}

func TestReadListening(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "the line", in: "listening http://127.0.0.1:40123\n", want: "40123"},
		{name: "after other output", in: "tfjs: hello\nlistening http://127.0.0.1:7\n", want: "7"},
		{name: "no newline", in: "listening http://127.0.0.1:9", want: "9"},
		{name: "exited silently", in: "", want: ""},
		{name: "other host", in: "listening http://0.0.0.0:80\n", want: ""},
		{name: "no port", in: "listening http://127.0.0.1:\n", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readListening(strings.NewReader(tt.in)); got != tt.want {
				t.Errorf("readListening(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestEmbeddingsServerStartFailure: a server that dies while loading (here
// node cannot resolve the packages outside the install directory) is an
// error that carries its stderr, not a wait for the start timeout.
func TestEmbeddingsServerStartFailure(t *testing.T) {
	start := time.Now()
	e, err := startEmbeddings(&NPMEnv{Dir: t.TempDir(), tb: t}, EmbeddingsOptions{})
	if err == nil {
		e.Stop()
		t.Fatal("the server started without its packages")
	}
	if !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), "@energetic-ai/embeddings") {
		t.Fatalf("error = %v; want it to say the server exited and carry node's stderr naming the missing package", err)
	}
	if d := time.Since(start); d >= embeddingsStartTimeout {
		t.Fatalf("the failure took %s, the whole start timeout", d)
	}
}
