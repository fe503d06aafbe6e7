//go:build !linux

package bridge

import "time"

// callCPU is unavailable off Linux: the benchmarks then report wall-clock
// quantiles only.
func callCPU() (time.Duration, bool) { return 0, false }

// threadCPU is unavailable off Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
