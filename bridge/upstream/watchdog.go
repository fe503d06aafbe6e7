package upstream

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// No orphans, even when the gateway is killed with SIGKILL. A stdio
// server's parent-death signal (SIGKILL, see startChild) reaches only the
// server itself: the kernel clears it for the processes the server starts,
// so a grandchild (npx's node, "sh -c 'sleep 300 & exec server'") would
// live on under init. And nothing the gateway runs after a SIGKILL can
// clean up. So each server's process group gets a watchdog: a small sh
// that waits on a pipe from the gateway. When the gateway stops the server
// itself it writes "done" and the watchdog exits; when the gateway dies the
// pipe closes unwritten, and the watchdog sends the group SIGTERM and, a
// second later, SIGKILL.
//
// Why this and not the alternatives: PR_SET_CHILD_SUBREAPER makes the
// gateway inherit its orphans, but not survive them, so it does nothing for
// a SIGKILL; a cgroup would catch even the processes that leave the group
// (setsid), but needs cgroup delegation that a desktop user or a container
// seldom has; re-executing toolbridge as the watchdog would tie the upstream
// package to the CLI. A process that calls setsid or setpgid to leave its
// group escapes the watchdog; that is the documented limit. sh is on every
// Unix, macOS included, where there is no parent-death signal at all and
// the watchdog is what stops the server.

// watchdogScript runs as sh -c with the process group id as $1. It ignores
// the terminal's SIGINT and SIGHUP: the gateway handles those itself and
// then releases the watchdog. The kill utility, not the shell's builtin:
// dash's cannot signal a process group.
const watchdogScript = `trap '' INT HUP
read -r word
[ "$word" = done ] && exit 0
env kill -s TERM -- -"$1" 2>/dev/null
sleep 1
env kill -s KILL -- -"$1" 2>/dev/null
exit 0`

// watchdog is the watcher of one process group.
type watchdog struct {
	done func() // tells the watchdog the group is stopped, and reaps it
}

// startWatchdog starts the watchdog of process group pgid. It returns nil
// if sh cannot be run: the parent-death signal still covers the server.
func startWatchdog(pgid int) *watchdog {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "toolbridge-watchdog", strconv.Itoa(pgid))
	cmd.Stdin = r
	// Its own group: a signal to the gateway's group (Ctrl-C in a
	// terminal) must not stop the watchdog before the gateway releases it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	var once sync.Once
	return &watchdog{done: func() {
		once.Do(func() {
			_, _ = io.WriteString(w, "done\n")
			_ = w.Close()
		})
		<-done
	}}
}

// release stops the watchdog of a group the gateway has stopped itself.
func (d *watchdog) release() {
	if d != nil {
		d.done()
	}
}
