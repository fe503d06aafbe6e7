//go:build linux

package upstream

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// PollPipe reads and writes a non-blocking pipe or socket with raw system
// calls, waiting in Go's poller when there is nothing to read or no room
// to write.
//
// Why: os.File makes each read and write a system call through the
// runtime's syscall entry, and the first one after the gateway's threads
// have all gone idle wakes sysmon, which then polls every 20 µs until they
// are all idle again. Over stdio a tool call makes about six such calls
// (the client's line, the upstream's request and answer, the answer
// back), with the gateway idle in between, so sysmon woke on every call:
// 12% of the gateway's CPU a call, plus the wake-ups themselves (#25). A
// read or write of a non-blocking pipe never blocks, so it may skip that
// entry (the runtime's own netpoll and futex calls skip it too); when the
// pipe is empty or full, the goroutine parks in the poller as os.File's
// would.
type PollPipe struct {
	f  *os.File
	rc syscall.RawConn
}

// NewPollPipe returns f as a PollPipe when f is a pipe or socket in
// non-blocking mode (os.Pipe's ends, and os.NewFile of a descriptor put in
// non-blocking mode first, which the poller then watches); anything else
// is refused (ok false), since a raw read of a blocking file would hold
// its thread and P.
func NewPollPipe(f *os.File) (p *PollPipe, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	_ = rc.Control(func(fd uintptr) {
		if _, ok := PipeOrSocket(int(fd)); !ok {
			return
		}
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		ok = errno == 0 && flags&syscall.O_NONBLOCK != 0
	})
	if !ok {
		return nil, false
	}
	return &PollPipe{f: f, rc: rc}, true
}

// PipeOrSocket reports whether fd is a pipe or a socket, the only files
// whose reads and writes Go's poller can wait for, and gives its stat.
func PipeOrSocket(fd int) (syscall.Stat_t, bool) {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return st, false
	}
	mode := st.Mode & syscall.S_IFMT
	return st, mode == syscall.S_IFIFO || mode == syscall.S_IFSOCK
}

// Read implements io.Reader as os.File's Read does.
func (p *PollPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, p.pollError("read", err)
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write implements io.Writer as os.File's Write does: all of b is
// written, or an error says why not.
func (p *PollPipe) Write(b []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	for n < len(b) && errno == 0 {
		err := p.rc.Write(func(fd uintptr) bool {
			for n < len(b) {
				r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
				switch e {
				case 0:
					n += int(r)
				case syscall.EINTR:
				case syscall.EAGAIN:
					return false // full: wait in the poller
				default:
					errno = e
					return true
				}
			}
			return true
		})
		if err != nil {
			return n, p.pollError("write", err)
		}
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: p.f.Name(), Err: errno}
	}
	return n, nil
}

// pollError is an error of the poller's as os.File reports it: once the
// file is closed, os.ErrClosed.
func (p *PollPipe) pollError(op string, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrClosed // the poller's own "use of closed file"
	}
	return &os.PathError{Op: op, Path: p.f.Name(), Err: err}
}

// Close closes the file; a Read or Write waiting in the poller returns
// os.ErrClosed.
func (p *PollPipe) Close() error { return p.f.Close() }
