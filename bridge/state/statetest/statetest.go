// Package statetest starts a real Redis server for tests: Debian's
// redis-server (or valkey-server) on 127.0.0.1, with no persistence, in a
// temp dir, killed when the test ends. .ci/run installs redis-server and
// valkey-server; ForEach runs a test against each of them.
package statetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server (or valkey-server) process. Kill and Restart
// let a test take it away and bring it back (empty: nothing is persisted)
// on the same port.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil when stopped
	exited chan struct{} // closed when cmd has been waited for
}

// Programs are the servers the shared state must work on: Redis, and
// Valkey, the fork of Redis 7.2 that teams run in its place.
func Programs() []string { return []string{"redis-server", "valkey-server"} }

// Start starts a Redis server for tb and stops it when tb ends. It fails
// tb when no redis-server or valkey-server is installed: the test needs a
// real one (apt-get install redis-server).
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := ""
	for _, name := range Programs() {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		tb.Fatal("statetest: no redis-server or valkey-server on PATH; install one (apt-get install redis-server), as .ci/run does")
	}
	return startBin(tb, bin)
}

// StartServer starts program (one of Programs) for tb and stops it when
// tb ends. A missing redis-server fails tb, as in Start. A missing
// valkey-server fails tb under CI (CI=true: .ci/run installs it) and
// skips it elsewhere, saying how to install it: Debian bookworm has
// Valkey only in bookworm-backports.
func StartServer(tb testing.TB, program string) *Server {
	tb.Helper()
	bin, err := exec.LookPath(program)
	if err != nil {
		why := fmt.Sprintf("statetest: no %s on PATH: %s", program, installHint(program))
		if program == "valkey-server" && os.Getenv("CI") != "true" {
			tb.Skip(why + "; CI runs this test")
		}
		tb.Fatal(why + ", as .ci/run does")
	}
	return startBin(tb, bin)
}

// installHint says how to install program on Debian.
func installHint(program string) string {
	if program == "valkey-server" {
		return "install it (Debian bookworm: apt-get install -t bookworm-backports valkey-server, with bookworm-backports in the sources; newer Debian: apt-get install valkey-server)"
	}
	return "install it (apt-get install " + program + ")"
}

// ForEach runs f as a subtest per program in Programs, named after it
// ("redis", "valkey"), each with a server of its own, started by
// StartServer. The subtests run in parallel with each other (not with
// other tests), so a second server costs little wall time.
func ForEach(t *testing.T, f func(t *testing.T, srv *Server)) {
	t.Helper()
	for _, program := range Programs() {
		t.Run(strings.TrimSuffix(program, "-server"), func(t *testing.T) {
			t.Parallel()
			f(t, StartServer(t, program))
		})
	}
}

// startBin starts the server program bin for tb.
func startBin(tb testing.TB, bin string) *Server {
	tb.Helper()
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	tb.Cleanup(s.Kill)
	// The port is chosen free but another process may take it before
	// the server binds it: try a few.
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	tb.Fatalf("statetest: starting %s: %v", bin, err)
	return nil
}

// Program is the server's program name: redis-server or valkey-server.
func (s *Server) Program() string { return filepath.Base(s.bin) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Kill stops the server with SIGKILL, as a crash would, and waits for it.
// Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// Restart starts the server again on the same port after Kill, empty.
func (s *Server) Restart() {
	s.tb.Helper()
	var err error
	// The killed process's port may linger for a moment.
	for range 20 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.tb.Fatalf("statetest: restarting %s on %s: %v", s.Program(), s.Addr(), err)
}

// start runs the server on s.port and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	out := &lockedBuffer{}
	cmd := exec.Command(s.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--logfile", "")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s exited (%v): %s", s.Program(), waitErr, out.String())
		default:
		}
		if ping(s.Addr()) == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("%s did not answer PING on %s within 30 s: %s", s.Program(), s.Addr(), out.String())
}

// ping sends one PING in the Redis protocol.
func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects the server's output for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.b) < 64<<10 {
		b.b = append(b.b, p...)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}
