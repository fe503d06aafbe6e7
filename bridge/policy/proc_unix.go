//go:build unix

package policy

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own and makes its
// cancellation kill that whole group, so a hook that timed out leaves no
// children behind (a shell script's sleep, a pipeline).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The negative pid addresses the group whose id is the pid.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
