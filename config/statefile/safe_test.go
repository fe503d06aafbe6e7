//go:build unix

package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRefusesUnsafeState: a state file is read only when nobody but
// the user could have put it there or changed it, as ssh asks of its own
// files; otherwise the error names the path and the command that fixes
// it, and nothing is read.
func TestReadRefusesUnsafeState(t *testing.T) {
	asRoot := os.Geteuid() == 0
	tests := []struct {
		name string
		// setup changes a state directory whose pins/h.json holds `{"ok":1}`;
		// it returns the path the error must name.
		setup   func(t *testing.T, root, file string) string
		wantErr string // "" when the file must be read
		root    bool   // needs root (chown)
	}{
		{"a safe file", func(*testing.T, string, string) string { return "" }, "", false},
		{"a file others may read but not write", func(t *testing.T, _, file string) string {
			chmod(t, file, 0o644)
			return ""
		}, "", false},
		{"a link to a file inside the state directory", func(t *testing.T, root, file string) string {
			other := filepath.Join(root, "elsewhere.json")
			mustDo(t, os.Rename(file, other))
			mustDo(t, os.Symlink("../elsewhere.json", file))
			return ""
		}, "", false},
		{"a state directory that is itself a link", func(t *testing.T, root, _ string) string {
			real := root + ".real"
			mustDo(t, os.Rename(root, real))
			mustDo(t, os.Symlink(real, root))
			return ""
		}, "", false},
		{"a link to a foreign file", func(t *testing.T, _, file string) string {
			foreign := filepath.Join(t.TempDir(), "foreign.json")
			mustDo(t, os.WriteFile(foreign, []byte(`{"ok":2}`), 0o644))
			mustDo(t, os.Remove(file))
			mustDo(t, os.Symlink(foreign, file))
			return file
		}, "outside the state directory", false},
		{"a directory linked out of the state directory", func(t *testing.T, root, _ string) string {
			foreign := t.TempDir()
			mustDo(t, os.WriteFile(filepath.Join(foreign, "h.json"), []byte(`{"ok":2}`), 0o600))
			mustDo(t, os.RemoveAll(filepath.Join(root, "pins")))
			mustDo(t, os.Symlink(foreign, filepath.Join(root, "pins")))
			return filepath.Join(root, "pins", "h.json")
		}, "outside the state directory", false},
		{"a world-writable file", func(t *testing.T, _, file string) string {
			chmod(t, file, 0o666)
			return file
		}, "writable by group or others (mode 0666); fix: chmod 600 ", false},
		{"a group-writable file", func(t *testing.T, _, file string) string {
			chmod(t, file, 0o620)
			return file
		}, "chmod 600 ", false},
		{"a world-writable subdirectory", func(t *testing.T, _, file string) string {
			chmod(t, filepath.Dir(file), 0o777)
			return filepath.Dir(file)
		}, "writable by group or others (mode 0777); fix: chmod 700 ", false},
		{"a world-writable state directory", func(t *testing.T, root, _ string) string {
			chmod(t, root, 0o777)
			return root
		}, "chmod 700 ", false},
		{"a sticky world-writable state directory", func(t *testing.T, root, _ string) string {
			chmod(t, root, 0o777|fs.ModeSticky)
			return root
		}, "chmod 700 ", false},
		{"a file owned by another user", func(t *testing.T, _, file string) string {
			mustDo(t, os.Chown(file, 65534, 65534))
			return file
		}, "is owned by uid 65534, not by you", true},
		{"a subdirectory owned by another user", func(t *testing.T, _, file string) string {
			mustDo(t, os.Chown(filepath.Dir(file), 65534, 65534))
			return filepath.Dir(file)
		}, "is owned by uid 65534", true},
		{"a fifo instead of a file", func(t *testing.T, _, file string) string {
			mustDo(t, os.Remove(file))
			mkfifo(t, file)
			return file
		}, "not a regular file", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && !asRoot {
				t.Skip("chown to another user needs root")
			}
			d := open(t)
			mustDo(t, d.Write("pins/h.json", []byte(`{"ok":1}`)))
			file, _ := d.Path("pins/h.json")
			at := tt.setup(t, d.Root(), file)

			var v struct{ OK int }
			found, err := d.ReadJSON("pins/h.json", &v)
			if tt.wantErr == "" {
				if err != nil || !found || v.OK != 1 {
					t.Fatalf("ReadJSON = %v, %v, %+v; want the file read", found, err, v)
				}
				return
			}
			var unsafe *UnsafeError
			if !errors.As(err, &unsafe) {
				t.Fatalf("ReadJSON = %v, %v, %+v; want an *UnsafeError", found, err, v)
			}
			if v.OK != 0 {
				t.Errorf("the unsafe file was read: %+v", v)
			}
			if errors.Is(err, fs.ErrNotExist) {
				t.Errorf("an unsafe file reads as a missing one (first use would pin anew): %v", err)
			}
			if unsafe.Path != at || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), at) {
				t.Errorf("error = %v (path %s), want %s and %q", err, unsafe.Path, at, tt.wantErr)
			}
		})
	}
}

// Writing a state file into a directory others may change is refused too:
// the secret would no longer be the user's alone.
func TestWriteRefusesUnsafeDirectory(t *testing.T) {
	d := open(t)
	mustDo(t, d.Write("oauth/a.json", []byte("{}")))
	dir, _ := d.Path("oauth")
	chmod(t, dir, 0o777)
	err := d.Write("oauth/b.json", []byte(`{"refresh_token":"r"}`))
	var unsafe *UnsafeError
	if !errors.As(err, &unsafe) || unsafe.Path != dir || !strings.Contains(err.Error(), "chmod 700 "+dir) {
		t.Fatalf("Write into a 0777 directory = %v, want an *UnsafeError naming %s", err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file was written anyway: %v", err)
	}
	if _, err := d.Lock("oauth/b.json"); !errors.As(err, &unsafe) {
		t.Errorf("Lock in a 0777 directory = %v, want an *UnsafeError", err)
	}
	chmod(t, dir, 0o700)
	if err := d.Write("oauth/b.json", []byte("{}")); err != nil {
		t.Errorf("Write after the fix: %v", err)
	}
}

// A link to nothing is no file: it reads as missing, and writing replaces
// the link, not what it names.
func TestDanglingLinkReadsAsMissing(t *testing.T) {
	d := open(t)
	mustDo(t, d.Write("pins/x.json", []byte("{}")))
	file, _ := d.Path("pins/h.json")
	target := filepath.Join(t.TempDir(), "not-yet.json")
	mustDo(t, os.Symlink(target, file))
	var v any
	if found, err := d.ReadJSON("pins/h.json", &v); found || err != nil {
		t.Fatalf("ReadJSON of a dangling link = %v, %v; want not found", found, err)
	}
	mustDo(t, d.Write("pins/h.json", []byte("{}")))
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Write followed the link to %s: %v", target, err)
	}
	if fi, err := os.Lstat(file); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("after Write, %s is %v, %v; want a regular file", file, fi, err)
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	// os.Chmod maps fs.ModeSticky to the sticky bit.
	mustDo(t, os.Chmod(path, mode))
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
