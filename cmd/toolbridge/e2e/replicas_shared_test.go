package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
	"github.com/toolbridge/toolbridge/config"
)

// callTool calls id through tool_call and returns the result's text and
// whether it is an error result; err is a transport or protocol error.
func callTool(ctx context.Context, c *client.Client, id string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_call"
	req.Params.Arguments = map[string]any{"tool_name": id, "tool_args": args}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	return textOf(res), res.IsError, nil
}

// labelled is a client and what the test calls it in messages.
type labelled struct {
	name string
	c    *client.Client
}

// echoBurst has every client call remote::echo n times, all calls let go
// at once, and returns the failures: a call that errs, is an error
// result, or does not echo its own text.
func echoBurst(ctx context.Context, clients []labelled, n int) []string {
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	start := make(chan struct{})
	for _, l := range clients {
		for j := range n {
			wg.Go(func() {
				<-start
				text := fmt.Sprintf("%s call %d", l.name, j)
				got, isErr, err := callTool(ctx, l.c, "remote::echo", map[string]any{"text": text})
				if err == nil && (isErr || got != "echo: "+text) {
					err = fmt.Errorf("isError %v, %q", isErr, got)
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s, call %d: %v", l.name, j, err))
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	return failures
}

// redisContents reads every key of rdb, whatever its type, as text: what
// anyone who can read the Redis (or a copy of its data) reads.
func redisContents(ctx context.Context, t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, "*", 100).Result()
		if err != nil {
			t.Fatalf("scanning Redis: %v", err)
		}
		for _, k := range keys {
			typ, err := rdb.Type(ctx, k).Result()
			if err != nil {
				t.Fatalf("TYPE %s: %v", k, err)
			}
			var v any
			switch typ {
			case "string":
				v, err = rdb.Get(ctx, k).Result()
			case "hash":
				v, err = rdb.HGetAll(ctx, k).Result()
			case "set":
				v, err = rdb.SMembers(ctx, k).Result()
			case "list":
				v, err = rdb.LRange(ctx, k, 0, -1).Result()
			case "zset":
				v, err = rdb.ZRange(ctx, k, 0, -1).Result()
			case "stream":
				v, err = rdb.XRange(ctx, k, "-", "+").Result()
			case "none":
				continue // expired between SCAN and TYPE
			default:
				t.Errorf("Redis key %s has type %s, which this test cannot read: the plain-text check would miss it", k, typ)
				continue
			}
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("reading Redis key %s (%s): %v", k, typ, err)
			}
			out[k] = fmt.Sprintf("%s %v", typ, v)
		}
		if next == 0 {
			return out
		}
		cursor = next
	}
}

// filesUnder returns the contents of every regular file under dir.
func filesUnder(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return out
}

// TestReplicasShareTokensAndApprovals (#23): three `toolbridge serve`
// replicas, real processes sharing one real redis-server (each with a
// state directory of its own, so only Redis can carry what they share),
// behind HAProxy, in front of an OAuth-protected upstream served by an
// authorization server in this process that counts its refresh grants,
// and a stdio upstream whose tool definitions can drift.
//
//   - OAuth refresh, the token expiring by time: `toolbridge auth login`
//     (one process, the replicas' config) stores a short-lived access
//     token, sealed, in Redis. Once it has expired, every replica (each
//     directly, and through HAProxy) calls at once: the authorization
//     server sees exactly one refresh grant, none refused, and every call
//     succeeds.
//   - OAuth refresh, the server ending the token early: every replica gets
//     401 at about the same time, and again exactly one refresh follows.
//   - Approval: a tool whose definition changed is quarantined on every
//     replica; `toolbridge trust approve` run with replica 1's config
//     releases it, and replica 3 answers a call of it over HTTP within the
//     issue's 2 s of the command returning (the delay is logged).
//   - No token, refresh token, code or client secret appears in plain
//     text in Redis (every key, read whatever its type), in the replicas'
//     logs or state directories, or in what the commands printed; the
//     sealed record is there and opens with the key, so the check could
//     have found one.
func TestReplicasShareTokensAndApprovals(t *testing.T) {
	ctx := t.Context()
	rds := statetest.Start(t)
	as := oauthtest.NewEcho()
	t.Cleanup(as.Close)
	// The login's token lives loginTTL; what a refresh issues lives an hour,
	// so that one expiry makes one refresh however slow the machine is.
	const loginTTL = 20 * time.Second
	as.SetTokenTTL(loginTTL)

	raw := make([]byte, state.TokenKeySize)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	keyEnv := config.DefaultTokenKeyEnv + "=" + base64.StdEncoding.EncodeToString(raw)
	const prefix = "e2e:"
	catalog := copyCatalog(t)
	cfg := writeConfig(t, "toolbridge.yaml", fmt.Sprintf(
		"mode: on\nserve:\n  allowed_hosts: [%s]\nredis:\n  url: %s\n  key_prefix: %q\nmcpServers:\n"+
			"  remote:\n    url: %s/mcp\n"+
			"  github:\n    command: %s\n    args: [%s, github]\n",
		balancedHost, rds.URL(), prefix, as.URL(), driftServer.Path(t), catalog.path))

	// The test's own view of the shared state: to read what Redis holds,
	// and to open the sealed record with the replicas' key.
	st, err := state.Open(ctx, config.Redis{URL: rds.URL(), KeyPrefix: prefix, TokenKeyEnv: config.DefaultTokenKeyEnv}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tokens, err := state.NewTokens(st, []string{keyEnv}, config.DefaultTokenKeyEnv)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]bool{}
	collect := func() {
		for _, s := range as.Secrets() {
			secrets[s] = true
		}
	}
	var outputs []string // everything the commands printed

	// One login, as an operator does it, into Redis.
	outputs = append(outputs, authLoginEnv(t, []string{keyEnv, "TOOLBRIDGE_STATE_DIR=" + t.TempDir()}, cfg))
	as.SetTokenTTL(time.Hour)
	collect()
	login, err := tokens.Load(ctx, "remote")
	if err != nil {
		t.Fatalf("the login's token in Redis: %v", err)
	}
	if login.Token.ExpiresAt.IsZero() {
		t.Fatal("the login's token has no expiry: the test cannot let it expire")
	}

	// Three replicas, each with a state directory of its own.
	var (
		replicas []*httpGateway
		ports    []int
		envs     [][]string
		dirs     []string
	)
	for range 3 {
		dir := t.TempDir()
		env := []string{"TOOLBRIDGE_STATE_DIR=" + dir, keyEnv}
		port := testenv.FreePort(t)
		replicas = append(replicas, startGateway(t, testEnv(t, env), port, "serve", "-c", cfg))
		ports, envs, dirs = append(ports, port), append(envs, env), append(dirs, dir)
	}
	url := startReplicasHAProxy(t, ports)
	stderrs := func() string { return replicaStderrs(replicas) }
	for i, r := range replicas {
		waitUntil(t, fmt.Sprintf("replica %d to connect to the OAuth-protected server", i+1), func() bool {
			_, remote := remoteReadyz(t, r)
			return remote["connected"] == true
		})
	}
	clients := []labelled{{"HAProxy (2026-07-28)", statelessClient(ctx, t, url).c}}
	for i, r := range replicas {
		clients = append(clients, labelled{fmt.Sprintf("replica %d (2025-11-25)", i+1), legacyClient(t, r.url)})
	}
	direct := func(i int) *client.Client { return clients[i+1].c }
	issue := map[string]any{"owner": "o", "repo": "r", "title": "t"}
	for _, l := range clients {
		if text, isErr, err := callTool(ctx, l.c, "remote::echo", map[string]any{"text": "hi"}); err != nil || isErr || text != "echo: hi" {
			t.Fatalf("%s: remote::echo before the expiry = %q, isError %v, %v\n%s", l.name, text, isErr, err, stderrs())
		}
		if text, isErr, err := callTool(ctx, l.c, "github::create_issue", issue); err != nil || isErr {
			t.Fatalf("%s: github::create_issue before its definition changed = %q, isError %v, %v\n%s", l.name, text, isErr, err, stderrs())
		}
	}

	// The login's token expires: wait it out, then every client at once.
	early := as.Refreshes.Load()
	time.Sleep(time.Until(login.Token.ExpiresAt) + 200*time.Millisecond)
	if early != 0 {
		// The replicas use a token in its second half only if they
		// started slowly: one of them then refreshed at startup, and the
		// count below still says whether that was the only refresh.
		t.Logf("the refresh came before the burst (%d refreshes while the replicas started): the machine was slow", early)
	}
	for _, f := range echoBurst(ctx, clients, 4) {
		t.Errorf("after the token expired: %s", f)
	}
	if n := as.Refreshes.Load(); n != 1 {
		t.Errorf("after the login's token expired, the authorization server saw %d refresh grants from the three replicas, want exactly 1", n)
	}
	if n := as.FailedRefreshes.Load(); n != 0 {
		t.Errorf("%d refresh grants were refused: a spent refresh token was sent again", n)
	}
	refreshed, err := tokens.Load(ctx, "remote")
	if err != nil {
		t.Fatalf("the token in Redis after the refresh: %v", err)
	}
	if refreshed.Token.AccessToken == login.Token.AccessToken || refreshed.Token.RefreshToken == login.Token.RefreshToken {
		t.Error("Redis still holds the login's tokens after the refresh: the replicas did not share the new one")
	}
	t.Logf("token expired by time: %d refresh grant(s) for 3 replicas and %d concurrent calls", as.Refreshes.Load(), 4*len(clients))
	collect()

	// Approval: the definition changes upstream; every replica holds it.
	tool := catalog.tool(t, "github", "create_issue")
	tool["description"] = tool["description"].(string) + poison
	catalog.write(t)
	for i := range replicas {
		var held string
		waitUntil(t, fmt.Sprintf("replica %d to quarantine the changed github::create_issue", i+1), func() bool {
			text, isErr, err := callTool(ctx, direct(i), "github::create_issue", issue)
			held = text
			return err == nil && isErr
		})
		if !strings.Contains(held, "trust approve") {
			t.Errorf("replica %d refuses the changed github::create_issue with %q, want the quarantine naming toolbridge trust approve", i+1, held)
		}
	}
	started := time.Now()
	code, out, errOut := runCLI(t, envs[0], "trust", "approve", "github::create_issue", "-c", cfg)
	returned := time.Now()
	outputs = append(outputs, out, errOut)
	if code != 0 || !strings.Contains(out, "approved github::create_issue (sha256:") {
		t.Fatalf("trust approve with replica 1's config exited %d\n%s\n%s", code, out, errOut)
	}
	deadline := returned.Add(30 * time.Second) // a bound on the wait, not the bar
	var released time.Duration
	for {
		text, isErr, err := callTool(ctx, direct(2), "github::create_issue", issue)
		if err == nil && !isErr && strings.Contains(text, "called github::create_issue") {
			released = time.Since(returned)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica 3 still refuses github::create_issue 30s after trust approve returned on replica 1: %q, isError %v, %v\n%s", text, isErr, err, stderrs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("approval on replica 1: replica 3 answered a call of github::create_issue %v after trust approve returned (the command ran %v: it connects to the servers before it approves)",
		released.Round(time.Millisecond), returned.Sub(started).Round(time.Millisecond))
	if released > 2*time.Second {
		t.Errorf("replica 3 made github::create_issue callable %v after `toolbridge trust approve` on replica 1 returned; #23 asks for within 2 s", released.Round(time.Millisecond))
	}
	for i := range 2 {
		waitUntil(t, fmt.Sprintf("replica %d to release github::create_issue", i+1), func() bool {
			_, isErr, err := callTool(ctx, direct(i), "github::create_issue", issue)
			return err == nil && !isErr
		})
	}

	// The server ends the refreshed token early: every replica gets 401.
	collect()
	before := as.Refreshes.Load()
	as.ExpireAccessTokens()
	for _, f := range echoBurst(ctx, clients, 4) {
		t.Errorf("after the server ended the token: %s", f)
	}
	if n := as.Refreshes.Load() - before; n != 1 {
		t.Errorf("after the server ended the token, the authorization server saw %d refresh grants from the three replicas, want exactly 1", n)
	}
	if n := as.FailedRefreshes.Load(); n != 0 {
		t.Errorf("%d refresh grants were refused: a spent refresh token was sent again", n)
	}
	t.Logf("token ended by the server (401): %d refresh grant(s) for 3 replicas and %d concurrent calls; %d in all", as.Refreshes.Load()-before, 4*len(clients), as.Refreshes.Load())
	collect()

	// No secret in plain text anywhere the replicas write or print.
	current, err := tokens.Load(ctx, "remote")
	if err != nil {
		t.Fatalf("the token in Redis at the end: %v", err)
	}
	for _, s := range []string{login.Token.AccessToken, login.Token.RefreshToken, refreshed.Token.AccessToken, current.Token.AccessToken, current.Token.RefreshToken} {
		if !secrets[s] {
			t.Fatal("a token the replicas stored is not among those the authorization server issued: the leak check below would look for the wrong strings")
		}
	}
	contents := redisContents(ctx, t, st.Redis())
	sealed := contents[prefix+"oauth:remote"]
	if !strings.Contains(sealed, `"alg":"A256GCM"`) {
		t.Errorf("Redis key %soauth:remote = %.80q, want the sealed record", prefix, sealed)
	}
	places := map[string]string{}
	for k, v := range contents {
		places["Redis key "+k] = k + " " + v
	}
	for i, r := range replicas {
		places[fmt.Sprintf("replica %d's log", i+1)] = r.stderr.String()
		for path, b := range filesUnder(t, dirs[i]) {
			places[fmt.Sprintf("replica %d's state file %s", i+1, path)] = b
		}
	}
	for i, o := range outputs {
		places[fmt.Sprintf("command output %d", i+1)] = o
	}
	names := make([]string, 0, len(places))
	for name := range places {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for s := range secrets {
			if strings.Contains(places[name], s) {
				t.Errorf("a token, code or secret the authorization server issued (%d chars) appears in plain text in %s", len(s), name)
			}
		}
	}
	t.Logf("checked %d secrets against %d Redis keys, 3 replica logs and state directories, and %d command outputs", len(secrets), len(contents), len(outputs))
	if t.Failed() {
		t.Log(stderrs())
	}
}
