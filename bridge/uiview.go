package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolbridge/toolbridge/bridge/access"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/bridge/ui"
	"github.com/toolbridge/toolbridge/config"
)

// This file is the gateway's side of the status page (package ui): what
// the page shows, built from the catalog and the pool, and the recording
// of calls and searches into the page's rings.

// Activity returns the recent calls and searches the status page shows.
func (g *Gateway) Activity() *ui.Activity { return g.activity }

// uiHandler is the status page, for mounting at ui.Prefix.
func (g *Gateway) uiHandler() http.Handler {
	return ui.Handler(ui.Options{Snapshot: g.uiSnapshot, Activity: g.activity})
}

// ServeUI serves the status page alone on ln (ui.listen, for stdio mode)
// until ctx ends. The listener is on loopback (the config allows nothing
// else), it checks Host and Origin against DNS rebinding and cross-site
// reads, and it carries no bearer token: it serves this machine only.
func (g *Gateway) ServeUI(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	page := g.uiHandler()
	mux.Handle(ui.Prefix, page)
	mux.Handle("/ui", page)
	mux.Handle("GET /{$}", http.RedirectHandler(ui.Prefix, http.StatusFound))
	serve := g.settings().cfg.Serve
	srv := &http.Server{
		Handler:           loopbackHost(guardHTTP(config.Serve{AllowedOrigins: serve.AllowedOrigins}, mux)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	srv.RegisterOnShutdown(g.activity.EndStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving the status page: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), flushGrace)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the status page: %w", err)
	}
	return nil
}

// loopbackHost refuses requests whose Host is not a loopback name or
// address: a web page on another site could otherwise point its own name
// at 127.0.0.1 (DNS rebinding) and read the status page as same-origin.
func loopbackHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "toolbridge: the status page answers only to a loopback host name (such as 127.0.0.1 or localhost)", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recordCall adds a finished call to the status page's ring. It allocates
// nothing (the strings are the catalog's and the result's own) unless the
// call failed with a Go error, whose text is made then.
func (g *Gateway) recordCall(ctx context.Context, c call, start time.Time, res *mcp.CallToolResult, err error) {
	rec := ui.Call{
		At: start, Tool: c.tool.ID, Server: c.tool.Server, Via: c.via,
		Latency: time.Since(start),
		TraceID: oteltrace.SpanContextFromContext(ctx).TraceID(),
		Caller:  access.FromContext(ctx).String(),
	}
	switch {
	case err != nil:
		rec.Error = err.Error()
	case res != nil && res.IsError:
		rec.Error = "isError"
		for _, content := range res.Content {
			if text, ok := content.(mcp.TextContent); ok && text.Text != "" {
				rec.Error = text.Text
				break
			}
		}
	}
	g.activity.RecordCall(rec)
}

// recordSearch adds a tool_search to the status page's ring. It
// allocates nothing.
func (g *Gateway) recordSearch(ctx context.Context, query string, res SearchResult) {
	rec := ui.Search{
		At: time.Now(), Query: query, Total: len(res.Tools), Partial: res.Partial,
		TraceID: oteltrace.SpanContextFromContext(ctx).TraceID(),
		Caller:  access.FromContext(ctx).String(),
	}
	for i := 0; i < len(res.Tools) && i < ui.MaxHits; i++ {
		rec.Hits[i] = res.Tools[i].ID
	}
	g.activity.RecordSearch(rec)
}

