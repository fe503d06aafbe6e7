//go:build !unix

package policy

import "os/exec"

// ownProcessGroup is a no-op where process groups do not exist: the
// default cancellation kills the hook process itself.
func ownProcessGroup(*exec.Cmd) {}
