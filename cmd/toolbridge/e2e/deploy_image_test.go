package e2e

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// containerfile is the example this test builds, as users get it.
const containerfile = "examples/deploy/Containerfile"

// repoRoot is the repository root, the image's build context.
const repoRoot = "../../.."

// buildahPath finds Debian's buildah. Outside CI a machine without it
// skips the image test; CI installs it (.ci/run), so there its absence
// is a failure.
func buildahPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("buildah"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no buildah on PATH in CI: the image test needs it (apt-get install -y buildah)")
	}
	t.Skip("no buildah on PATH: the container image is not built (apt-get install -y buildah); CI runs this test")
	return ""
}

// buildah runs buildah with storage of the test's own, so no image of
// the test meets the machine's images, and returns its stdout.
type buildahRunner struct {
	t    *testing.T
	bin  string
	root string
}

func (b buildahRunner) run(ctx context.Context, args ...string) string {
	b.t.Helper()
	full := append([]string{"--root", filepath.Join(b.root, "root"), "--runroot", filepath.Join(b.root, "run"), "--storage-driver", "vfs"}, args...)
	cmd := testenv.CommandContext(ctx, b.bin, full...)
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.t.Fatalf("buildah %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestContainerImage builds examples/deploy/Containerfile with buildah,
// offline, and checks what it made: a FROM-scratch image whose binary is
// static, non-root, with CA certificates and a /tmp, whose binary answers
// `version` and plays `demo --script` outside the container, and
// `version` inside the image's root filesystem (buildah run with chroot
// isolation).
//
// Not exercised: running the image as a container (podman run, or a
// Kubernetes pod: this machine's sandbox refuses the OCI runtime), the
// default command serving HTTP in it, and building with the real
// golang image, which needs the network: the build stage's FROM is a
// local image holding nothing but environment, and the host's Go
// toolchain, module cache and build cache are mounted into its RUN step.
func TestContainerImage(t *testing.T) {
	buildah := buildahPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	store, err := os.MkdirTemp("", "toolbridge-buildah-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(store) })
	b := buildahRunner{t: t, bin: buildah, root: store}

	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	goroot, modcache, gocache := goEnv("GOROOT"), goEnv("GOMODCACHE"), goEnv("GOCACHE")
	// The module cache must hold every module the build needs (the
	// package's own build of toolbridge in TestMain filled it).
	if out, err := exec.Command("go", "mod", "download").CombinedOutput(); err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}

	// The build stage's base: empty but for the environment a golang image
	// has, and the CA bundle the final stage copies from it.
	builder := b.run(ctx, "from", "scratch")
	b.run(ctx, "copy", builder, "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt")
	// buildah's chroot isolation looks a RUN command up on PATH in the
	// image before it mounts the volumes: a placeholder for `go`, which
	// the mounted toolchain hides.
	placeholder := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(placeholder, []byte("#!/placeholder: the Go toolchain is mounted over this\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b.run(ctx, "copy", "--chmod", "0755", builder, placeholder, "/usr/local/go/bin/go")
	b.run(ctx, "config",
		"--env", "PATH=/usr/local/go/bin:/usr/bin:/bin",
		"--env", "GOPATH=/go", "--env", "GOMODCACHE=/go/pkg/mod", "--env", "GOCACHE=/root/.cache/go-build",
		"--env", "GOPROXY=off", "--env", "GOTOOLCHAIN=local", "--env", "TMPDIR=/tmp",
		builder)
	b.run(ctx, "commit", "--quiet", builder, "localhost/toolbridge-test-go")

	buildTmp := t.TempDir()
	b.run(ctx, "build", "--isolation", "chroot", "--pull-never",
		"--build-arg", "GO_IMAGE=localhost/toolbridge-test-go",
		"--volume", goroot+":/usr/local/go:ro",
		"--volume", modcache+":/go/pkg/mod:ro",
		"--volume", gocache+":/root/.cache/go-build",
		"--volume", buildTmp+":/tmp",
		"-f", filepath.Join(repoRoot, containerfile), "-t", "localhost/toolbridge:test", repoRoot)

	// The image's configuration.
	var img struct {
		OCIv1 struct {
			Architecture string `json:"architecture"`
			Config       struct {
				User       string   `json:"User"`
				Entrypoint []string `json:"Entrypoint"`
				Cmd        []string `json:"Cmd"`
				Env        []string `json:"Env"`
			} `json:"config"`
			RootFS struct {
				DiffIDs []string `json:"diff_ids"`
			} `json:"rootfs"`
		} `json:"OCIv1"`
	}
	if err := json.Unmarshal([]byte(b.run(ctx, "inspect", "--type", "image", "localhost/toolbridge:test")), &img); err != nil {
		t.Fatal(err)
	}
	c := img.OCIv1.Config
	if c.User == "" || strings.HasPrefix(c.User, "0") || strings.HasPrefix(c.User, "root") {
		t.Errorf("image user %q, want a non-root one", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/toolbridge" || strings.Join(c.Cmd, " ") != "serve" {
		t.Errorf("entrypoint %q cmd %q, want /toolbridge serve", c.Entrypoint, c.Cmd)
	}
	if img.OCIv1.Architecture != runtime.GOARCH {
		t.Errorf("architecture %q, want %q", img.OCIv1.Architecture, runtime.GOARCH)
	}

	// Its files: mount the image and look.
	ctr := b.run(ctx, "from", "--pull-never", "localhost/toolbridge:test")
	mnt := b.run(ctx, "mount", ctr)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		b.run(cctx, "umount", ctr)
		b.run(cctx, "rm", ctr)
	})
	var files []string
	err = filepath.WalkDir(mnt, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, path)
		if !d.IsDir() {
			files = append(files, "/"+rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/etc/ssl/certs/ca-certificates.crt", "/toolbridge"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("the image holds the files %q, want exactly %q (FROM scratch)", files, want)
	}
	for _, dir := range []string{"/tmp", "/var/lib/toolbridge"} {
		if fi, err := os.Stat(filepath.Join(mnt, dir)); err != nil || !fi.IsDir() {
			t.Errorf("the image has no directory %s: %v", dir, err)
		}
	}
	checkStatic(t, filepath.Join(mnt, "toolbridge"))

	// The binary, outside any container.
	bin := filepath.Join(t.TempDir(), "toolbridge")
	data, err := os.ReadFile(filepath.Join(mnt, "toolbridge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "toolbridge "+bridge.Version {
		t.Errorf("the image's toolbridge version: %v %q, want %q", err, out, "toolbridge "+bridge.Version)
	}
	demo := testenv.CommandContext(ctx, bin, "demo", "--script")
	demo.Env = append(os.Environ(), "TOOLBRIDGE_STATE_DIR="+t.TempDir())
	out, err = demo.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "steps worked") {
		t.Errorf("the image's toolbridge demo --script: %v\n%s", err, out)
	}

	// And inside the image's root filesystem, where nothing but the image
	// is: no libc, no loader, no shell.
	if got := b.run(ctx, "run", "--isolation", "chroot", ctr, "/toolbridge", "version"); got != "toolbridge "+bridge.Version {
		t.Errorf("buildah run /toolbridge version: %q", got)
	}
}

// checkStatic fails the test unless path is an ELF executable with no
// program interpreter and no shared libraries.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("the image's toolbridge is not ELF: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter (PT_INTERP): it is dynamically linked", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		t.Fatalf("reading %s's needed libraries: %v", path, err)
	}
	if len(libs) > 0 {
		t.Errorf("%s needs shared libraries %q", path, libs)
	}
	if f.Section(".dynamic") != nil {
		t.Errorf("%s has a .dynamic section", path)
	}
}
