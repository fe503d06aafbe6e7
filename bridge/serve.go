package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

// ServeStdio serves one client over in and out (the process's stdin and
// stdout) until in closes or ctx ends. Nothing but JSON-RPC is ever written
// to out: progress and logs go to stderr.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, errLog io.Writer) error {
	g.transport.Store(config.ServeStdio)
	s := server.NewStdioServer(g.srv)
	if errLog == nil {
		errLog = io.Discard
	}
	s.SetErrorLogger(log.New(errLog, "toolbridge: ", 0))
	err := s.Listen(ctx, in, out)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// HTTPHandler returns the streamable HTTP transport at /mcp plus the health
// endpoints: GET /healthz (the process is up) and GET /readyz (which
// upstreams are connected, as JSON; 503 while none is).
func (g *Gateway) HTTPHandler() http.Handler {
	g.transport.Store(config.ServeHTTP)
	mcpHandler := server.NewStreamableHTTPServer(g.srv, server.WithEndpointPath("/mcp"))
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		statuses := g.pool.Statuses()
		ready := false
		for _, s := range statuses {
			ready = ready || s.Connected
		}
		w.Header().Set("Content-Type", "application/json")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ready": ready, "servers": statuses})
	})
	return guardHTTP(g.cfg.Serve, mux)
}

// ServeHTTP serves streamable HTTP on ln until ctx ends, then shuts down,
// giving in-flight requests up to grace to finish.
func (g *Gateway) ServeHTTP(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           g.HTTPHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", err)
	}
	return nil
}
