package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// mcpGoModule is the module whose examples/conformance server we run.
	mcpGoModule = "github.com/mark3labs/mcp-go"
	// conformancePackage is the server's import path.
	conformancePackage = mcpGoModule + "/examples/conformance"
	// goBuildTimeout bounds a cold build of the server on a busy 2-core machine.
	goBuildTimeout = 10 * time.Minute
	// healthTimeout bounds how long a started server may take to answer /health.
	healthTimeout = 30 * time.Second
	// startAttempts covers losing the free port to another process between
	// picking it and the server binding it.
	startAttempts = 3
)

// ConformanceServer builds mcp-go's examples/conformance server (once per
// mcp-go version, cached across runs), starts it on a free 127.0.0.1 port,
// waits for GET /health, and kills its process group when the test ends. It
// returns the streamable-HTTP endpoint, "http://127.0.0.1:PORT/mcp".
func ConformanceServer(tb testing.TB) string {
	tb.Helper()
	cache := CacheDir(tb)
	bin, err := buildConformanceServer(context.Background(), cache)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	var errs []error
	for range startAttempts {
		url, err := startConformanceServer(tb, bin)
		if err == nil {
			return url
		}
		errs = append(errs, err)
	}
	tb.Fatalf("testenv: starting the mcp-go conformance server: %v", errors.Join(errs...))
	return ""
}

// buildConformanceServer returns the cached server binary, building it first
// if this mcp-go version has none yet. The go command runs in the current
// directory, which for a test is inside toolbridge's module, so the version is
// the one go.mod requires.
func buildConformanceServer(ctx context.Context, cache string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, goBuildTimeout)
	defer cancel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("looking for the go command on PATH: %w", err)
	}
	// Replace is part of the key so a local fork does not reuse a release build.
	out, err := exec.CommandContext(ctx, goBin, "list", "-m", "-f",
		"{{.Path}}@{{.Version}}{{with .Replace}} => {{.Path}}@{{.Version}} {{.Dir}}{{end}}", mcpGoModule).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("resolving the %s version with go list -m: %w\n%s", mcpGoModule, err, out)
	}
	module := strings.TrimSpace(string(out))
	sum := sha256.Sum256([]byte(module + " " + runtime.GOOS + "/" + runtime.GOARCH))
	binDir := filepath.Join(cache, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", binDir, err)
	}
	bin := filepath.Join(binDir, "mcp-go-conformance-"+safeName(moduleVersion(module))+"-"+hex.EncodeToString(sum[:4]))
	err = withFileLock(bin+".lock", func() error {
		if _, err := os.Stat(bin); err == nil {
			return nil
		}
		tmp := bin + ".tmp"
		cmd := commandContext(ctx, goBin, "build", "-o", tmp, conformancePackage)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("building %s (%s): %w\n--- go build output ---\n%s", conformancePackage, module, err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			return fmt.Errorf("installing the conformance server binary: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return bin, nil
}

// moduleVersion picks the version out of "path@version ...".
func moduleVersion(module string) string {
	first, _, _ := strings.Cut(module, " ")
	_, version, _ := strings.Cut(first, "@")
	return version
}

// unsafeChars are the characters not kept in a cache file name.
var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a module version into a file name fragment.
func safeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if s == "" {
		return "unknown"
	}
	return s
}

// startConformanceServer runs bin on a fresh port and waits until /health
// answers. On success it registers the cleanup that kills the server.
func startConformanceServer(tb testing.TB, bin string) (string, error) {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin)
	SetProcessGroup(cmd)
	cmd.Env = append(os.Environ(), "CONFORMANCE_ADDR="+addr)
	var output SyncBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = KillProcessGroup(cmd.Process.Pid)
		<-exited
	}
	if err := waitHealthy("http://"+addr+"/health", exited); err != nil {
		stop()
		return "", fmt.Errorf("waiting for %s on %s: %w (exit: %v)\n--- server output ---\n%s", bin, addr, err, waitErr, output.String())
	}
	tb.Cleanup(func() {
		stop()
		if tb.Failed() {
			tb.Logf("testenv: mcp-go conformance server output:\n%s", output.String())
		}
	})
	return "http://" + addr + "/mcp", nil
}

// waitHealthy polls url until it answers 200, the server exits, or
// healthTimeout passes.
func waitHealthy(url string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("building health request: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			lastErr = fmt.Errorf("health answered %s", resp.Status)
		} else {
			lastErr = err
		}
		select {
		case <-exited:
			return errors.New("server exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("no healthy answer within %s: %w", healthTimeout, lastErr)
		case <-tick.C:
		}
	}
}
