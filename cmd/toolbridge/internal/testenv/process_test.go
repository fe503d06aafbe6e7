package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		pid, ppid int
		wantErr   bool
	}{
		{name: "plain", line: "1234 (node) S 99 1234 1234 0 -1", pid: 1234, ppid: 99},
		{name: "comm with spaces and parens", line: "77 (a (b) c) R 5 77 77", pid: 77, ppid: 5},
		{name: "zombie", line: "8 (sleep) Z 1 8 8", pid: 8, ppid: 1},
		{name: "empty", line: "", wantErr: true},
		{name: "no comm", line: "12 S 1", wantErr: true},
		{name: "no ppid", line: "12 (x) S", wantErr: true},
		{name: "bad pid", line: "abc (x) S 1", wantErr: true},
		{name: "bad ppid", line: "12 (x) S one", wantErr: true},
		{name: "paren before pid", line: "(x) 12 S 1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, ppid, err := parseProcStat(tt.line)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseProcStat(%q) = %d, %d, want an error", tt.line, pid, ppid)
				}
				return
			}
			if err != nil || pid != tt.pid || ppid != tt.ppid {
				t.Fatalf("parseProcStat(%q) = %d, %d, %v; want %d, %d", tt.line, pid, ppid, err, tt.pid, tt.ppid)
			}
		})
	}
}

func TestReadProcTableFakeRoot(t *testing.T) {
	root := t.TempDir()
	write := func(dir, content string) {
		t.Helper()
		if err := os.MkdirAll(root+"/"+dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(root+"/"+dir+"/stat", []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("10", "10 (init) S 0 10 10")
	write("11", "11 (child a) S 10 11 11")
	write("12", "12 (grandchild) S 11 12 12")
	write("13", "13 (child b) Z 10 13 13")
	write("14", "garbage")     // unparsable: skipped
	write("15", "")            // no stat file (exited): skipped
	write("self", "1 (x) S 0") // not a pid directory
	procs, err := readProcTable(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := childrenOf(procs, 10), []int{11, 13}; !slices.Equal(got, want) {
		t.Errorf("childrenOf(10) = %v, want %v", got, want)
	}
	if got := childrenOf(procs, 12); got != nil {
		t.Errorf("childrenOf(12) = %v, want none", got)
	}
	if _, err := readProcTable(root + "/missing"); err == nil {
		t.Error("readProcTable on a missing root: want an error")
	}
}

// TestChildProcessesTracksRealChildren proves the leak check can fail: a
// running child and its grandchild are seen, and gone after KillProcessGroup.
func TestChildProcessesTracksRealChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = KillProcessGroup(pid) })

	if !slices.Contains(ChildProcesses(os.Getpid()), pid) {
		t.Fatalf("ChildProcesses(self) = %v, want it to contain %d", ChildProcesses(os.Getpid()), pid)
	}
	var grandchildren []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if grandchildren = ChildProcesses(pid); len(grandchildren) > 0 {
			break
		}
	}
	if len(grandchildren) != 1 {
		t.Fatalf("ChildProcesses(sh) = %v, want the sleep", grandchildren)
	}
	if d := DescendantProcesses(os.Getpid()); !slices.Contains(d, pid) || !slices.Contains(d, grandchildren[0]) {
		t.Fatalf("DescendantProcesses(self) = %v, want %d and %d", d, pid, grandchildren[0])
	}

	if err := KillProcessGroup(pid); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if slices.Contains(ChildProcesses(os.Getpid()), pid) || ProcessAlive(pid) {
		t.Errorf("child %d still present after kill and wait", pid)
	}
	// The orphaned sleep is reparented to init, which reaps it (or leaves a
	// zombie where init does not reap); either way it must die with its group.
	for deadline := time.Now().Add(10 * time.Second); runningNotZombie(grandchildren[0]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived KillProcessGroup", grandchildren[0])
		}
	}
	// Killing a group that no longer exists is fine.
	if err := KillProcessGroup(pid); err != nil {
		t.Errorf("KillProcessGroup on a dead group: %v", err)
	}
}

func TestKillProcessGroupRejectsBadIDs(t *testing.T) {
	for _, pgid := range []int{0, -1} {
		if err := KillProcessGroup(pgid); err == nil {
			t.Errorf("KillProcessGroup(%d): want an error (it would signal our own group or everyone)", pgid)
		}
	}
}

func TestFreePortIsBindable(t *testing.T) {
	port := FreePort(t)
	if port <= 0 || port > 65535 {
		t.Fatalf("FreePort = %d", port)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("binding the free port %d: %v", port, err)
	}
	l.Close()
}

// runningNotZombie reports whether pid exists and has not exited.
func runningNotZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
