package testenv

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// waitDelay bounds how long a command's I/O may outlive the command itself,
// so a grandchild holding our pipes cannot hang a test.
const waitDelay = 5 * time.Second

// commandContext returns a command that runs in its own process group and
// whose whole group is killed when ctx ends, so nothing it spawned survives.
func commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	SetProcessGroup(cmd)
	cmd.Cancel = func() error {
		return KillProcessGroup(cmd.Process.Pid)
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

// CommandContext is exec.CommandContext for a command that may spawn
// others: it runs in its own process group, the whole group is killed when
// ctx ends, and its I/O cannot outlive it by more than a few seconds.
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	return commandContext(ctx, name, args...)
}

// SetProcessGroup makes cmd start in a new process group (so
// [KillProcessGroup] reaches everything it spawns) and asks the kernel to kill
// it if the test process dies first.
func SetProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// SyncBuffer collects a process's output; String may be called while the
// process still writes.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitFor returns what was written once done accepts it, or what was
// written when ctx ends. A process's output reaches the buffer through a
// copying goroutine, so a line the process wrote before it answered on
// another pipe may not be here yet when the answer is read: a test that
// checks output after an answer waits for it with WaitFor.
func (b *SyncBuffer) WaitFor(ctx context.Context, done func(string) bool) string {
	for {
		s := b.String()
		if done(s) {
			return s
		}
		select {
		case <-ctx.Done():
			return b.String()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ansiEscape matches the colour codes the conformance CLI prints even when
// its output is not a terminal.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// stripANSI removes terminal colour codes so logs stay readable.
func stripANSI(s string) string {
	return ansiEscape.ReplaceAllString(s, "")
}
