//go:build linux

package main

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// blockingPipe is a pipe as a client hands it to its server: both ends in
// blocking mode (os.Pipe would make them non-blocking).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil || errno != 0 {
		t.Fatal(err, errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// TestPollableStdin: a blocking pipe on stdin is read through the poller
// (non-blocking, a file of its own), reads what the client writes and
// its end, a read still waiting is woken by restore, and restore puts the
// pipe back in blocking mode with stdin still open.
func TestPollableStdin(t *testing.T) {
	r, w := blockingPipe(t)
	in, restore := pollableStdin(r)
	p, ok := in.(*upstream.PollPipe)
	if !ok {
		t.Fatalf("got %T, want the pipe read with raw system calls", in)
	}
	if !nonblocking(t, r) {
		t.Fatal("the pipe is still in blocking mode")
	}
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "line\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// A read waiting on the poller ends when serving ends.
	read := make(chan error, 1)
	go func() { _, err := p.Read(buf); read <- err }()
	time.Sleep(10 * time.Millisecond) // let it wait; it must end either way
	restore()
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("waiting read ended with %v, want os.ErrClosed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a waiting read was not woken by restore")
	}
	if nonblocking(t, r) {
		t.Fatal("restore left the pipe in non-blocking mode")
	}
	// stdin itself is still open and readable.
	if _, err := w.Write([]byte("more\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "more\n" {
		t.Fatalf("stdin after restore: %q, %v", buf[:n], err)
	}
	_ = w.Close()
	if _, err := r.Read(buf); err != io.EOF {
		t.Fatalf("stdin's end: %v, want io.EOF", err)
	}
}

// TestPollableStdinSharedWithStdout: a socket that is stdin and stdout at
// once stays in blocking mode, where the gateway's writes expect it.
func TestPollableStdinSharedWithStdout(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	in, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer in.Close()
	defer peer.Close()
	out, err := syscall.Dup(fds[0]) // stdout: the same socket
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(out)
	got, restore := pollable(io.Reader(in), out)
	restore()
	if got != io.Reader(in) || nonblocking(t, in) {
		t.Fatalf("got %v (non-blocking %v), want stdin as it is", got, nonblocking(t, in))
	}
	// The same socket with a stdout of its own is polled.
	got, restore = pollable(io.Reader(in))
	defer restore()
	if got == io.Reader(in) || !nonblocking(t, in) {
		t.Fatal("a socket on stdin alone was not switched to the poller")
	}
}

// TestPollableStdinLeavesOthers: a regular file, a reader that is no
// file, and a pipe already non-blocking (which os.Stdin already polls)
// are returned as they are.
func TestPollableStdinLeavesOthers(t *testing.T) {
	regular, err := os.Create(t.TempDir() + "/in")
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	nb, _, err := os.Pipe() // non-blocking
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	for name, in := range map[string]io.Reader{"regular file": regular, "not a file": io.LimitReader(nil, 0), "non-blocking pipe": nb} {
		got, restore := pollableStdin(in)
		restore()
		if got != in {
			t.Errorf("%s: got %v, want it returned as is", name, got)
		}
	}
}

// TestPollableStdout: a blocking pipe on stdout is written through the
// poller (non-blocking, raw writes): a write larger than the pipe holds
// is written whole while the client reads, and restore puts the pipe back
// in blocking mode with stdout still open.
func TestPollableStdout(t *testing.T) {
	r, w := blockingPipe(t)
	out, restore := pollableStdout(w)
	if _, ok := out.(*upstream.PollPipe); !ok {
		t.Fatalf("got %T, want the pipe written with raw system calls", out)
	}
	if !nonblocking(t, w) {
		t.Fatal("the pipe is still in blocking mode")
	}
	big := make([]byte, 1<<20) // the pipe holds 64 KiB
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	read := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(io.LimitReader(r, int64(len(big)))); read <- b }()
	if n, err := out.Write(big); n != len(big) || err != nil {
		t.Fatalf("wrote %d of %d bytes: %v", n, len(big), err)
	}
	select {
	case got := <-read:
		if string(got) != string(big) {
			t.Fatalf("the client read %d bytes, not what was written", len(got))
		}
	case <-time.After(time.Minute):
		t.Fatal("the client never read the whole write")
	}
	restore()
	if nonblocking(t, w) {
		t.Fatal("restore left the pipe in non-blocking mode")
	}
	if _, err := w.Write([]byte("more\n")); err != nil {
		t.Fatalf("stdout after restore: %v", err)
	}
}

// TestPollableStdoutSharedWithStderr: a stdout that is also stderr (2>&1
// into one pipe) stays in blocking mode, where the gateway's log writes
// expect it.
func TestPollableStdoutSharedWithStderr(t *testing.T) {
	_, w := blockingPipe(t)
	errFd, err := syscall.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(errFd)
	got, restore := pollableFile(w, errFd)
	restore()
	if got != io.ReadWriter(w) || nonblocking(t, w) {
		t.Fatalf("got %T (non-blocking %v), want stdout as it is", got, nonblocking(t, w))
	}
}
