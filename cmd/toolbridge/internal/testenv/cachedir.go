package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// CacheEnvVar names the environment variable that overrides the cache
// directory. CI and developers can point several clones at one cache.
const CacheEnvVar = "TOOLBRIDGE_TEST_CACHE"

// CacheDir returns the directory where testenv keeps installed npm packages
// and built binaries: $TOOLBRIDGE_TEST_CACHE, else os.UserCacheDir()/toolbridge-test.
// It creates the directory and fails the test if it cannot.
func CacheDir(tb testing.TB) string {
	tb.Helper()
	dir, err := cacheDir()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return dir
}

// cacheDir resolves and creates the cache directory.
func cacheDir() (string, error) {
	dir := os.Getenv(CacheEnvVar)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("locating the user cache directory (set %s instead): %w", CacheEnvVar, err)
		}
		dir = filepath.Join(base, "toolbridge-test")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving cache directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("creating cache directory %s: %w", abs, err)
	}
	return abs, nil
}

// withFileLock runs fn while holding an exclusive flock on path, so that test
// processes of several packages (go test runs them in parallel) install or
// build into the same cache directory one at a time. The lock is released
// when fn returns or the process dies.
func withFileLock(path string, fn func() error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("opening lock file %s: %w", path, err)
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases it anyway
	return fn()
}
