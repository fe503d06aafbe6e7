package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRingKeepsTheNewest(t *testing.T) {
	a := NewActivity()
	for i := range CallCapacity + 10 {
		a.RecordCall(Call{Tool: "s::t", Latency: time.Duration(i)})
	}
	calls, searches, newest := a.since(0)
	if len(calls) != CallCapacity || len(searches) != 0 {
		t.Fatalf("kept %d calls and %d searches, want %d and 0", len(calls), len(searches), CallCapacity)
	}
	if calls[0].Seq != 11 || calls[len(calls)-1].Seq != newest || newest != CallCapacity+10 {
		t.Fatalf("kept seqs %d..%d (newest %d), want 11..%d", calls[0].Seq, calls[len(calls)-1].Seq, newest, CallCapacity+10)
	}
	later, _, _ := a.since(newest - 3)
	if len(later) != 3 {
		t.Fatalf("since(newest-3) gave %d calls, want 3", len(later))
	}
}

func TestRecordClipsLongTexts(t *testing.T) {
	a := NewActivity()
	a.RecordCall(Call{Error: strings.Repeat("é", 1000)})
	a.RecordSearch(Search{Query: strings.Repeat("ü", 1000)})
	calls, searches, _ := a.since(0)
	if n := len(calls[0].Error); n > maxErrorBytes || n < maxErrorBytes-1 || !utf8Valid(calls[0].Error) {
		t.Errorf("error kept %d bytes (valid UTF-8: %v), want about %d", n, utf8Valid(calls[0].Error), maxErrorBytes)
	}
	if n := len(searches[0].Query); n > maxQueryBytes || !utf8Valid(searches[0].Query) {
		t.Errorf("query kept %d bytes, want at most %d", n, maxQueryBytes)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestRecordAllocatesNothing is the cost the call path pays: nothing
// allocated, with or without a viewer connected (a viewer's encoding
// happens on its own goroutine).
func TestRecordAllocatesNothing(t *testing.T) {
	a := NewActivity()
	c := Call{At: time.Now(), Tool: "github::create_issue", Server: "github", Via: "tool_call", Latency: time.Millisecond, Error: "boom"}
	s := Search{At: time.Now(), Query: "create issue", Hits: [MaxHits]string{"github::create_issue"}, Total: 1}
	if n := testing.AllocsPerRun(1000, func() { a.RecordCall(c); a.RecordSearch(s) }); n != 0 {
		t.Errorf("no viewer: %v allocations per call and search, want 0", n)
	}
	v, ok := a.subscribe(1)
	if !ok {
		t.Fatal("subscribe refused the first viewer")
	}
	defer a.unsubscribe(v)
	if n := testing.AllocsPerRun(1000, func() { a.RecordCall(c); a.RecordSearch(s) }); n != 0 {
		t.Errorf("one viewer: %v allocations per call and search, want 0", n)
	}
}

func newTestHandler(a *Activity, snap Snapshot) http.Handler {
	return Handler(Options{Snapshot: func(context.Context) Snapshot { return snap }, Activity: a})
}

func TestHandlerServesThePageWithAStrictPolicy(t *testing.T) {
	h := newTestHandler(NewActivity(), Snapshot{Version: "1"})
	for _, tc := range []struct {
		method, path string
		code         int
		ctype        string
	}{
		{"GET", "/ui/", 200, "text/html"},
		{"GET", "/ui/app.js", 200, "javascript"},
		{"GET", "/ui/style.css", 200, "text/css"},
		{"GET", "/ui/api/state", 200, "application/json"},
		{"HEAD", "/ui/", 200, "text/html"},
		{"GET", "/ui", 301, ""},
		{"GET", "/ui/nope.js", 404, ""},
		{"POST", "/ui/api/state", 405, ""},
		{"DELETE", "/ui/", 405, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, rec.Code, tc.code)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, tc.ctype) {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, ct, tc.ctype)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s %s: CSP %q, want default-src 'self' and nothing unsafe", tc.method, tc.path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s: missing nosniff or frame denial: %v", tc.method, tc.path, rec.Header())
		}
	}
}

