package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
)

// bootWait bounds a machine's boot under QEMU's emulation on a busy host
// (20 s quiet, minutes under load): a deadline against a hung test, not a
// measure.
const bootWait = 6 * time.Minute

// awaitPrompt waits for the learner's prompt in a machine's terminal, which
// comes once the machine has booted.
func awaitPrompt(t *testing.T, tc *apitest.Terminal) { awaitPromptTB(t, tc) }

func awaitPromptTB(t testing.TB, tc *apitest.Terminal) {
	t.Helper()
	tc.Await(regexp.MustCompile(`learner@[a-z0-9-]+:`), 0, bootWait)
}

// machineRuns types script into tc and returns what it printed, between
// markers (so the echo of the typed line is left out).
func machineRuns(t *testing.T, tc *apitest.Terminal, script string) string {
	t.Helper()
	from := len(tc.Output())
	tc.Type(script + "; echo end-of-$((6*7))\n")
	tc.Await(regexp.MustCompile(`end-of-42`), from, 2*time.Minute)
	out := tc.Text(from)
	out = out[strings.LastIndex(out, "end-of-$((6*7))")+len("end-of-$((6*7))") : strings.LastIndex(out, "end-of-42")]
	return strings.TrimSpace(out)
}

// TestMachineThroughTheAPI is issue 23's walk, as a learner: the bundled
// machine template makes a virtual machine whose terminal is the usual
// WebSocket; in it systemd is PID 1, the kernel is the machine image's, the
// template's blank disks are there, LVM, mkfs, mount and fstab work and
// survive a reboot from inside (the socket says the machine is
// restarting), nft loads a table, swapon works; another learner gets 404;
// delete leaves no QEMU process and no file.
func TestMachineThroughTheAPI(t *testing.T) {
	t.Parallel()
	apitest.RequireMachines(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	other := e.CreateUser("other", auth.RoleStudent)

	var tpl templateBody
	for _, x := range templatesOf(t, e) {
		if x.Name == sandbox.MachineTemplateName {
			tpl = x
		}
	}
	if tpl.Kind != "machine" || fmt.Sprint(tpl.ExtraDisksMB) != "[1024 1024]" {
		t.Fatalf("bundled machine template: %+v", tpl)
	}
	var c containerBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
		Body: map[string]any{"template_id": tpl.ID}}).Expect(t, http.StatusCreated).JSON(t, &c)
	if c.Status != "running" || c.Kind != "machine" {
		t.Fatalf("created %+v", c)
	}
	engine := engineID(t, e, c.ID)
	e.Get(fmt.Sprintf("/api/containers/%d", c.ID), other.Token).Expect(t, http.StatusNotFound)

	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 120, 40)
	awaitPrompt(t, tc)
	if got := machineRuns(t, tc, "cat /proc/1/comm"); got != "systemd" {
		t.Errorf("PID 1 is %q, not systemd", got)
	}
	release, err := os.ReadFile(filepath.Join(machineImageDir(), "kernel.release"))
	if err != nil {
		t.Fatal(err)
	}
	if got := machineRuns(t, tc, "uname -r"); got != strings.TrimSpace(string(release)) {
		t.Errorf("uname -r is %q, not the machine image's kernel %q", got, strings.TrimSpace(string(release)))
	}
	if got := machineRuns(t, tc, "lsblk -dn -o NAME,SIZE /dev/vdb /dev/vdc | tr -s ' '"); got != "vdb 1G\r\nvdc 1G" && got != "vdb 1G\nvdc 1G" {
		t.Errorf("blank disks: %q", got)
	}
	// Storage a container cannot have, kept across a reboot.
	machineRuns(t, tc, "sudo pvcreate -q /dev/vdb && sudo vgcreate -q data /dev/vdb && sudo lvcreate -q -n files -L 200M data && "+
		"sudo mkfs.ext4 -q /dev/data/files && sudo mkdir -p /srv/files && "+
		"echo '/dev/data/files /srv/files ext4 defaults 0 2' | sudo tee -a /etc/fstab >/dev/null && sudo mount -a && "+
		"echo kept | sudo tee /srv/files/note >/dev/null && sync")
	if got := machineRuns(t, tc, "sudo nft add table inet lab && sudo nft list tables"); !strings.Contains(got, "table inet lab") {
		t.Errorf("nft: %q", got)
	}
	if got := machineRuns(t, tc, "sudo mkswap -q /dev/vdc >/dev/null && sudo swapon /dev/vdc && sudo swapon --show=NAME --noheadings"); got != "/dev/vdc" {
		t.Errorf("swapon: %q", got)
	}

	tc.Type("sudo reboot\n")
	tc.Ended(2 * time.Minute)
	if !hasControl(tc, "error", "restarting") {
		t.Errorf("the socket did not say the machine is restarting: %s", tc.Tail())
	}
	tc = e.OpenTerminal(t, c.TerminalURL, u.Token, 120, 40)
	awaitPrompt(t, tc)
	if got := machineRuns(t, tc, "cat /srv/files/note; findmnt -n -o SOURCE /srv/files"); got != "kept\r\n/dev/mapper/data-files" && got != "kept\n/dev/mapper/data-files" {
		t.Errorf("after the reboot: %q", got)
	}
	tc.Hangup()

	e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", c.ID), Token: u.Token}).Expect(t, http.StatusOK)
	if out, _ := exec.Command("pgrep", "-f", engine).Output(); len(out) > 0 {
		t.Errorf("a process of the machine is left after delete: %s", out)
	}
	if _, err := os.Stat(filepath.Join(e.Config.MachineStateDir, engine)); !os.IsNotExist(err) {
		t.Errorf("the machine's directory is left after delete: %v", err)
	}
}

