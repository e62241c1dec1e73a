package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/errs"
	"tuxlab/internal/lab"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// diskFixture is a fixture whose service watches disks even where the
// engine has quotas (so these tests test the watch on every engine), with a
// BusyBox template limited to 32 MiB of disk and room in memory for the page
// cache of the writes.
type diskFixture struct {
	*fixture
	watch *sandbox.Service
	tpl   int64
}

func newDiskFixture(t *testing.T, pids int) *diskFixture {
	t.Helper()
	db := storetest.Open(t, store.SQLite)
	f := newFixture(t, db)
	ctx := context.Background()
	tpl, err := db.Sandboxes().FindTemplateByName(ctx, "BusyBox")
	if err != nil {
		t.Fatal(err)
	}
	tpl.ID, tpl.Name, tpl.DiskMB, tpl.MemoryMB, tpl.PidsLimit = 0, "small-disk", 32, 256, pids
	if err := db.Sandboxes().CreateTemplate(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	watch := f.service(t, f.rt, sandbox.Options{DiskWatchOnly: true, MaxRunningPerUser: 3, StopGrace: time.Second})
	return &diskFixture{fixture: f, watch: watch, tpl: tpl.ID}
}

func (d *diskFixture) create(t *testing.T) *sandbox.Container {
	t.Helper()
	c, err := d.watch.Create(context.Background(), d.user, sandbox.NewContainer{TemplateID: d.tpl})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs script in sandbox id as its learner and fails the test unless it succeeds.
func (d *diskFixture) run(t *testing.T, id int64, script string) string {
	t.Helper()
	res, err := d.watch.Exec(context.Background(), d.user, id, sandbox.Script{Text: script, Timeout: 30 * time.Second})
	if err != nil || !res.OK() {
		t.Fatalf("%s: %v %+v\n%s\n%s", script, err, res, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// removedOverDisk fails the test unless sandbox id was removed for its disk use.
func (d *diskFixture) removedOverDisk(t *testing.T, id int64, engineID string) {
	t.Helper()
	ctx := context.Background()
	got, err := d.db.Sandboxes().FindContainerByID(ctx, id)
	if err != nil || got.Status != sandbox.StatusError || !strings.Contains(got.StatusDetail, "over its disk limit of 32 MiB") {
		t.Fatalf("not removed for its disk use: %+v %v", got, err)
	}
	if _, err := d.rt.Inspect(ctx, engineID); !errors.Is(err, sandbox.ErrGone) {
		t.Fatalf("the engine container still holds its space: %v", err)
	}
}

const mib = 1 << 20

// usage is the engine's measure of one container's disk use.
func usage(t *testing.T, rt sandbox.Runtime, engineID string) (int64, error) {
	t.Helper()
	used, err := rt.DiskUsage(context.Background(), []string{engineID})
	if _, ok := used[engineID]; !ok && err == nil {
		t.Fatalf("no measure of %s", engineID)
	}
	return used[engineID], err
}

// TestDiskWatchCountsBlocks: the watch counts the blocks files take, not
// their lengths, so sparse files (lesson 11/05's truncate, lab 11's 4 GiB
// disk image) cost what they hold; and it counts files deleted while still
// open, which take space and are in no layer.
func TestDiskWatchCountsBlocks(t *testing.T) {
	t.Parallel()
	d := newDiskFixture(t, 64)
	ctx := context.Background()
	sparse, held := d.create(t), d.create(t)
	d.run(t, sparse.ID, "truncate -s 1G /tmp/sparse && truncate -s 4G /tmp/disk.img && truncate -s 8G /tmp/big && dd if=/dev/zero of=/tmp/data bs=1M count=8 2>/dev/null && sync")
	if used, err := usage(t, d.rt, sparse.EngineID); err != nil || used < 8*mib || used > 10*mib {
		t.Fatalf("8 MiB of data and 13 GiB of sparse files measure %d bytes (%v)", used, err)
	}
	// A file deleted while processes of the learner (two: counted once) still hold it.
	d.run(t, held.ID, "sh -c 'exec 3>/tmp/held; rm /tmp/held; dd if=/dev/zero bs=1M count=48 >&3 2>/dev/null; sleep 600 & exec sleep 600' </dev/null >/dev/null 2>&1 &\n"+
		"for i in $(seq 100); do [ $(ps -o args | grep -c '^sleep 600') = 2 ] && exit 0; sleep 0.1; done; exit 1")
	if used, err := usage(t, d.rt, held.EngineID); err != nil || used < 48*mib || used > 56*mib {
		t.Fatalf("a 48 MiB file deleted while two processes hold it open measures %d bytes (%v)", used, err)
	}
	if err := d.watch.WatchDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := d.watch.Get(ctx, d.user, sparse.ID); err != nil || got.Status != sandbox.StatusRunning {
		t.Fatalf("sparse files under the limit: %+v %v", got, err)
	}
	d.removedOverDisk(t, held.ID, held.EngineID)
}

// TestDiskMeasuredOnStopAndStart: a sandbox stopped within an interval of a
// write past its limit does not keep it: it is measured before tuxlab stops
// it, and before anyone uses it again when it stopped otherwise (its root
// ended the keep-alive).
func TestDiskMeasuredOnStopAndStart(t *testing.T) {
	t.Parallel()
	d := newDiskFixture(t, 64)
	ctx := context.Background()
	const fill = "dd if=/dev/zero of=/tmp/fill bs=1M count=48 2>/dev/null && sync"
	stopped, ended := d.create(t), d.create(t)

	d.run(t, stopped.ID, fill)
	got, err := d.watch.Stop(ctx, d.user, stopped.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != sandbox.StatusError {
		t.Fatalf("stopped with 48 MiB over a 32 MiB limit: %+v", got)
	}
	d.removedOverDisk(t, stopped.ID, stopped.EngineID)

	d.run(t, ended.ID, fill)
	if err := d.rt.Stop(ctx, ended.EngineID, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.watch.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = d.watch.Start(ctx, d.user, ended.ID)
	if e, ok := errors.AsType[*errs.Error](err); !ok || e.Kind != errs.Conflict || !strings.Contains(e.Detail, "disk limit") {
		t.Fatalf("started with 48 MiB over a 32 MiB limit: %v", err)
	}
	d.removedOverDisk(t, ended.ID, ended.EngineID)
}

// TestDiskWatchWithoutAProcessSlot: a sandbox whose processes fill its PID
// limit is measured all the same, blocks and not lengths: the meter runs
// beside it, not in it.
func TestDiskWatchWithoutAProcessSlot(t *testing.T) {
	t.Parallel()
	d := newDiskFixture(t, 12)
	ctx := context.Background()
	c := d.create(t)
	d.run(t, c.ID, "truncate -s 4G /tmp/sparse && dd if=/dev/zero of=/tmp/fill bs=1M count=48 2>/dev/null && sync")
	// The shell gives up when fork fails: the slots are full then.
	d.watch.Exec(ctx, d.user, c.ID, sandbox.Script{Text: fmt.Sprintf("for i in $(seq %d); do sleep 600 </dev/null >/dev/null 2>&1 & done", 20)})
	if used, err := usage(t, d.rt, c.EngineID); err != nil || used < 48*mib || used > 64*mib {
		t.Fatalf("48 MiB and a 4 GiB sparse file in a sandbox at its PID limit measure %d bytes (%v)", used, err)
	}
	if err := d.watch.WatchDisk(ctx); err != nil {
		t.Fatal(err)
	}
	d.removedOverDisk(t, c.ID, c.EngineID)
}

// TestStorageLabFitsTheDefaultDisk: lab 11 (storage) makes a 4 GiB sparse
// disk image and two more, on the Debian image; with the default limit
// (2048 MiB) and the watch, its sandbox lives on through setup and solution.
func TestStorageLabFitsTheDefaultDisk(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	db := storetest.Open(t, store.SQLite)
	f := newFixture(t, db)
	ctx := context.Background()
	files, err := lab.ReadFiles(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(files, func(f *lab.File) bool { return f.Slug == "storage-lab" })
	if i < 0 {
		t.Fatal("no storage-lab in the bundled curriculum")
	}
	tpl, err := db.Sandboxes().FindTemplateByName(ctx, files[i].Template)
	if err != nil {
		t.Fatal(err)
	}
	watch := f.service(t, f.rt, sandbox.Options{DiskWatchOnly: true})
	c, err := watch.Create(ctx, f.user, sandbox.NewContainer{TemplateID: tpl.ID})
	if err != nil {
		t.Fatal(err)
	}
	res, err := watch.ExecIn(ctx, c,
		sandbox.Script{Text: files[i].Setup, AsRoot: true, Timeout: 2 * time.Minute},
		sandbox.Script{Text: files[i].Solution, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.OK() {
			t.Fatalf("setup or solution: %+v", r)
		}
	}
	used, err := usage(t, f.rt, c.EngineID)
	if err != nil || used > 256*mib {
		t.Fatalf("the lab's files measure %d MiB (%v)", used/mib, err)
	}
	if err := watch.WatchDisk(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := watch.Get(ctx, f.user, c.ID); err != nil || got.Status != sandbox.StatusRunning {
		t.Fatalf("after the watch: %+v %v", got, err)
	}
	t.Logf("lab 11 after its solution: %d MiB", used/mib)
}
