package testenv

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ZitadelVersion is the version of github.com/zitadel/oidc/v3 whose example
// OpenID provider the tests run (pinned in testdata/zitadelop/go.sum.in).
const ZitadelVersion = "v3.52.0"

// The program that runs zitadel's example OP for the tests: its own small
// module (kept out of this one's go.mod, hence the .in names), built once
// per content hash into the test cache.
var (
	//go:embed testdata/zitadelop/main.go
	zitadelMain []byte
	//go:embed testdata/zitadelop/go.mod.in
	zitadelGoMod []byte
	//go:embed testdata/zitadelop/go.sum.in
	zitadelGoSum []byte
)

// zitadelBuildTimeout bounds the first build (it may download the module
// and its dependencies from the Go proxy).
const zitadelBuildTimeout = 10 * time.Minute

// ZitadelClient is a service client of the example OP: it gets access
// tokens with the client_credentials grant, as a JWT signed with the OP's
// JWKS key (JWT true) or as an opaque token that only introspection can
// read. Groups become the groups claim (JWT) or introspection field.
// Audience, if set, replaces ZitadelOptions.Audience in its tokens (a
// token minted for another resource).
type ZitadelClient struct {
	ID, Secret string
	JWT        bool
	Groups     []string
	Audience   string
}

// ZitadelOptions configure a ZitadelOP.
type ZitadelOptions struct {
	// Audience is the aud of every service client's token: the gateway's.
	Audience string
	// IntrospectorID and IntrospectorSecret, when set, register the client
	// that may introspect the service clients' tokens (the example answers
	// only a client named in the token's audience, so it is added to it).
	IntrospectorID, IntrospectorSecret string
	Clients                            []ZitadelClient
}

// ZitadelOP is zitadel's example OpenID provider, running on 127.0.0.1.
type ZitadelOP struct {
	// Issuer is the OP's issuer URL (http://127.0.0.1:port).
	Issuer string
	// Stderr is what the OP logged.
	Stderr *SyncBuffer
}

// StartZitadelOP builds the example OP (once, into the test cache) and
// starts it; it stops when the test ends.
func StartZitadelOP(tb testing.TB, opts ZitadelOptions) *ZitadelOP {
	tb.Helper()
	bin, err := buildZitadelOP(context.Background(), CacheDir(tb))
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	args := []string{"-audience", opts.Audience}
	if opts.IntrospectorID != "" {
		args = append(args, "-introspector", opts.IntrospectorID+":"+opts.IntrospectorSecret)
	}
	for _, c := range opts.Clients {
		kind := "opaque"
		if c.JWT {
			kind = "jwt"
		}
		spec := []string{c.ID, c.Secret, kind, strings.Join(c.Groups, ",")}
		if c.Audience != "" {
			spec = append(spec, c.Audience)
		}
		args = append(args, "-client", strings.Join(spec, ":"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := commandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		tb.Fatalf("testenv: %v", err)
	}
	op := &ZitadelOP{Stderr: &SyncBuffer{}}
	cmd.Stderr = op.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("testenv: starting zitadel's example OP: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		issuer, found := strings.CutPrefix(line, "issuer ")
		if !ok || !found {
			tb.Fatalf("testenv: zitadel's example OP did not start (stdout %q)\n%s", line, op.Stderr.String())
		}
		op.Issuer = issuer
	case <-time.After(time.Minute):
		tb.Fatalf("testenv: zitadel's example OP did not say its issuer within a minute\n%s", op.Stderr.String())
	}
	return op
}

// Token gets an access token for a service client with the
// client_credentials grant.
func (op *ZitadelOP) Token(tb testing.TB, id, secret, scope string) string {
	tb.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	req, err := http.NewRequest(http.MethodPost, op.Issuer+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("testenv: asking zitadel's example OP for a token: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.AccessToken == "" {
		tb.Fatalf("testenv: zitadel's example OP gave no token for %s: %s %s", id, resp.Status, body)
	}
	return out.AccessToken
}

// zitadelHash names one version of the program: its three files.
func zitadelHash() string {
	h := sha256.New()
	for _, b := range [][]byte{zitadelMain, zitadelGoMod, zitadelGoSum} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// buildZitadelOP builds the program into cache/zitadelop/<hash>/, once:
// later calls (and other test processes, through the lock) reuse it.
func buildZitadelOP(ctx context.Context, cache string) (string, error) {
	root := filepath.Join(cache, "zitadelop")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", root, err)
	}
	dir := filepath.Join(root, zitadelHash())
	bin := filepath.Join(dir, "zitadelop")
	err := withFileLock(dir+".lock", func() error {
		if _, err := os.Stat(bin); err == nil {
			return nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing stale build %s: %w", dir, err)
		}
		src := filepath.Join(dir, "src")
		if err := os.MkdirAll(src, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", src, err)
		}
		for name, data := range map[string][]byte{"main.go": zitadelMain, "go.mod": zitadelGoMod, "go.sum": zitadelGoSum} {
			if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
				return fmt.Errorf("writing %s: %w", name, err)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, zitadelBuildTimeout)
		defer cancel()
		// Built to a temporary name and renamed: a build cut short leaves
		// no binary that the next run would take for a finished one.
		tmp := bin + ".tmp"
		cmd := exec.CommandContext(ctx, "go", "build", "-mod=readonly", "-o", tmp, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building zitadel's example OP (github.com/zitadel/oidc/v3@%s) in %s: %w\n%s", ZitadelVersion, src, err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			return fmt.Errorf("installing %s: %w", bin, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return bin, nil
}
