//go:build unix

package statefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes an exclusive lock for the state file name, shared by every
// process that uses the same state directory, and returns the function
// that releases it. Use it around a read-modify-write that must not
// interleave with another process's, such as spending a single-use refresh
// token. The lock is an advisory flock on a hidden file beside name; the
// kernel drops it if the process dies.
func (d Dir) Lock(name string) (unlock func(), err error) {
	p, err := d.Path(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), DirMode); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	if err := d.checkWriteDir(filepath.Dir(p)); err != nil {
		return nil, fmt.Errorf("locking state file: %w", err)
	}
	lp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".lock")
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR, FileMode)
	if err != nil {
		return nil, fmt.Errorf("locking state file %s: %w", p, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking state file %s: %w", p, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
