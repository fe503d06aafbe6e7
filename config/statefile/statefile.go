// Package statefile keeps what toolbridge must remember between runs (OAuth
// tokens when there is no OS keyring, pinned tool definitions) under the
// state directory, the config key state_dir.
//
// Every file is written atomically (a temporary file in the same directory,
// synced, then renamed over the old one), so a reader or a crash never sees
// half a file. Files are created 0600 and directories 0700: the state may
// hold credentials. What is read must be the user's alone, as ssh asks of
// its files: a symbolic link out of the directory, or a file or directory
// that group or others may write or another user owns, is an
// *UnsafeError and is not read. A file that does not parse is a *CorruptError naming it,
// and Update leaves such a file alone rather than overwrite what a person
// may still want to rescue.
//
// The package imports nothing of toolbridge's, so any package may use it.
package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// File and directory modes: the state may hold credentials, so nobody but
// the owner reads it.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// ErrNoStateDir is returned by Open when no state directory is configured,
// which happens when neither state_dir, XDG_STATE_HOME nor HOME is set.
var ErrNoStateDir = errors.New("no state directory: set state_dir (or TOOLBRIDGE_STATE_DIR), XDG_STATE_HOME or HOME")

// CorruptError says a state file exists but does not hold what it should.
// The file is left as it is.
type CorruptError struct {
	// Path is the file's full path.
	Path string
	// Err is the parse error.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is corrupt (fix or delete it): %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Dir is a state directory. The directory is created on the first write,
// not by Open, so reading state never leaves traces on disk.
type Dir struct {
	root string
}

// Open returns the state directory at root, which must be an absolute path.
func Open(root string) (Dir, error) {
	if root == "" {
		return Dir{}, ErrNoStateDir
	}
	if !filepath.IsAbs(root) {
		return Dir{}, fmt.Errorf("opening state directory %q: not an absolute path", root)
	}
	return Dir{root: filepath.Clean(root)}, nil
}

// Root is the directory's absolute path.
func (d Dir) Root() string { return d.root }

// Path returns the full path of the state file name, a slash-separated
// relative path such as "tokens/github.json". It fails for a name that is
// empty, absolute or reaches outside the directory.
func (d Dir) Path(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if d.root == "" {
		return "", ErrNoStateDir
	}
	return filepath.Join(d.root, filepath.FromSlash(name)), nil
}

// checkName accepts clean, relative, slash-separated names whose elements
// are not hidden: a leading "." is reserved for temporary files.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("state file name is empty")
	case strings.ContainsAny(name, "\\\x00") || strings.ContainsRune(name, filepath.Separator) && filepath.Separator != '/':
		return fmt.Errorf("state file name %q: use / to separate directories", name)
	case path.IsAbs(name) || filepath.IsAbs(name) || filepath.VolumeName(name) != "":
		return fmt.Errorf("state file name %q is absolute: want a name relative to the state directory", name)
	case name == ".." || strings.HasPrefix(name, "../"):
		return fmt.Errorf("state file name %q reaches outside the state directory", name)
	case path.Clean(name) != name:
		return fmt.Errorf("state file name %q is not clean", name)
	}
	for _, elem := range strings.Split(name, "/") {
		if strings.HasPrefix(elem, ".") {
			return fmt.Errorf("state file name %q: an element starts with a dot", name)
		}
	}
	return nil
}

// Read returns the content of the state file name. A missing file is an
// error that matches fs.ErrNotExist. A file that someone other than the
// user could have put there or changed (a symbolic link out of the state
// directory, a file or directory writable by group or others or owned by
// another user) is not read: the error is an *UnsafeError naming it and
// the fix.
func (d Dir) Read(name string) ([]byte, error) {
	p, err := d.Path(name)
	if err != nil {
		return nil, err
	}
	f, err := d.openChecked(p)
	if err != nil {
		return nil, fmt.Errorf("reading state file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading state file %s: %w", p, err)
	}
	return b, nil
}

// Write replaces the state file name with data atomically, creating the
// directories on the way with mode 0700 and the file with mode 0600.
func (d Dir) Write(name string, data []byte) error {
	p, err := d.Path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), DirMode); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	if err := d.checkWriteDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	// The temporary file sits beside the target so the rename stays on one
	// file system and is atomic; its leading dot keeps it out of List.
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes 0600 files already; Chmod says so for umask-proof
	// certainty and for platforms that differ.
	if err := tmp.Chmod(FileMode); err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	done = true
	return nil
}

// Remove deletes the state file name; a missing file is not an error.
func (d Dir) Remove(name string) error {
	p, err := d.Path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing state file: %w", err)
	}
	return nil
}

// List returns the names of the state files directly in the directory dir
// ("" for the root), sorted, without temporary files or subdirectories. A
// missing directory holds no files.
func (d Dir) List(dir string) ([]string, error) {
	p := d.root
	if dir != "" {
		var err error
		if p, err = d.Path(dir); err != nil {
			return nil, err
		}
	} else if p == "" {
		return nil, ErrNoStateDir
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing state directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// ReadJSON decodes the state file name into v. It reports found=false, and
// no error, when the file does not exist; a file that is not one JSON value
// of v's shape is a *CorruptError.
func (d Dir) ReadJSON(name string, v any) (found bool, err error) {
	b, err := d.Read(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := decodeJSON(b, v); err != nil {
		p, _ := d.Path(name)
		return true, &CorruptError{Path: p, Err: err}
	}
	return true, nil
}

// decodeJSON decodes exactly one JSON value, rejecting trailing data (a
// sign of two writers or a truncated edit).
func decodeJSON(b []byte, v any) error { return decodeOne(b, v, false) }

// DecodeStrict decodes b, exactly one JSON value, into v, refusing a
// field v does not have as well as trailing data: for the files the
// gateway alone writes (its memos), where either means the file is not
// one it wrote.
func DecodeStrict(b []byte, v any) error { return decodeOne(b, v, true) }

func decodeOne(b []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// WriteJSON replaces the state file name with v as indented JSON, atomically.
func (d Dir) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state file %s: %w", name, err)
	}
	return d.Write(name, append(b, '\n'))
}

// UpdateJSON reads the state file name into a fresh T (its zero value when
// the file does not exist), lets fn change it and writes it back. A corrupt
// file is returned as a *CorruptError and is not overwritten; when fn
// fails nothing is written.
//
// UpdateJSON does not lock: two processes updating the same file at once
// may lose one update, but the file is always whole.
func UpdateJSON[T any](d Dir, name string, fn func(*T) error) error {
	var v T
	if _, err := d.ReadJSON(name, &v); err != nil {
		return err
	}
	if err := fn(&v); err != nil {
		return err
	}
	return d.WriteJSON(name, v)
}
