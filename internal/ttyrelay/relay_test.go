//go:build linux

package ttyrelay

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestRequestPrefixAtEnd(t *testing.T) {
	want := []byte(HangupRequest + "tok\a")
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"ls\r", 0},
		{"\x1b", 1}, // Esc in vi: 1 byte, never held (only 3 or more are)
		{"abc\x1b]tux", 5},
		{"\x1b]tuxlab;hangup;to", len(want) - 2},
		{"\x1b]tuxlab;hangup;tok\a", 0}, // whole: found by bytes.Index, not held
	} {
		if got := requestPrefixAtEnd([]byte(tt.in), want); got != tt.want {
			t.Errorf("requestPrefixAtEnd(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestSessionOf reads the session of a process whose name holds a space and
// a parenthesis, which end the name field of /proc/PID/stat early for a
// reader that splits on the first ")".
func TestSessionOf(t *testing.T) {
	dir := t.TempDir()
	name := dir + "/a) b"
	if err := os.Symlink("/bin/sleep", name); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	mine, _ := sessionOf(os.Getpid())
	got, ok := sessionOf(cmd.Process.Pid)
	if !ok || got != mine {
		t.Fatalf("sessionOf(%d) = %d, %t; want %d (this test's session)", cmd.Process.Pid, got, ok, mine)
	}
	found := false
	for _, pid := range sessionMembers(mine) {
		found = found || pid == cmd.Process.Pid
	}
	if !found {
		t.Fatalf("sessionMembers(%d) misses %s", mine, strconv.Itoa(cmd.Process.Pid))
	}
}
