package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another
// process may take it before the caller binds it, so servers started on it
// should be retried on a bind failure (as [ConformanceServer] does).
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return port
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// KillProcessGroup sends SIGKILL to the process group led by pgid (a process
// started with [SetProcessGroup] leads a group whose id is its pid). A group
// that is already gone is not an error.
func KillProcessGroup(pgid int) error {
	if pgid <= 0 {
		return fmt.Errorf("killing process group %d: not a valid group id", pgid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	return nil
}

// ChildProcesses returns the pids (ascending) of the direct children of pid,
// read from /proc, zombies included: a child that exited but was never waited
// for is still a leak. It returns nil when there are none or /proc cannot be
// read, so a test asserting "no children" must also check a positive case
// (the server's pid is listed while it runs) to prove the check can fail.
func ChildProcesses(pid int) []int {
	procs, err := readProcTable("/proc")
	if err != nil {
		return nil
	}
	return childrenOf(procs, pid)
}

// DescendantProcesses returns the pids (ascending) of every process below pid:
// children, their children, and so on. Useful when the process under test
// starts upstream servers of its own.
func DescendantProcesses(pid int) []int {
	procs, err := readProcTable("/proc")
	if err != nil {
		return nil
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		kids := childrenOf(procs, queue[0])
		queue = append(queue[1:], kids...)
		out = append(out, kids...)
	}
	slices.Sort(out)
	return out
}

// ProcessAlive reports whether pid names a process that has not been reaped
// (a zombie counts as alive: its parent still has to wait for it).
func ProcessAlive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// procEntry is one process's pid and parent pid.
type procEntry struct {
	pid, ppid int
}

// childrenOf picks the entries whose parent is pid.
func childrenOf(procs []procEntry, pid int) []int {
	var out []int
	for _, p := range procs {
		if p.ppid == pid {
			out = append(out, p.pid)
		}
	}
	slices.Sort(out)
	return out
}

// readProcTable reads pid and ppid of every process under root (normally
// /proc). Processes that exit while it reads are skipped.
func readProcTable(root string) ([]procEntry, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	var procs []procEntry
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		pid, ppid, err := parseProcStat(string(data))
		if err != nil {
			continue
		}
		procs = append(procs, procEntry{pid: pid, ppid: ppid})
	}
	return procs, nil
}

// parseProcStat extracts pid and ppid from a /proc/PID/stat line:
// "PID (COMM) STATE PPID ...". COMM may itself hold spaces and parentheses,
// so the fields after it are found from the last ')'.
func parseProcStat(line string) (pid, ppid int, err error) {
	open := strings.IndexByte(line, '(')
	closing := strings.LastIndexByte(line, ')')
	if open < 1 || closing < open {
		return 0, 0, fmt.Errorf("parsing proc stat %q: no (comm) field", truncate(line, 80))
	}
	pid, err = strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return 0, 0, fmt.Errorf("parsing proc stat pid: %w", err)
	}
	rest := strings.Fields(line[closing+1:])
	if len(rest) < 2 {
		return 0, 0, fmt.Errorf("parsing proc stat %q: missing state or ppid", truncate(line, 80))
	}
	ppid, err = strconv.Atoi(rest[1])
	if err != nil {
		return 0, 0, fmt.Errorf("parsing proc stat ppid: %w", err)
	}
	return pid, ppid, nil
}

// truncate shortens s for error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
