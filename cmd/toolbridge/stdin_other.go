//go:build !linux

package main

import "io"

// pollableStdin returns in as it is: only Linux pipes and sockets are
// switched to the poller (see stdin_linux.go).
func pollableStdin(in io.Reader) (io.Reader, func()) { return in, func() {} }

// pollableStdout returns out as it is (see stdin_linux.go).
func pollableStdout(out io.Writer) (io.Writer, func()) { return out, func() {} }
