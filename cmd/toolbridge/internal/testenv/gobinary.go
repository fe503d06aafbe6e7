package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// GoBinary is a package of this module built at most once per test
// process, into a temporary directory: a real program (an example server,
// toolbridge itself) for tests to run. Declare one per package at package
// level and call Remove from TestMain.
type GoBinary struct {
	// Package is the import path to build.
	Package string

	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the package on first use and returns the binary's path; a
// build failure fails tb with the compiler's output.
func (b *GoBinary) Path(tb testing.TB) string {
	tb.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "toolbridge-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, path.Base(b.Package))
		out, err := exec.Command("go", "build", "-o", b.path, b.Package).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("building %s: %w\n%s", b.Package, err, out)
		}
	})
	if b.err != nil {
		tb.Fatalf("testenv: %v", b.err)
	}
	return b.path
}

// Remove deletes the built binary, if any.
func (b *GoBinary) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