// TestAssetsUseNoHTMLSinks guards the rule that makes hostile upstream
// text harmless: the page never parses data as HTML, and holds no inline
// script or style the CSP would have to allow.
func TestAssetsUseNoHTMLSinks(t *testing.T) {
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('on", "srcdoc"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
	html, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.ToLower(string(html))
	if strings.Count(page, "<script") != strings.Count(page, "<script src=") {
		t.Error("index.html has an inline script")
	}
	for _, inline := range []string{"<style", " style=", " onclick=", " onload=", " onerror="} {
		if strings.Contains(page, inline) {
			t.Errorf("index.html has inline %q", inline)
		}
	}
}

func TestStateIsTheSnapshot(t *testing.T) {
	hostile := `<img src=x onerror=alert(1)>`
	h := newTestHandler(NewActivity(), Snapshot{Version: "9", Servers: []Server{{Name: "evil", State: StateConnected, Tools: 1}},
		Tools: []Tool{{ID: "evil::x", Description: hostile}}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/api/state", nil))
	var got Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("decoding state: %v\n%s", err, rec.Body)
	}
	if got.Version != "9" || len(got.Servers) != 1 || got.Tools[0].Description != hostile {
		t.Fatalf("state = %+v", got)
	}
	if strings.Contains(rec.Body.String(), "<img") {
		t.Error("state JSON carries a raw '<': encoding/json should escape it")
	}
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Error("state is cacheable")
	}
}

// readEvent reads one server-sent event (its event and data lines).
func readEvent(t *testing.T, r *bufio.Reader) (kind, data string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && kind != "":
			return kind, data
		}
	}
}

func TestEventsStreamBacklogThenLive(t *testing.T) {
	a := NewActivity()
	a.RecordCall(Call{Tool: "fs::read", Server: "fs", Latency: 1500 * time.Microsecond, TraceID: [16]byte{1}})
	srv := httptest.NewServer(newTestHandler(a, Snapshot{}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	kind, data := readEvent(t, r)
	var c callEvent
	if err := json.Unmarshal([]byte(data), &c); kind != "call" || err != nil || c.Tool != "fs::read" || c.LatencyMS != 1.5 ||
		c.TraceID != "01000000000000000000000000000000" {
		t.Fatalf("backlog event %s %s (%v)", kind, data, err)
	}
	a.RecordSearch(Search{Query: "no such thing"})
	kind, data = readEvent(t, r)
	var s searchEvent
	if err := json.Unmarshal([]byte(data), &s); kind != "search" || err != nil || s.Query != "no such thing" || s.Total != 0 || s.Hits == nil {
		t.Fatalf("live event %s %s (%v)", kind, data, err)
	}
	// EndStreams (server shutdown) ends the stream.
	a.EndStreams()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	if a.Watched() {
		t.Error("still watched after EndStreams")
	}
}

func TestEventsRefuseTooManyViewers(t *testing.T) {
	a := NewActivity()
	for range MaxViewers {
		if _, ok := a.subscribe(MaxViewers); !ok {
			t.Fatal("refused a viewer below the limit")
		}
	}
	rec := httptest.NewRecorder()
	newTestHandler(a, Snapshot{}).ServeHTTP(rec, httptest.NewRequest("GET", "/ui/api/events", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("viewer %d: status %d, want 503 with Retry-After", MaxViewers+1, rec.Code)
	}
}

// BenchmarkRecordCall measures what a tool call pays for the status page,
// with no viewer and with one viewer connected and draining the events on
// its own goroutine (the viewer's encoding is not on the call path).
func BenchmarkRecordCall(b *testing.B) {
	c := Call{At: time.Now(), Tool: "github::create_issue", Server: "github", Via: "tool_call", Latency: time.Millisecond}
	b.Run("no-viewer", func(b *testing.B) {
		a := NewActivity()
		b.ReportAllocs()
		for b.Loop() {
			a.RecordCall(c)
		}
	})
	b.Run("viewer", func(b *testing.B) {
		a := NewActivity()
		srv := httptest.NewServer(newTestHandler(a, Snapshot{}))
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/ui/api/events")
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
		for !a.Watched() {
			time.Sleep(time.Millisecond)
		}
		b.ReportAllocs()
		for b.Loop() {
			a.RecordCall(c)
		}
		b.StopTimer()
		a.EndStreams()
		resp.Body.Close()
	})
}
