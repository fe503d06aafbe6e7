package bridge

import (
	"syscall"
	"time"
	"unsafe"
)

// callCPU returns the CPU time of the whole process so far, garbage
// collector and every goroutine included, at nanosecond resolution
// (CLOCK_PROCESS_CPUTIME_ID; getrusage, behind processCPU, is coarser and
// dearer). Read before and after one request that runs alone, it is what
// the request cost the machine: a quantile of it holds on a loaded
// machine, where a wall-clock quantile measures the scheduler.
func callCPU() (time.Duration, bool) {
	const clockProcessCPUTime = 2 // CLOCK_PROCESS_CPUTIME_ID
	return clockGettime(clockProcessCPUTime)
}

// threadCPU returns the CPU time of the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID). For a request served on the caller's own
// goroutine (an in-process client: mcp-go's in-process transport calls the
// server's handler on it), with the goroutine locked to its thread, the
// difference is the request's own CPU time: the client's and the gateway's
// work and the garbage-collection assists charged to its allocations, but
// not the collector's background workers, which run on other threads.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	return clockGettime(clockThreadCPUTime)
}

func clockGettime(clock uintptr) (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
