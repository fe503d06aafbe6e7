package ui

import (
	"context"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is where the page is mounted.
const Prefix = "/ui/"

// MaxViewers bounds the event streams open at once: each holds a
// goroutine and a connection.
const MaxViewers = 32

// heartbeat is how often an idle event stream sends a comment, so that
// proxies keep it open and a dead connection is noticed.
const heartbeat = 15 * time.Second

// ContentSecurityPolicy is sent with every answer: only the page's own
// files may load, no inline script or style, no plugins, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configure the page's handler.
type Options struct {
	// Snapshot returns what the page shows besides the activity.
	Snapshot func(context.Context) Snapshot
	// Activity holds the recent calls and searches.
	Activity *Activity
}

// Handler serves the page under Prefix: the page and its files, its state
// as JSON at api/state, and the activity as server-sent events at
// api/events. It answers only GET and HEAD. Authentication and the Origin
// check are the caller's: mount it behind the same middleware as /mcp.
func Handler(opts Options) http.Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(static))
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix, files)
	mux.HandleFunc("GET "+Prefix+"api/state", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(opts.Snapshot(r.Context()))
	})
	mux.HandleFunc("GET "+Prefix+"api/events", func(w http.ResponseWriter, r *http.Request) {
		stream(w, r, opts.Activity)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "toolbridge: the status page is read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == "/ui" {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// stream sends the activity as server-sent events: first what the rings
// hold (newer than Last-Event-ID, when the browser reconnects), then each
// entry as it is recorded.
func stream(w http.ResponseWriter, r *http.Request, a *Activity) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "toolbridge: streaming is not supported here", http.StatusInternalServerError)
		return
	}
	v, ok := a.subscribe(MaxViewers)
	if !ok {
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("toolbridge: too many status page viewers (%d)", MaxViewers), http.StatusServiceUnavailable)
		return
	}
	defer a.unsubscribe(v)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	last, _ := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64)
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	// retry: how long the browser waits before it reconnects.
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return
	}
	for {
		calls, searches, newest := a.since(last)
		if newest < last {
			// The gateway restarted its count (a new process): start over.
			calls, searches, newest = a.since(0)
		}
		last = newest
		if err := writeEvents(w, calls, searches); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-v.end:
			return
		case <-v.wake:
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		}
	}
}

// callEvent and searchEvent are the events' JSON.
type callEvent struct {
	Seq       uint64    `json:"seq"`
	At        time.Time `json:"at"`
	Tool      string    `json:"tool"`
	Server    string    `json:"server"`
	Via       string    `json:"via,omitempty"`
	LatencyMS float64   `json:"latency_ms"`
	Error     string    `json:"error,omitempty"`
	Caller    string    `json:"caller,omitempty"`
	TraceID   string    `json:"trace_id,omitempty"`
}

type searchEvent struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Query   string    `json:"query"`
	Hits    []string  `json:"hits"`
	Total   int       `json:"total"`
	Partial bool      `json:"partial,omitempty"`
	Caller  string    `json:"caller,omitempty"`
	TraceID string    `json:"trace_id,omitempty"`
}

func traceHex(id [16]byte) string {
	if id == [16]byte{} {
		return ""
	}
	return hex.EncodeToString(id[:])
}

// writeEvents writes calls and searches in the order they happened.
func writeEvents(w http.ResponseWriter, calls []Call, searches []Search) error {
	for len(calls) > 0 || len(searches) > 0 {
		var kind string
		var seq uint64
		var v any
		if len(searches) == 0 || (len(calls) > 0 && calls[0].Seq < searches[0].Seq) {
			c := calls[0]
			calls = calls[1:]
			kind, seq = "call", c.Seq
			v = callEvent{Seq: c.Seq, At: c.At, Tool: c.Tool, Server: c.Server, Via: c.Via,
				LatencyMS: float64(c.Latency.Microseconds()) / 1000, Error: c.Error, Caller: c.Caller, TraceID: traceHex(c.TraceID)}
		} else {
			s := searches[0]
			searches = searches[1:]
			hits := make([]string, 0, MaxHits)
			for _, h := range s.Hits {
				if h != "" {
					hits = append(hits, h)
				}
			}
			kind, seq = "search", s.Seq
			v = searchEvent{Seq: s.Seq, At: s.At, Query: s.Query, Hits: hits, Total: s.Total, Partial: s.Partial, Caller: s.Caller, TraceID: traceHex(s.TraceID)}
		}
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding a %s event: %w", kind, err)
		}
		// JSON from encoding/json holds no raw newline, so one data line
		// carries it whole.
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", seq, kind, data); err != nil {
			return fmt.Errorf("writing a %s event: %w", kind, err)
		}
	}
	return nil
}