// machineImageDir is the current machine image's directory.
func machineImageDir() string {
	dir := os.Getenv("TUXLAB_MACHINE_DIR")
	if dir == "" {
		dir = qemu.DefaultImageDir
	}
	return filepath.Join(dir, qemu.DefaultImage)
}

// templatesOf lists the templates as anyone sees them.
func templatesOf(t *testing.T, e *apitest.Env) []templateBody {
	t.Helper()
	var ts []templateBody
	e.Get("/api/sandbox-templates", "").Expect(t, 200).JSON(t, &ts)
	return ts
}

// hasControl reports whether tc received a control message of type typ
// whose detail contains words.
func hasControl(tc *apitest.Terminal, typ, words string) bool {
	for _, m := range tc.Control() {
		if m["type"] == typ && strings.Contains(fmt.Sprint(m["detail"]), words) {
			return true
		}
	}
	return false
}

// TestLabOfTwoMachines: a lab declares a server and a client; a start makes
// both on a private segment of the attempt's own, each with its host name,
// the client resolving the server's; a task checked on the client fails
// until the learner enables SSH on the server, through the server's
// terminal; submitting removes both machines. Lab validation refuses
// machines a lab cannot have.
func TestLabOfTwoMachines(t *testing.T) {
	t.Parallel()
	apitest.RequireMachines(t)
	e := apitest.New(t, "sqlite")
	admin := e.CreateUser("root", auth.RoleAdmin)
	u := e.CreateUser("learner", auth.RoleStudent)
	var machine int64
	for _, x := range templatesOf(t, e) {
		if x.Name == sandbox.MachineTemplateName {
			machine = x.ID
		}
	}
	// Checked on the client, against the server: the client resolves the
	// server by name and connects to its port 22.
	check := "#!/bin/bash\n# two-machines-check-secret\nip=$(getent hosts server | awk '{print $1; exit}')\n" +
		"[ -n \"$ip\" ] || { echo 'FAIL: the client cannot resolve the name server'; exit 1; }\n" +
		"timeout 5 bash -c \"exec 3<>/dev/tcp/$ip/22\" 2>/dev/null || { echo 'FAIL: nothing answers on the server port 22'; exit 1; }\n"
	hostCheck := "#!/bin/sh\n[ \"$(hostname)\" = client ] || { echo 'FAIL: not the client'; exit 1; }\n"
	apitest.RegisterSecret(check, "a check of the two-machine lab")
	body := map[string]any{
		"description": "SSH from one machine to another.",
		"machines":    []map[string]any{{"name": "server", "solution": "sudo systemctl enable --now ssh"}, {"name": "client"}},
		"tasks": []map[string]any{
			{"title": "The client reaches the server's SSH", "machine": "client", "check": check},
			{"title": "Checked on the client", "machine": "client", "check": hostCheck},
		},
	}
	for _, bad := range []struct {
		machines []map[string]any
		task     string
		loc      string
	}{
		{[]map[string]any{{"name": "only"}}, "only", "body.machines"},
		{[]map[string]any{{"name": "a"}, {"name": "a"}}, "a", "body.machines.1.name"},
		{[]map[string]any{{"name": "Server!"}, {"name": "b"}}, "b", "body.machines.0.name"},
		{[]map[string]any{{"name": "a"}, {"name": "b"}}, "c", "body.tasks.0.machine"},
	} {
		b := map[string]any{"machines": bad.machines, "tasks": []map[string]any{{"title": "x", "machine": bad.task, "check": hostCheck}}}
		r := post(e, admin.Token, fmt.Sprintf("/api/admin/laboratories?slug=bad&title=Bad&template_id=%d", machine), b).Expect(t, 422)
		if got := strings.Join(locs(t, r), ","); !strings.Contains(got, bad.loc) {
			t.Errorf("%v: locs %s, want %s", bad.machines, got, bad.loc)
		}
	}
	labID := createLab(t, e, admin, fmt.Sprintf("slug=two&title=Two+machines&template_id=%d&time_limit_minutes=60", machine), body)

	var at struct {
		labAttemptBody
		Machines []struct {
			Name        string  `json:"name"`
			ContainerID *int64  `json:"container_id"`
			TerminalURL *string `json:"terminal_url"`
		} `json:"machines"`
	}
	post(e, u.Token, fmt.Sprintf("/api/laboratories/%d/start", labID), nil).Expect(t, 201).JSON(t, &at)
	if len(at.Machines) != 2 || at.Machines[0].Name != "server" || at.Machines[1].Name != "client" ||
		at.ContainerID == nil || *at.ContainerID != *at.Machines[0].ContainerID {
		t.Fatalf("attempt machines: %+v", at)
	}
	checkPath := fmt.Sprintf("/api/laboratories/%d/check", labID)
	var checked labAttemptBody
	post(e, u.Token, checkPath, nil).Expect(t, 200).JSON(t, &checked)
	if checked.Tasks[0].Passed || strings.Join(checked.Tasks[0].Feedback, " ") != "nothing answers on the server port 22" || !checked.Tasks[1].Passed {
		t.Fatalf("fresh check: %+v", checked.Tasks)
	}

	tc := e.OpenTerminal(t, *at.Machines[0].TerminalURL, u.Token, 120, 40)
	awaitPrompt(t, tc)
	if got := machineRuns(t, tc, "hostname; getent hosts client | wc -l"); got != "server\r\n1" && got != "server\n1" {
		t.Errorf("the server's name and its view of the client: %q", got)
	}
	machineRuns(t, tc, "sudo systemctl enable --now ssh")
	tc.Hangup()

	eventually(t, time.Minute, "the check interval", func() bool {
		r := post(e, u.Token, checkPath, nil)
		if r.Status != 200 {
			return false
		}
		r.JSON(t, &checked)
		return true
	})
	if !checked.Tasks[0].Passed {
		t.Fatalf("solved, the cross-machine check: %+v", checked.Tasks)
	}
	var done labAttemptBody
	post(e, u.Token, fmt.Sprintf("/api/laboratories/%d/submit", labID), nil).Expect(t, 200).JSON(t, &done)
	if !done.Passed || done.SandboxRemovedAt == nil {
		t.Fatalf("submitted: %+v", done)
	}
	for _, m := range at.Machines {
		e.Get(fmt.Sprintf("/api/containers/%d", *m.ContainerID), u.Token).Expect(t, http.StatusNotFound)
	}
}

