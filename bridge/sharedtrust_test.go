package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/config"
)

// sharedConfig is trustConfig with the pins in srv's Redis: each replica
// has a state directory of its own, so only Redis can carry an approval.
func sharedConfig(t *testing.T, srv *statetest.Server) *config.Config {
	cfg := trustConfig(t, config.ModeOff)
	cfg.Redis.URL = srv.URL()
	cfg.Redis.KeyPrefix = "tb:"
	cfg.Trust.NewServers = config.NewServersQuarantine
	return cfg
}

// operatorPins is "toolbridge trust approve" run against the Redis by an
// operator: a trust store on a Redis client of its own.
func operatorPins(t *testing.T, srv *statetest.Server) *trust.Store {
	t.Helper()
	st, err := state.Open(t.Context(), config.Redis{URL: srv.URL(), KeyPrefix: "tb:"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return trust.NewSharedStore(state.NewPins(st))
}

func heldIDs(g *Gateway) []string {
	var out []string
	for _, r := range g.Catalog().Removed {
		out = append(out, r.ID)
	}
	return out
}

// released waits, with no call to the tool (which would recheck the
// pins itself), until g no longer holds id, and says how long it took.
func released(t *testing.T, g *Gateway, id string) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, id+" released by the shared approval", func() bool {
		return !slices.Contains(heldIDs(g), id)
	})
	return time.Since(start)
}

// TestSharedApprovalReleasesOnEveryReplica: with redis.url, an approval
// made against the Redis (by an operator, or "trust approve" on any
// replica) releases the tool on every replica without a call or a
// reload; while Redis is down held tools stay held, nothing new is
// pinned, trusted tools go on; Redis back empty starts again from the
// trust rules (here new_servers: quarantine), approving nothing.
func TestSharedApprovalReleasesOnEveryReplica(t *testing.T) {
	statetest.ForEach(t, testSharedApprovalReleasesOnEveryReplica)
}

func testSharedApprovalReleasesOnEveryReplica(t *testing.T, srv *statetest.Server) {
	op := operatorPins(t, srv)

	// Replica 1 meets the server first: under new_servers: quarantine
	// every tool is held until a person approves.
	g1, _ := startGateway(t, sharedConfig(t, srv), map[string]*server.MCPServer{"repo": repoServer("Create an issue in a repository")})
	if n := len(heldIDs(g1)); n != 4 {
		t.Fatalf("new server under quarantine: %d tools held, want 4", n)
	}
	if err := op.Approve("repo", g1.Catalog().Definitions()["repo"], time.Now()); err != nil {
		t.Fatal(err)
	}
	took := released(t, g1, "repo::create_issue")
	t.Logf("replica 1 released the approved tools %v after the approval", took)
	eventually(t, "all four released on replica 1", func() bool { return len(heldIDs(g1)) == 0 })

	// Replica 2's server now offers a changed create_issue: held there.
	up2 := repoServer("Create an issue; this description changed")
	g2, c2 := startGateway(t, sharedConfig(t, srv), map[string]*server.MCPServer{"repo": up2})
	if held := heldIDs(g2); !slices.Equal(held, []string{"repo::create_issue"}) {
		t.Fatalf("replica 2 holds %v, want the changed repo::create_issue", held)
	}
	// trust approve on replica 1's store, with replica 2's definition.
	var changed trust.Definition
	for _, d := range g2.Catalog().Definitions()["repo"] {
		if d.Name == "create_issue" {
			changed = d
		}
	}
	if err := g1.Pins().Approve("repo", []trust.Definition{changed}, time.Now()); err != nil {
		t.Fatal(err)
	}
	took = released(t, g2, "repo::create_issue")
	t.Logf("replica 2 released the tool %v after replica 1 approved it", took)
	if res, text := callText(t, c2, "create_issue", map[string]any{"title": "x"}); res.IsError || text != "created" {
		t.Fatalf("call after the approval = isError %v %q", res.IsError, text)
	}

	// Redis down: trusted tools go on, a change is held, a new tool is
	// not pinned, and nothing can be approved.
	srv.Kill()
	if res, text := callText(t, c2, "list_issues", nil); res.IsError || text != "issues: none" {
		t.Fatalf("a trusted tool with Redis down = isError %v %q, want it to run", res.IsError, text)
	}
	up2.AddTool(mcp.Tool{Name: "list_issues", Description: "List issues, and now something else", RawInputSchema: json.RawMessage(`{"type":"object"}`)}, okText("changed"))
	up2.AddTool(mcp.Tool{Name: "close_issue", Description: "Close an issue", RawInputSchema: json.RawMessage(`{"type":"object"}`)}, okText("closed"))
	eventually(t, "the change and the new tool held with Redis down", func() bool {
		h := heldIDs(g2)
		// rebuild publishes the catalog, then registers its tools with
		// mcp-go: a call between the two does not find close_issue yet.
		return slices.Contains(h, "repo::list_issues") && slices.Contains(h, "repo::close_issue") &&
			g2.MCPServer().GetTool("close_issue") != nil
	})
	if res, text := callText(t, c2, "close_issue", nil); !res.IsError || !strings.Contains(text, "shared pins cannot be read") {
		t.Errorf("a new tool with Redis down = isError %v %q, want it held for want of the shared pins", res.IsError, text)
	}
	if res, text := callText(t, c2, "create_issue", map[string]any{"title": "y"}); res.IsError || text != "created" {
		t.Errorf("the approved tool with Redis down = isError %v %q, want it to run", res.IsError, text)
	}
	for _, d := range g2.Catalog().Definitions()["repo"] {
		if d.Name == "list_issues" {
			if err := op.Approve("repo", []trust.Definition{d}, time.Now()); !errors.Is(err, state.ErrUnavailable) {
				t.Errorf("an approval with Redis down = %v, want ErrUnavailable", err)
			}
		}
	}
	if slices.Contains(heldIDs(g2), "repo::create_issue") {
		t.Error("the approved tool was held while Redis was down")
	}

	// Redis back, empty: every replica starts again from the trust rules
	// by itself, as on a first start: new_servers: quarantine holds all.
	srv.Restart()
	for i, g := range []*Gateway{g1, g2} {
		eventually(t, "every tool held again once Redis is back empty", func() bool {
			return len(heldIDs(g)) == len(g.Catalog().Definitions()["repo"])
		})
		for _, r := range g.Catalog().Removed {
			if !strings.Contains(r.Reason, "new_servers is quarantine") {
				t.Errorf("replica %d holds %s for %q, want the new-server rule", i+1, r.ID, r.Reason)
			}
		}
	}
	servers, err := op.Servers()
	if err != nil || len(servers) != 0 {
		t.Errorf("pinned servers after an empty restart = %v, %v; want none (nothing approved by itself)", servers, err)
	}
}

