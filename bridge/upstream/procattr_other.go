//go:build !linux

package upstream

import "syscall"

// childProcAttr puts a stdio server in a process group of its own. Outside
// Linux there is no parent-death signal: the watchdog (see watchdog.go) is
// what stops the server's group when the gateway dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
