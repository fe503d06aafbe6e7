//go:build !linux

package search

import "time"

// threadCPU is unavailable off Linux; benchmarks then report wall-clock
// percentiles only.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU is unavailable off Linux.
func processCPU() (time.Duration, bool) { return 0, false }
