package content_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
)

// failsOnPurpose lists, per lesson of a machine module and in the lesson's
// order, the commands its text shows failing (a warning says so), with a
// piece of the error the lesson quotes. Every other command of the lesson
// must succeed, the same command typed again later included.
var failsOnPurpose = map[string][]struct{ command, says string }{
	"storage-machine-disks-partitions": {
		{"/usr/sbin/parted -s /dev/vdb print", "Permission denied"},
	},
	"storage-machine-lvm": {
		{"sudo resize2fs /dev/vgdata/lvweb 200M", "On-line shrinking not supported"},
	},
	"storage-machine-raid": {
		{"sudo mdadm /dev/md0 --remove /dev/vdc", "Device or resource busy"},
	},
	"storage-machine-swap-mounts": {
		{"sudo swapon /swapfile", "read swap header failed"},
		{"sudo systemctl start backup.mount", "Unit backup.mount"},
	},
	"firewall-machine-concepts": {
		{"sudo nft add rule inet demo input tcp dport 22 accept", "No such file or directory"},
	},
	"firewall-machine-persistent": {
		{"systemctl is-enabled nftables", "disabled"},
	},
	"storage-machine-luks": {
		{"printf 'wrong passphrase' | sudo cryptsetup open --key-file=- /dev/vdc secret", "No key available"},
	},
	"storage-machine-quotas": {
		{"head -c 30M /dev/zero > /srv/shared/learner/second", "Disk quota exceeded"},
	},
	"apparmor-machine-mac-and-status": {
		{"/usr/sbin/aa-status", "enough privilege"},
		{"sudo aa-exec -p /usr/sbin/chronyd -- cat /etc/shadow", "Permission denied"},
	},
	"apparmor-machine-writing-a-profile": {
		{"sudo report", "Permission denied"},
		{"sudo report /etc/shadow", "Permission denied"},
	},
	"apparmor-machine-complain-and-boot": {
		{"sudo aa-exec -p /usr/local/bin/report -- cat /etc/shadow", "Permission denied"},
		{"sudo report /etc/shadow", "Permission denied"},
	},
	"boot-machine-targets": {
		{"systemctl is-active cron", "Failed to"},
	},
	"boot-machine-modules-sysctl": {
		{"sudo ip link add mon0 type nlmon", "Unknown device type"},
		{"sudo modprobe nlmon", "could not insert 'nlmon'"},
	},
	"boot-machine-hardening-timers": {
		{"sudo systemd-run --quiet --pipe --wait -p ProtectSystem=strict touch /etc/hardening-test", "Read-only file system"},
		{"sudo systemd-run --quiet --pipe --wait -p User=learner -p NoNewPrivileges=yes sudo -n true", "no new privileges"},
	},
	"nfs-time-machine-nfs-server": {
		{"systemctl is-enabled nfs-server", "disabled"},
	},
	"nfs-time-machine-nfs-client": {
		{"sudo touch /mnt/share/by-root.txt", "Permission denied"},
	},
	"nfs-time-machine-time": {
		{"systemctl is-active chrony", "inactive"},
	},
	"network-machine-runtime": {
		{"ip link show dummy0", `Device "dummy0" does not exist.`},
	},
	"network-machine-networkd": {
		{"systemctl is-active systemd-networkd", "inactive"},
	},
	"network-machine-names": {
		{"ls -l /etc/resolv.conf", "No such file or directory"},
	},
}