// uiSnapshot is what the status page shows of the gateway now.
func (g *Gateway) uiSnapshot(ctx context.Context) ui.Snapshot {
	live := g.settings()
	cat := g.catalogFor(ctx)
	snap := ui.Snapshot{
		Version: Version, Transport: g.downstream(), At: time.Now(),
		TraceUI: live.cfg.Telemetry.UIURL,
		Servers: []ui.Server{}, Tools: []ui.Tool{}, Held: []ui.Held{},
	}
	tokens := map[string]int{}
	held := map[string]int{}
	for _, t := range cat.Tools {
		tokens[t.Server] += t.Tokens
		status := "listed"
		if t.Deferred {
			status = "deferred"
		}
		snap.Tools = append(snap.Tools, uiTool(t, status))
	}
	for _, rm := range cat.Removed {
		snap.Tools = append(snap.Tools, uiTool(rm.Tool, rm.Kind))
		if rm.Kind == RemovedQuarantined {
			held[rm.Server]++
			snap.Held = append(snap.Held, ui.Held{
				ID: rm.ID, Reason: rm.Reason, Diff: heldDiff(live.pins, rm.Tool),
				Approve: "toolbridge trust approve " + rm.ID,
			})
		}
	}
	for _, s := range g.pool.Statuses() {
		srv := ui.Server{
			Name: s.Name, Transport: s.Transport, Tools: s.Tools, Tokens: tokens[s.Name],
			Held: held[s.Name], LastError: s.Error, Reconnects: s.Restarts,
		}
		switch {
		case s.NeedsLogin:
			srv.State, srv.Why = ui.StateNeedsLogin, "needs `toolbridge auth login "+s.Name+"`"
			if s.Error != "" {
				srv.Why = s.Error + "; run `toolbridge auth login " + s.Name + "`"
			}
		case s.Connected:
			srv.State = ui.StateConnected
		case s.Connecting:
			srv.State = ui.StateConnecting
		default:
			srv.State, srv.Why = ui.StateDown, s.Error
			if !s.NextAttempt.IsZero() {
				srv.Why += fmt.Sprintf(" (next attempt in %s)", time.Until(s.NextAttempt).Round(time.Second))
			}
		}
		if srv.Why == srv.LastError {
			srv.LastError = ""
		}
		snap.Servers = append(snap.Servers, srv)
	}
	d := cat.Decision
	client := 0
	for _, t := range cat.Visible {
		client += t.Tokens
	}
	if d.Bridge {
		client += cat.MetaTokens
	}
	threshold := int(d.ThresholdPct / 100 * float64(d.ContextWindow))
	if d.MinTokens > 0 && d.MinTokens < threshold {
		threshold = d.MinTokens
	}
	snap.Decision = ui.Decision{
		Bridge: d.Bridge, Mode: string(d.Mode), Reason: d.Reason,
		FullTokens: d.TotalTokens, ClientTokens: client, ThresholdTokens: threshold,
		ThresholdPct: d.ThresholdPct, ContextWindow: d.ContextWindow,
		DeferrableTools: d.DeferrableTools, VisibleTools: len(cat.Visible), Tokenizer: d.Tokenizer,
	}
	return snap
}

// uiTool is t as the page's tools table shows it.
func uiTool(t *Tool, status string) ui.Tool {
	schema := t.Tool.RawInputSchema
	if schema == nil {
		schema, _ = json.Marshal(t.Tool.InputSchema) // plain fields always encode
	}
	out := ui.Tool{
		ID: t.ID, Server: t.Server, Name: t.Name, Description: t.Tool.Description,
		Class: string(t.Verdict.Class), Rule: t.Verdict.Reason, Status: status, Tokens: t.Tokens,
		Annotations: hintsOf(*t.Tool).Hints(), Trust: string(t.Trust.State), Warning: t.Trust.Warning,
		Schema: schema,
	}
	for _, f := range t.Trust.Flags {
		out.Flags = append(out.Flags, f.String())
	}
	return out
}

// heldDiff is what `toolbridge trust diff` shows for a held tool: its
// pinned definition against the one offered now; empty when nothing with
// a definition is pinned (a new tool, or pins kept in memory only).
func heldDiff(pins *trust.Store, t *Tool) string {
	if pins == nil {
		return ""
	}
	sp, err := pins.Load(t.Server)
	if err != nil || sp == nil {
		return ""
	}
	pin, ok := sp.Tools[t.Name]
	if !ok || pin.Definition.InputSchema == nil && pin.Definition.Description == "" {
		return ""
	}
	return trust.Diff(pin.Definition, definitionOf(*t.Tool))
}
