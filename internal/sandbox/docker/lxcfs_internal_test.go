package docker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLXCFSMountsOnlyWhileItAnswers: a directory that is no LXCFS is
// refused, and a mount that stops answering (lxcfs died: its files fail to
// read) gives new containers no LXCFS files, with one warning, rather than
// binds that would make them fail to start; when it answers again, the
// files are bound again.
func TestLXCFSMountsOnlyWhileItAnswers(t *testing.T) {
	dir := t.TempDir()
	r := &Runtime{}
	if err := r.UseLXCFS(dir, nil); err == nil {
		t.Fatal("an empty directory taken for LXCFS")
	}
	meminfo := filepath.Join(dir, "proc/meminfo")
	os.MkdirAll(filepath.Dir(meminfo), 0o755)
	os.WriteFile(meminfo, []byte("MemTotal: 98304 kB\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "proc/loadavg"), []byte("0.00 0.00 0.00 1/2 9\n"), 0o644)
	var warnings []string
	if err := r.UseLXCFS(dir, func(msg string, _ ...any) { warnings = append(warnings, msg) }); err != nil {
		t.Fatal(err)
	}
	if m := r.lxcfs.mounts(); len(m) != 2 || m[0].Source != meminfo || m[0].Target != "/proc/meminfo" || !m[0].ReadOnly {
		t.Fatalf("mounts %+v", m)
	}
	os.Remove(meminfo) // as a dead lxcfs's files fail to read
	for range 2 {
		if m := r.lxcfs.mounts(); m != nil {
			t.Fatalf("mounts of a stale LXCFS: %+v", m)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings %q", warnings)
	}
	os.WriteFile(meminfo, []byte("MemTotal: 98304 kB\n"), 0o644)
	if m := r.lxcfs.mounts(); len(m) != 2 || len(warnings) != 2 {
		t.Fatalf("mounts %+v, warnings %q", m, warnings)
	}
}

// TestCPUSetGoesRoundRobin: whole CPUs get CPUs of their own, in turn;
// fractions and all CPUs get none.
func TestCPUSetGoesRoundRobin(t *testing.T) {
	r := &Runtime{}
	r.ncpu.Store(4)
	got := []string{r.cpuset(t.Context(), 1e9), r.cpuset(t.Context(), 2e9), r.cpuset(t.Context(), 2e9),
		r.cpuset(t.Context(), 5e8), r.cpuset(t.Context(), 4e9), r.cpuset(t.Context(), 0)}
	want := []string{"0", "1,2", "3,0", "", "", ""}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cpusets %q, want %q", got, want)
		}
	}
}
