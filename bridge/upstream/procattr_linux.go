//go:build linux

package upstream

import "syscall"

// childProcAttr puts a stdio server in a process group of its own, with
// SIGKILL as its parent-death signal: not SIGTERM, since a server stuck in
// a handler, or one that ignores SIGTERM, must not outlive the gateway. A
// graceful stop is the gateway's own (see child.stop); this signal is only
// for the gateway's death.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
