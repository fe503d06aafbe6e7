package statefile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// UnsafeError says a state file, or a directory on its way, could have
// been put there or changed by someone other than the user, so what it
// holds cannot be trusted: a pin file planted by another user would
// approve the tool definitions of their choice. Nothing was read or
// written. The checks are ssh's for its own files: no symbolic link out
// of the state directory, nothing writable by group or others, nothing
// owned by another user (root excepted).
type UnsafeError struct {
	// Path is the file or directory at fault.
	Path string
	// Problem says what is wrong with it.
	Problem string
	// Fix is what the user can run to put it right.
	Fix string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("refusing state %s: it %s; fix: %s", e.Path, e.Problem, e.Fix)
}

// openChecked opens the state file at p, a path Path returned, for
// reading once it has checked that nobody but the user could have put it
// there (see UnsafeError). A missing file is an error that matches
// fs.ErrNotExist.
func (d Dir) openChecked(p string) (*os.File, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, err // a missing file, or a link to nothing: no file at all
	}
	rel, err := d.inside(p, real)
	if err != nil {
		return nil, err
	}
	if err := d.checkDirs(filepath.Dir(rel)); err != nil {
		return nil, err
	}
	// real has no symbolic links left; O_NOFOLLOW keeps it so if one is
	// swapped in now (see openFlags).
	f, err := os.OpenFile(real, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		if !fi.Mode().IsRegular() {
			err = &UnsafeError{Path: p, Problem: "is not a regular file (" + fi.Mode().Type().String() + ")", Fix: "remove it: rm " + p}
		} else {
			err = checkOwnerMode(real, fi, "600")
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// inside returns the path of real, the target of p with every symbolic
// link followed, relative to the state directory (its links followed
// too), or an *UnsafeError when it lies outside.
func (d Dir) inside(p, real string) (string, error) {
	root, err := filepath.EvalSymlinks(d.root)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", &UnsafeError{
			Path:    p,
			Problem: fmt.Sprintf("leads through a symbolic link to %s, outside the state directory %s", real, d.root),
			Fix:     "remove the link (rm " + p + ") and let toolbridge write the file again",
		}
	}
	return rel, nil
}

// checkDirs checks the state directory and each directory below it down
// to rel, a directory relative to it with no symbolic links.
func (d Dir) checkDirs(rel string) error {
	root, err := filepath.EvalSymlinks(d.root)
	if err != nil {
		return err
	}
	dir := root
	elems := []string{}
	if rel != "." {
		elems = strings.Split(rel, string(filepath.Separator))
	}
	for i := 0; ; i++ {
		fi, err := os.Lstat(dir)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &UnsafeError{Path: dir, Problem: "is not a directory", Fix: "remove it: rm " + dir}
		}
		if err := checkOwnerMode(dir, fi, "700"); err != nil {
			return err
		}
		if i == len(elems) {
			return nil
		}
		dir = filepath.Join(dir, elems[i])
	}
}

// checkWriteDir checks the directory dir, which Write or Lock just made
// sure exists, before a state file is put in it: a secret written into a
// directory others may change is no longer the user's alone, and the
// next read would refuse it anyway.
func (d Dir) checkWriteDir(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	rel, err := d.inside(dir, real)
	if err != nil {
		return err
	}
	return d.checkDirs(rel)
}