// TestMachinesReconciled: what a crash of tuxlab leaves is put right by the
// reconciliation a start runs: a machine whose row is gone (tuxlab killed
// between the two) is removed with its QEMU process and files, and a row
// whose QEMU was killed shows stopped with why, and starts again.
func TestMachinesReconciled(t *testing.T) {
	t.Parallel()
	apitest.RequireMachines(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	var machine int64
	for _, x := range templatesOf(t, e) {
		if x.Name == sandbox.MachineTemplateName {
			machine = x.ID
		}
	}
	ctx := context.Background()
	orphan := createSandbox(t, e, u.Token, machine)
	orphanEngine := engineID(t, e, orphan.ID)
	if err := e.DB.Sandboxes().DeleteContainer(ctx, orphan.ID); err != nil {
		t.Fatal(err)
	}
	killed := createSandbox(t, e, u.Token, machine)
	killedEngine := engineID(t, e, killed.ID)
	pid, err := os.ReadFile(filepath.Join(e.Config.MachineStateDir, killedEngine, "qemu.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("kill", "-9", strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
		t.Fatalf("kill QEMU: %v %s", err, out)
	}

	// A restart of tuxlab reconciles at once.
	r := e.Replica()
	if err := r.App.Sandboxes.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("pgrep", "-f", orphanEngine).Output(); len(out) > 0 {
		t.Errorf("the orphaned machine's QEMU runs on: %s", out)
	}
	if _, err := os.Stat(filepath.Join(e.Config.MachineStateDir, orphanEngine)); !os.IsNotExist(err) {
		t.Errorf("the orphaned machine's directory is left: %v", err)
	}
	var c containerBody
	eventually(t, time.Minute, "the killed machine to show stopped", func() bool {
		r.Get(fmt.Sprintf("/api/containers/%d", killed.ID), u.Token).Expect(t, 200).JSON(t, &c)
		return c.Status == "stopped"
	})
	post(r, u.Token, fmt.Sprintf("/api/containers/%d/start", killed.ID), nil).Expect(t, 200).JSON(t, &c)
	if c.Status != "running" {
		t.Fatalf("started again: %+v", c)
	}
}

// TestMachineThatNeverBoots: a machine that does not answer within the boot
// timeout (here a second, far shorter than a boot) is stopped, with no QEMU
// left running, and shows error with why; the learner's script gets 409.
func TestMachineThatNeverBoots(t *testing.T) {
	t.Parallel()
	apitest.RequireMachines(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.MachineBootTimeout = time.Second })
	u := e.CreateUser("learner", auth.RoleStudent)
	var machine int64
	for _, x := range templatesOf(t, e) {
		if x.Name == sandbox.MachineTemplateName {
			machine = x.ID
		}
	}
	c := createSandbox(t, e, u.Token, machine)
	engine := engineID(t, e, c.ID)
	_, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), c.ID, sandbox.Script{Text: "true"})
	if !errs.Is(err, errs.Conflict) || !strings.Contains(err.Error(), "did not finish booting") {
		t.Fatalf("a script in a machine that does not boot: %v", err)
	}
	var got containerBody
	e.Get(fmt.Sprintf("/api/containers/%d", c.ID), u.Token).Expect(t, 200).JSON(t, &got)
	if got.Status != "error" || !strings.Contains(got.StatusDetail, "did not finish booting within 1s") {
		t.Errorf("the machine shows %s %q", got.Status, got.StatusDetail)
	}
	if out, _ := exec.Command("pgrep", "-f", engine).Output(); len(out) > 0 {
		t.Errorf("QEMU runs on for a machine that did not boot: %s", out)
	}
}
