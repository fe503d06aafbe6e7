package search

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time the calling OS thread has used
// (CLOCK_THREAD_CPUTIME_ID, nanosecond resolution). Latency percentiles in
// CPU time stay meaningful on a shared, loaded machine where wall-clock
// percentiles measure the scheduler. The caller locks the goroutine to its
// thread.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	return clockGettime(clockThreadCPUTime)
}

// processCPU returns the CPU time of the whole process, garbage collector
// included (CLOCK_PROCESS_CPUTIME_ID).
func processCPU() (time.Duration, bool) {
	const clockProcessCPUTime = 2 // CLOCK_PROCESS_CPUTIME_ID
	return clockGettime(clockProcessCPUTime)
}

func clockGettime(clock uintptr) (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
