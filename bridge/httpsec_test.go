package bridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

func TestGuardHTTP(t *testing.T) {
	cfg := config.Default().Serve
	cfg.AuthToken = "s3cret-token"
	cfg.AllowedOrigins = []string{"https://app.example.com"}
	cfg.MaxBodyBytes = 64
	reached := func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}
	srv := httptest.NewServer(guardHTTP(cfg, http.HandlerFunc(reached)))
	defer srv.Close()

	tests := []struct {
		name   string
		path   string
		auth   string
		origin string
		body   string
		want   int
	}{
		{"healthz needs no token", "/healthz", "", "", "", 200},
		{"no token", "/mcp", "", "", "{}", 401},
		{"wrong token", "/mcp", "Bearer nope", "", "{}", 401},
		{"token as a prefix only", "/mcp", "Bearer s3cret", "", "{}", 401},
		{"right token", "/mcp", "Bearer s3cret-token", "", "{}", 200},
		{"scheme in lower case", "/mcp", "bearer s3cret-token", "", "{}", 200},
		{"readyz without credentials reaches its status-only answer", "/readyz", "", "", "", 200},
		{"readyz with a wrong token", "/readyz", "Bearer nope", "", "", 401},
		{"foreign origin", "/mcp", "Bearer s3cret-token", "https://evil.example", "{}", 403},
		{"rebinding: a name that resolves to loopback is still foreign", "/mcp", "Bearer s3cret-token", "http://attacker.localtest.me:8080", "{}", 403},
		{"loopback origin", "/mcp", "Bearer s3cret-token", "http://localhost:3000", "{}", 200},
		{"loopback ip origin", "/mcp", "Bearer s3cret-token", "http://127.0.0.1:5173", "{}", 200},
		{"configured origin", "/mcp", "Bearer s3cret-token", "https://app.example.com", "{}", 200},
		{"body over the limit", "/mcp", "Bearer s3cret-token", "", strings.Repeat("x", 100), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestInFlightLimitPerSession(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	up := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("block"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("done"), nil
	})
	cfg := testConfig()
	cfg.Timeouts.Call = 10 * time.Second
	cfg.Serve.MaxInFlight = 2
	_, c := startGateway(t, cfg, map[string]*server.MCPServer{"up": up})

	var wg sync.WaitGroup
	results := make(chan *mcp.CallToolResult, 2)
	for range 2 {
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "block"
			res, err := c.CallTool(context.Background(), req)
			if err == nil {
				results <- res
			}
		})
	}
	<-started
	<-started
	res, text := callText(t, c, "block", nil)
	if !res.IsError || !strings.Contains(text, "max_in_flight") {
		t.Fatalf("third concurrent call: isError=%v %q", res.IsError, text)
	}
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if r.IsError {
			t.Fatalf("a call within the limit failed: %+v", r)
		}
	}
}
