//go:build !linux

package main

import "io"

// pollableStdin returns in as it is: only Linux pipes and sockets are
// switched to the poller (see stdin_linux.go).
func pollableStdin(in io.Reader) (io.Reader, func()) { return in, func() {} }
