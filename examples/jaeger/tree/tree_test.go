package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/tree.golden")

// fakeJaeger serves testdata/traces.json, a real /api/traces answer of
// Jaeger v1.76.0 for spans toolbridge's trace package exported over OTLP,
// and records the query it was asked.
func fakeJaeger(t *testing.T) (*httptest.Server, *http.Request) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "traces.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r
		if r.URL.Path != "/api/traces" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestRenderGolden(t *testing.T) {
	srv, req := fakeJaeger(t)
	traces, err := fetch(context.Background(), query{
		base: srv.URL, service: "tb-grpc", limit: 5, lookback: time.Hour,
		tags: map[string]string{"gen_ai.tool.name": "create_note"},
	})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	q := req.URL.Query()
	if q.Get("service") != "tb-grpc" || q.Get("limit") != "5" || q.Get("tags") != `{"gen_ai.tool.name":"create_note"}` {
		t.Errorf("query = %s", req.URL.RawQuery)
	}
	var out bytes.Buffer
	if err := render(&out, traces); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tree.golden")
	if *update {
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("render differs from %s:\n%s", golden, out.String())
	}
	// The tree must show the real tool under tool_call, client under tool.
	if !strings.Contains(out.String(), "\n  SERVER   tools/call tool_call") ||
		!strings.Contains(out.String(), "\n    INTERNAL tools/call create_note") ||
		!strings.Contains(out.String(), "\n      CLIENT   tools/call create_note") {
		t.Errorf("tree shape wrong:\n%s", out.String())
	}
}

func TestFetchErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("service") {
		case "bad-json":
			w.Write([]byte("{"))
		case "api-error":
			json.NewEncoder(w).Encode(map[string]any{"data": nil, "errors": []map[string]any{{"msg": "service not found"}}})
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	for service, want := range map[string]string{
		"bad-json":  "decoding",
		"api-error": "service not found",
		"other":     "500",
	} {
		_, err := fetch(context.Background(), query{base: srv.URL, service: service, limit: 1, lookback: time.Minute})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", service, err, want)
		}
	}
	_, err := fetch(context.Background(), query{base: "http://127.0.0.1:1", service: "x", limit: 1, lookback: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "run.sh") {
		t.Errorf("unreachable Jaeger: err = %v, want a hint to run.sh", err)
	}
}

func TestRunFlags(t *testing.T) {
	if err := run(context.Background(), []string{"-tags", "novalue"}); err == nil || !strings.Contains(err.Error(), "k=v") {
		t.Errorf("bad -tags: err = %v", err)
	}
}
