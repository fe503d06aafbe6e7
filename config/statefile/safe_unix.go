//go:build unix

package statefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openFlags make opening a symbolic link fail, and opening a fifo return
// at once (for the check of the file's type) rather than wait for a
// writer; regular files ignore O_NONBLOCK.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// checkOwnerMode refuses a state file or directory that is writable by
// group or others, or owned by another user than the one running
// toolbridge (root, who can change anything anyway, excepted). mode is
// the mode its fix sets.
func checkOwnerMode(path string, fi fs.FileInfo, mode string) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if me := os.Geteuid(); int(st.Uid) != me && st.Uid != 0 {
			return &UnsafeError{
				Path:    path,
				Problem: fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, me),
				Fix:     fmt.Sprintf("check who put it there, then remove it or run: chown %d %s", me, path),
			}
		}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &UnsafeError{
			Path:    path,
			Problem: fmt.Sprintf("is writable by group or others (mode %#o)", perm),
			Fix:     fmt.Sprintf("chmod %s %s", mode, path),
		}
	}
	return nil
}