// TestSharedPinsFirstStartAfterEmptyRedis: under new_servers: trust, a
// replica whose Redis comes back empty pins on first use again, as a
// first start does, and marks nothing approved.
func TestSharedPinsFirstStartAfterEmptyRedis(t *testing.T) {
	statetest.ForEach(t, testSharedPinsFirstStartAfterEmptyRedis)
}

func testSharedPinsFirstStartAfterEmptyRedis(t *testing.T, srv *statetest.Server) {
	cfg := sharedConfig(t, srv)
	cfg.Trust.NewServers = config.NewServersTrust
	g, _ := startGateway(t, cfg, map[string]*server.MCPServer{"repo": repoServer("Create an issue in a repository")})
	op := operatorPins(t, srv)
	if p, err := op.Load("repo"); err != nil || p == nil || len(p.Tools) != 4 {
		t.Fatalf("first-use pins in Redis = %+v, %v; want 4", p, err)
	}
	srv.Kill()
	srv.Restart()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if p, err := op.Load("repo"); err == nil && p != nil && len(p.Tools) == 4 {
			for name, pin := range p.Tools {
				if pin.Approved {
					t.Errorf("%s came back approved", name)
				}
			}
			if held := heldIDs(g); len(held) != 0 {
				t.Errorf("held after pinning again: %v", held)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the replica did not pin its tools again after Redis came back empty")
}

// TestTokenKeyAtStart: with redis.url, a server with an auth block needs
// the token key: missing or malformed, New fails naming the variable and
// the server, never showing the value; with no such server a missing key
// is fine (remote servers then go without OAuth), a malformed one is not.
func TestTokenKeyAtStart(t *testing.T) { statetest.ForEach(t, testTokenKeyAtStart) }

func testTokenKeyAtStart(t *testing.T, srv *statetest.Server) {
	short := "c2l4dGVlbi1ieXRlLWtleQ=="
	good := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	withAuth := func() *config.Config {
		cfg := sharedConfig(t, srv)
		cfg.Servers = map[string]config.Server{"remote": {URL: "http://127.0.0.1:1/mcp", Auth: config.Auth{ClientID: "cid"}}}
		return cfg
	}
	tests := []struct {
		name    string
		cfg     *config.Config
		environ []string
		want    string // "" for no error
	}{
		{"auth server, no key", withAuth(), nil, "$TOOLBRIDGE_TOKEN_KEY, which is not set"},
		{"auth server, short key", withAuth(), []string{"TOOLBRIDGE_TOKEN_KEY=" + short}, "key 1 is 16 bytes, want 32"},
		{"auth server, good key", withAuth(), []string{"TOOLBRIDGE_TOKEN_KEY=" + good}, ""},
		{"no auth server, no key", sharedConfig(t, srv), nil, ""},
		{"no auth server, short key", sharedConfig(t, srv), []string{"TOOLBRIDGE_TOKEN_KEY=" + short}, "key 1 is 16 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.cfg, Options{Environ: tt.environ})
			if err == nil {
				_ = g.Close()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New = %v, want an error with %q", err, tt.want)
			case err != nil && len(tt.cfg.Servers) > 0 && !strings.Contains(err.Error(), "remote"):
				t.Errorf("the error does not name the server that needs the key: %v", err)
			case err != nil && (strings.Contains(err.Error(), short) || strings.Contains(err.Error(), good)):
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

// The token key is the gateway's: stdio servers inherit the rest of its
// environment without it.
func TestWithoutVar(t *testing.T) {
	env := []string{"PATH=/bin", "TOOLBRIDGE_TOKEN_KEY=secret", "HOME=/h", "TOOLBRIDGE_TOKEN_KEY=again"}
	got := withoutVar(env, "TOOLBRIDGE_TOKEN_KEY")
	if !slices.Equal(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("withoutVar = %v", got)
	}
	if env[1] != "TOOLBRIDGE_TOKEN_KEY=secret" {
		t.Error("withoutVar changed its argument")
	}
}
