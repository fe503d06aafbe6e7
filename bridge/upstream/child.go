package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolbridge/toolbridge/config"
)

// defaultMaxLine is the bound on one stdout message when the config
// gives none (config.Default's max_result_bytes).
const defaultMaxLine = 10 << 20

// child is a stdio server's process. The gateway runs it itself, not
// through mcp-go's stdio transport, for three reasons: stdout is read
// through a bound on line length (mcp-go holds a line in memory until its
// newline, so a server flooding stdout without one would grow the gateway
// without end); the process is reaped the moment it exits, so the gateway
// can say how it ended; and stopping follows the MCP spec's order (close
// stdin, then SIGTERM, then SIGKILL) over the whole process group.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // the write end of the child's stdin
	stdout *os.File // the read end of the child's stdout
	limit  int64
	exited chan struct{} // closed once the process is reaped

	watchdog *watchdog // kills the process group if the gateway dies; nil without sh

	mu     sync.Mutex
	killed bool   // the gateway sent SIGKILL (not news when reporting)
	cut    error  // why the gateway stopped reading stdout, if it did
	junk   string // the first stdout line that cannot be JSON-RPC
}

// startChild starts the server in its own process group, so that stopping
// it reaches grandchildren too (npx starts node as a child), with SIGKILL
// as its parent-death signal and a watchdog on its group (see watchdog),
// so that neither it nor what it started outlives toolbridge, even when
// toolbridge is killed with SIGKILL.
func (u *Conn) startChild(cfg config.Server) (*child, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = append([]string(nil), u.environ...)
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = cfg.Cwd
	cmd.Stderr = u.stderr
	cmd.SysProcAttr = childProcAttr()
	// A grandchild that keeps stderr open must not hold up Wait for long.
	cmd.WaitDelay = 2 * time.Second
	// Pipes as files, not cmd.StdoutPipe: Wait would close the read end
	// while mcp-go may still be reading what the child wrote last.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	_, _ = inR.Close(), outW.Close() // the child has its own copies
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		return nil, err
	}
	limit := u.MessageLimit()
	c := &child{cmd: cmd, stdin: inW, stdout: outR, limit: limit, exited: make(chan struct{})}
	c.watchdog = startWatchdog(cmd.Process.Pid)
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// transportStdin is the child's stdin as the transport writes it. A write
// after the gateway closed it is dropped: the server is being stopped, and
// an answer to one of its last requests (server-everything asks for roots
// as it starts) has nowhere to go. mcp-go would log that failed write at
// error level after every one-shot command. Any other write error, such as
// the child having exited, is returned as it is.
func (c *child) transportStdin() io.WriteCloser { return closedWritesDropped{pipeIO(c.stdin)} }

type closedWritesDropped struct{ f io.WriteCloser }

// pipeIO is f as the transport reads or writes it: a PollPipe when it can
// be one (os.Pipe's ends always can on Linux), else f itself.
func pipeIO(f *os.File) io.ReadWriteCloser {
	if p, ok := NewPollPipe(f); ok {
		return p
	}
	return f
}

func (w closedWritesDropped) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if errors.Is(err, os.ErrClosed) {
		return len(p), nil
	}
	return n, err
}

func (w closedWritesDropped) Close() error { return w.f.Close() }

func (c *child) pid() int { return c.cmd.Process.Pid }

// kill sends SIGKILL to the child's whole process group.
func (c *child) kill() {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
}

// waitExit reports whether the child was reaped within d.
func (c *child) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the child once its stdin is closed (the transport's Close
// does that): it gets grace to exit, then SIGTERM and grace again, then
// SIGKILL. Whatever is left in its process group is killed, and the stdout
// read end is closed, which ends mcp-go's reader.
func (c *child) stop(grace time.Duration) {
	if !c.waitExit(grace) {
		_ = syscall.Kill(-c.pid(), syscall.SIGTERM)
		if !c.waitExit(grace) {
			c.kill()
			<-c.exited // SIGKILL, then at most WaitDelay for stderr
		}
	}
	// The leader is gone; anything left in its group is an orphan-to-be.
	// ESRCH (nothing left) is the normal case.
	_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
	c.watchdog.release()
	_ = c.stdout.Close()
}

// ended describes how the child ended, once it has: an exit status, or a
// signal other than a SIGKILL the gateway sent itself; plus why the gateway
// cut its stdout, if it did. It is empty while the child runs.
func (c *child) ended() string {
	select {
	case <-c.exited:
	default:
		return ""
	}
	c.mu.Lock()
	killed, cut, junk := c.killed, c.cut, c.junk
	c.mu.Unlock()
	var parts []string
	if cut != nil {
		parts = append(parts, cut.Error())
	}
	if junk != "" {
		// The usual cause: a server that logs to stdout, where mcp-go
		// skips what is not JSON and the answers may never come.
		parts = append(parts, fmt.Sprintf("stdout had a line that is not JSON-RPC: %q (logs belong on stderr)", junk))
	}
	st := c.cmd.ProcessState
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case st.Exited():
		parts = append(parts, fmt.Sprintf("the process exited with status %d", st.ExitCode()))
	case ws.Signaled() && (ws.Signal() != syscall.SIGKILL || !killed):
		parts = append(parts, "the process was killed by "+st.String())
	}
	return strings.Join(parts, "; ")
}

// limitedStdout is the child's stdout with each line bounded by the
// limit. A line past it that answers one of the gateway's requests is
// dropped and replaced by an error response for that request, so that the
// call it answers, and only that one, gets the limit error and the server
// keeps serving. Any other line past the limit (a flood of output that is
// no answer) cuts stdout and kills the child.
func (c *child) limitedStdout() *BoundedLines {
	watched := &junkWatcher{r: pipeIO(c.stdout), onJunk: func(line string) {
		c.mu.Lock()
		c.junk = line
		c.mu.Unlock()
	}}
	return boundedStdout(watched, c.limit, func(err error) {
		c.mu.Lock()
		c.cut = err
		c.mu.Unlock()
		c.kill()
	})
}

// boundedStdout is a stdio server's stdout r with each line bounded by
// limit (see limitedStdout): cut is told why stdout is cut, when it is.
func boundedStdout(r io.Reader, limit int64, cut func(error)) *BoundedLines {
	return NewBoundedLines(r, limit, func(prefix []byte) ([]byte, error) {
		if id, ok := LeadingID(prefix).(string); ok && strings.HasPrefix(id, requestIDPrefix) {
			return ErrorLine(id, tooLargeCode, (&TooLargeError{Limit: limit}).Error()), nil
		}
		err := fmt.Errorf("the server wrote a message longer than %d bytes on stdout (max_result_bytes)", limit)
		cut(err)
		return nil, err
	})
}

// stillStarting reports a stdio server whose process runs but has not
// answered initialize: at the connect timeout, it is most likely still
// starting (a package manager fetching it), not broken.
func (u *Conn) stillStarting() bool {
	return u.child != nil && !u.answered.Load() && u.child.ended() == ""
}

// startingError is a connect timeout that hit a server still starting.
// It says so, and what to do, instead of a bare "no answer to initialize".
type startingError struct {
	after   time.Duration
	command string
}

func (e *startingError) Error() string {
	hint := ""
	switch name := filepath.Base(e.command); name {
	case "npx", "pnpx", "bunx", "uvx":
		hint = " (" + name + " may still be downloading the package)"
	}
	return fmt.Sprintf("still starting after %s%s; raise connect_timeout", e.after, hint)
}

// Unwrap makes the error a context.DeadlineExceeded, as the timeout it is.
func (e *startingError) Unwrap() error { return context.DeadlineExceeded }