// machineModules returns the bundled modules whose laboratory runs on the
// machine template: their lessons are practised on a machine.
func machineModules(t *testing.T) []*lesson.ModuleFile {
	t.Helper()
	c, err := lesson.ReadCurriculum(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	labs, err := lab.ReadFiles(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	onMachine := map[string]bool{}
	for _, l := range labs {
		onMachine[l.Module] = l.Template == sandbox.MachineTemplateName
	}
	var out []*lesson.ModuleFile
	for _, m := range c.Modules {
		if onMachine[m.Slug] {
			out = append(out, m)
		}
	}
	return out
}

// TestMachineLessonsAreComplete: every lesson of a machine module that shows
// a command failing on purpose is known to the test, and each failure it
// lists is a command of that lesson; it needs no machine.
func TestMachineLessonsAreComplete(t *testing.T) {
	t.Parallel()
	mods := machineModules(t)
	if len(mods) == 0 {
		t.Fatal("no bundled module runs on the machine template")
	}
	seen := map[string]bool{}
	for _, m := range mods {
		for _, th := range m.Themes {
			seen[th.Slug] = true
			cmds := consoleCommands(th.Markdown)
			if len(cmds) < 5 {
				t.Errorf("%s: %d commands to type, want 5 or more", th.Path, len(cmds))
			}
			for _, f := range failsOnPurpose[th.Slug] {
				found := false
				for _, c := range cmds {
					found = found || c == f.command
				}
				if !found {
					t.Errorf("%s: no command %q, which the test expects to fail", th.Path, f.command)
				}
				if !strings.Contains(th.Markdown, f.says) {
					t.Errorf("%s: the lesson does not quote the error %q of %q", th.Path, f.says, f.command)
				}
			}
		}
	}
	for slug := range failsOnPurpose {
		if !seen[slug] {
			t.Errorf("failsOnPurpose names %s, which is no lesson of a machine module", slug)
		}
	}
}

// consoleCommands returns the commands a lesson asks the learner to type: in
// its console blocks, each line after "$ " with its "> " continuation lines
// (a here-document), as the lesson page's "Run in terminal" types them.
func consoleCommands(markdown string) []string {
	var cmds []string
	inBlock := false
	var cur []string
	flush := func() {
		if cur != nil {
			cmds = append(cmds, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !inBlock && trimmed == "```console":
			inBlock = true
		case inBlock && trimmed == "```":
			flush()
			inBlock = false
		case inBlock && strings.HasPrefix(line, "$ "):
			flush()
			cur = []string{strings.TrimPrefix(line, "$ ")}
		case inBlock && cur != nil && (line == ">" || strings.HasPrefix(line, "> ")):
			cur = append(cur, strings.TrimPrefix(strings.TrimPrefix(line, ">"), " "))
		default:
			flush()
		}
	}
	return cmds
}

// commandWait bounds one typed command (a RAID resync or a LUKS key
// derivation under QEMU's emulation on a loaded host): a guard, not a measure.
const commandWait = 5 * time.Minute

// machineBoot bounds a machine's boot under emulation on a busy host.
const machineBoot = 8 * time.Minute

// TestMachineLessonsTypedInAMachine types every command of every lesson of
// the machine modules, in order, into the terminal of one machine of the
// bundled machine template, as a learner following the lessons would: each
// command must succeed, except those a lesson shows failing on purpose,
// which must fail with the error the lesson quotes. A `sudo reboot` in a
// lesson reboots the machine: the socket says it is restarting, and the
// lesson goes on in a new terminal. Lessons share the machine, so each
// one's clean-up must leave the disks blank for the next.
func TestMachineLessonsTypedInAMachine(t *testing.T) {
	t.Parallel()
	apitest.RequireMachines(t)
	mods := machineModules(t)
	e := apitest.New(t, "sqlite", withBundledCurriculum, withSlowBoots)
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, http.StatusOK).JSON(t, &templates)
	var tid int64
	for _, x := range templates {
		if x.Name == sandbox.MachineTemplateName {
			tid = x.ID
		}
	}
	if tid == 0 {
		t.Fatalf("no template %q", sandbox.MachineTemplateName)
	}
	// Modules play side by side, two at a time: a machine spends most of a
	// lesson waiting for the next command, and the modules are independent
	// (each has its own learner and machine).
	slots := make(chan struct{}, machineModulesAtOnce)
	for i, m := range mods {
		u := e.CreateUser(fmt.Sprintf("learner%d", i), auth.RoleStudent)
		t.Run(m.Slug, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			var c struct {
				ID          int64  `json:"id"`
				TerminalURL string `json:"terminal_url"`
			}
			e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
				Body: map[string]any{"template_id": tid, "name": "Practice"}}).Expect(t, http.StatusCreated).JSON(t, &c)
			defer e.Send(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", c.ID), Token: u.Token})
			sh := newLessonShell(t, e, u, c.TerminalURL)
			// One test for the module, not one per lesson: a reboot opens a
			// new terminal, which must outlive the lesson that rebooted.
			for _, th := range m.Themes {
				t.Logf("lesson %s", th.Path)
				sh.play(th)
				if t.Failed() {
					return // the next lessons would start from a machine in an unknown state
				}
			}
			sh.tc.Hangup()
		})
	}
}

// machineModulesAtOnce is how many machine modules have their lessons typed
// at the same time.
const machineModulesAtOnce = 2

// lessonShell is a learner's terminal in a machine whose prompt carries the
// exit status of the last command.
type lessonShell struct {
	t    *testing.T
	e    *apitest.Env
	u    *apitest.User
	path string
	tc   *apitest.Terminal
}

// statusPrompt is the prompt the test sets: the last command's exit status,
// then a mark the typed text never contains as such.
var statusPrompt = regexp.MustCompile(`\[status=([0-9]+) lessontest\]`)

func newLessonShell(t *testing.T, e *apitest.Env, u *apitest.User, path string) *lessonShell {
	sh := &lessonShell{t: t, e: e, u: u, path: path}
	sh.open()
	return sh
}

