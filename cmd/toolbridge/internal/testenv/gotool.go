package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// GoTool returns a program built from the Go module proxy at a pinned
// version (go install pkg@version), such as helm for the chart's tests.
// It is built once into the cache directory (see CacheDir), under a lock
// so that parallel test processes build it once between them, and reused
// by every later run; a failed build fails tb with the go command's output.
func GoTool(tb testing.TB, pkg, version string) string {
	tb.Helper()
	bin, err := buildGoTool(context.Background(), CacheDir(tb), pkg, version)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return bin
}

// buildGoTool installs pkg@version into cache/bin unless it is there.
func buildGoTool(ctx context.Context, cache, pkg, version string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, goToolBuildTimeout)
	defer cancel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("looking for the go command on PATH: %w", err)
	}
	sum := sha256.Sum256([]byte(pkg + "@" + version + " " + runtime.GOOS + "/" + runtime.GOARCH))
	binDir := filepath.Join(cache, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", binDir, err)
	}
	name := path.Base(pkg)
	bin := filepath.Join(binDir, name+"-"+safeName(version)+"-"+hex.EncodeToString(sum[:4]))
	err = withFileLock(bin+".lock", func() error {
		if _, err := os.Stat(bin); err == nil {
			return nil
		}
		// go install writes NAME into GOBIN; a directory of the build's
		// own keeps a half-written binary from ever being found.
		tmp, err := os.MkdirTemp(binDir, name+".tmp-")
		if err != nil {
			return fmt.Errorf("creating a build directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		cmd := commandContext(ctx, goBin, "install", pkg+"@"+version)
		// Outside any module, so that this module's go.mod plays no part:
		// pkg@version builds with its own module's requirements.
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("building %s@%s: %w\n--- go install output ---\n%s", pkg, version, err, out)
		}
		if err := os.Rename(filepath.Join(tmp, name), bin); err != nil {
			return fmt.Errorf("installing %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return bin, nil
}

// goToolBuildTimeout bounds one go install. helm is large: its first
// build (downloads included) took 25 minutes on a 2-core machine busy with
// other builds; later runs find it in the cache.
const goToolBuildTimeout = 45 * time.Minute
