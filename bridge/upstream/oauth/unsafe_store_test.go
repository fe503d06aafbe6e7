//go:build unix

package oauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/config/statefile"
)

// A token file planted by someone else (here: a link to a file of their
// own, which would make the gateway send the user's requests with the
// attacker's token, or a token file others may rewrite) is refused, not
// loaded, and the error names the file and the fix.
func TestFileStoreRefusesPlantedToken(t *testing.T) {
	ctx := context.Background()
	store, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, "gh", &Record{Server: "gh", URL: "https://gh.example/mcp"}); err != nil {
		t.Fatal(err)
	}
	file, _ := store.dir.Path(fileName("gh"))

	foreign := filepath.Join(t.TempDir(), "gh.json")
	if err := os.WriteFile(foreign, []byte(`{"server":"gh","url":"https://attacker.example/mcp"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(foreign, file); err != nil {
		t.Fatal(err)
	}
	r, err := store.Load(ctx, "gh")
	var unsafe *statefile.UnsafeError
	if !errors.As(err, &unsafe) || r != nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("Load of a planted link = %+v, %v; want an *UnsafeError naming %s", r, err, file)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, "gh", &Record{Server: "gh", URL: "https://gh.example/mcp"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if r, err := store.Load(ctx, "gh"); !errors.As(err, &unsafe) || !strings.Contains(err.Error(), "chmod 600 "+file) {
		t.Fatalf("Load of a 0666 token file = %+v, %v; want an *UnsafeError with the chmod", r, err)
	}
}