// open opens a terminal, waits for the machine's login prompt (it comes once
// the machine has booted) and sets the status prompt.
func (sh *lessonShell) open() {
	sh.t.Helper()
	sh.tc = sh.e.OpenTerminal(sh.t, sh.path, sh.u.Token, 160, 48)
	sh.tc.Await(regexp.MustCompile(`learner@[a-z0-9-]+:`), 0, machineBoot)
	from := len(sh.tc.Output())
	sh.tc.Type("PS1='[status=$? lessontest]\\$ '\n")
	sh.tc.Await(statusPrompt, from, commandWait)
}

// play types every command of lesson th and checks how each ended.
func (sh *lessonShell) play(th *lesson.ThemeFile) {
	t := sh.t
	fails := failsOnPurpose[th.Slug]
	for _, cmd := range consoleCommands(th.Markdown) {
		if cmd == "sudo reboot" {
			sh.reboot()
			continue
		}
		from := len(sh.tc.Output())
		sh.tc.Type(cmd + "\n")
		m := sh.tc.Await(statusPrompt, from, commandWait)
		out := sh.tc.Text(from)
		t.Logf("typed %q, status %s:\n%s", cmd, m[1], out)
		failing, says := len(fails) > 0 && fails[0].command == cmd, ""
		if failing {
			says, fails = fails[0].says, fails[1:]
		}
		switch {
		case failing && m[1] == "0":
			t.Errorf("%s: %q succeeded; the lesson shows it failing:\n%s", th.Path, cmd, out)
		case failing && !strings.Contains(out, says):
			t.Errorf("%s: %q failed without the error the lesson quotes (%q):\n%s", th.Path, cmd, says, out)
		case !failing && m[1] != "0":
			t.Fatalf("%s: %q exited with %s:\n%s", th.Path, cmd, m[1], out)
		}
	}
	for _, f := range fails {
		t.Errorf("%s: %q, expected to fail, was not typed (failsOnPurpose is out of the lesson's order)", th.Path, f.command)
	}
}

// reboot types `sudo reboot`, expects the socket to say the machine is
// restarting, and opens a new terminal once it is back.
func (sh *lessonShell) reboot() {
	sh.t.Helper()
	sh.tc.Type("sudo reboot\n")
	sh.tc.Ended(machineBoot)
	said := false
	for _, m := range sh.tc.Control() {
		detail, _ := m["detail"].(string)
		said = said || m["type"] == "error" && strings.Contains(detail, "restarting")
	}
	if !said {
		sh.t.Fatalf("the socket did not say the machine is restarting: %s", sh.tc.Tail())
	}
	sh.open()
}

// TestMachineModulesPractiseOnTheMachine: the lesson page opens the practice
// sandbox of the template of the module's laboratory (docs/web.md), so what
// it reads for a machine module must name the machine template, and for the
// other modules the Debian container.
func TestMachineModulesPractiseOnTheMachine(t *testing.T) {
	t.Parallel()
	onMachine := map[string]bool{}
	for _, m := range machineModules(t) {
		onMachine[m.Slug] = true
	}
	e := apitest.New(t, "sqlite", withBundledCurriculum, withSlowBoots)
	u := e.CreateUser("learner", auth.RoleStudent)
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
		Kind string `json:"kind"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, http.StatusOK).JSON(t, &templates)
	names := map[int64]string{}
	for _, x := range templates {
		names[x.ID] = x.Name
	}
	var modules []struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	}
	e.Get("/api/lessons/modules", u.Token).Expect(t, http.StatusOK).JSON(t, &modules)
	machines := 0
	for _, m := range modules {
		var l struct {
			TemplateID int64 `json:"template_id"`
		}
		e.Get(fmt.Sprintf("/api/laboratories/section/%d/laboratory", m.ID), u.Token).Expect(t, http.StatusOK).JSON(t, &l)
		want := "Debian"
		if onMachine[m.Slug] {
			want, machines = sandbox.MachineTemplateName, machines+1
		}
		if got := names[l.TemplateID]; got != want {
			t.Errorf("module %s practises on template %q, want %q", m.Slug, got, want)
		}
	}
	if machines == 0 {
		t.Error("no module served practises on the machine template")
	}
}

// withSlowBoots gives a machine machineBoot to boot, as long as the test
// waits for its prompt, where the service's default is 5 minutes: the
// lessons reboot their machines while the rest of the suite runs several
// more under TCG on two cores, and CI once saw a reboot take longer than 5
// minutes, which marked the machine broken. What is tested is that the
// machine comes back as the lesson says, not how fast.
func withSlowBoots(c *config.Config) { c.MachineBootTimeout = machineBoot }
