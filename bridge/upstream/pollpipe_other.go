//go:build !linux

package upstream

import "os"

// PollPipe is Linux only (see pollpipe_linux.go); elsewhere NewPollPipe
// refuses every file and callers keep the *os.File.
type PollPipe struct{ *os.File }

// NewPollPipe refuses f: raw system calls are used on Linux only.
func NewPollPipe(f *os.File) (*PollPipe, bool) { return nil, false }
