//go:build linux

package main

import (
	"io"
	"os"
	"syscall"

	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// pollableStdin returns the gateway's stdin as a file Go's poller waits
// on, when it is a blocking pipe or socket (how an MCP client starts a
// stdio server), and a func that puts it back as it was.
//
// Why: a client hands its server a blocking pipe, and os.Stdin reads a
// blocking file with a blocking read(2). The goroutine waiting there
// holds a thread in the syscall with a P the runtime counts as running,
// so sysmon never sleeps: it polls every 20 µs, retakes the P, and each
// line that arrives wakes threads to hand one back. Between two tool
// calls the gateway waits on stdin most of the time, and this was about a
// fifth of its CPU over stdio (#25). In non-blocking mode the goroutine
// parks in the poller, the P goes idle and sysmon sleeps.
//
// O_NONBLOCK belongs to the open file, which the gateway shares only with
// processes that inherited its stdin (its upstreams get pipes of their
// own); it is cleared again when serving ends. A terminal, a regular
// file, a stdin already non-blocking (os.Stdin polls it already) or
// anything else is returned as it is, and so is a stdin that is also
// stdout or stderr (one socket for both, as inetd or systemd hand it):
// writes to a blocking-mode os.File would fail with EAGAIN.
//
// The file returned is read with raw system calls (upstream.PollPipe):
// the runtime's syscall entry woke sysmon on every line (#25).
func pollableStdin(in io.Reader) (io.Reader, func()) {
	return pollable(in, syscall.Stdout, syscall.Stderr)
}

// pollableStdout is pollableStdin for the gateway's stdout, which a client
// hands over as a blocking pipe too: each answer was a blocking write(2)
// through the runtime's syscall entry, which woke sysmon (see
// upstream.PollPipe). A stdout that is also stdin or stderr is returned as
// it is, as is anything but a pipe or socket.
func pollableStdout(out io.Writer) (io.Writer, func()) {
	return pollable(out, syscall.Stdin, syscall.Stderr)
}

// pollable is pollableStdin or pollableStdout, T being io.Reader or
// io.Writer: v switched to the poller when it is an *os.File that
// pollableFile takes, with the descriptors that must not share its file
// given.
func pollable[T any](v T, others ...int) (T, func()) {
	f, ok := any(v).(*os.File)
	if !ok {
		return v, func() {}
	}
	p, restore := pollableFile(f, others...)
	return any(p).(T), restore
}

// pollableFile is f switched to the poller, as a PollPipe, or f itself
// when it is not a blocking pipe or socket or shares its file with one of
// others.
func pollableFile(f *os.File, others ...int) (io.ReadWriter, func()) {
	keep := func() {}
	// Through SyscallConn: f.Fd() would switch a pollable file to
	// blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return f, keep
	}
	fd := -1
	_ = rc.Control(func(orig uintptr) {
		st, ok := upstream.PipeOrSocket(int(orig))
		if !ok {
			return
		}
		for _, w := range others {
			var wst syscall.Stat_t
			if syscall.Fstat(w, &wst) == nil && wst.Dev == st.Dev && wst.Ino == st.Ino {
				return
			}
		}
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, orig, syscall.F_GETFL, 0)
		if errno != 0 || flags&syscall.O_NONBLOCK != 0 {
			return
		}
		// A duplicate, so that closing it leaves fd 0 open.
		if d, err := dupCloexec(int(orig)); err == nil {
			fd = d
		}
	})
	if fd < 0 {
		return f, keep
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return f, keep
	}
	// NewFile sees the non-blocking mode and registers fd with the poller.
	p := os.NewFile(uintptr(fd), f.Name())
	var rw io.ReadWriter = p
	if raw, ok := upstream.NewPollPipe(p); ok {
		rw = raw
	}
	return rw, func() {
		// Closing first wakes a read still waiting in the poller; the
		// mode is then cleared through the original descriptor.
		_ = p.Close()
		_ = rc.Control(func(orig uintptr) { _ = syscall.SetNonblock(int(orig), false) })
	}
}

// dupCloexec duplicates fd, close-on-exec: upstream processes started
// later must not inherit it.
func dupCloexec(fd int) (int, error) {
	d, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(d), nil
}
