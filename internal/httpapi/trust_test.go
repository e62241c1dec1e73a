package httpapi_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// Checks of the trust tests; each carries a marker the leak watch and the
// search of the sandbox's files look for.
var (
	trustBashCheck = "#!/bin/bash\n# trust-check-secret-7a3e\ngrep -qx done /home/learner/state 2>/dev/null || { echo 'FAIL: the state file does not say done'; exit 1; }\n"
	trustShCheck   = "#!/bin/sh\n# trust-check-secret-91c0\ngrep -qx done /home/learner/other 2>/dev/null || { echo 'FAIL: the other file does not say done'; exit 1; }\n"
	// tamperCheck passes whenever it runs, and leaves a trace that it ran.
	tamperCheck = "#!/bin/bash\n# tamper-check-secret-44d2\ntouch /root/check-ran\n"
)

// labCheck runs a lab check as the learner and returns the attempt.
func labCheck(t *testing.T, e *apitest.Env, labID int64, token string) labAttemptBody {
	t.Helper()
	var at labAttemptBody
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/laboratories/%d/check", labID), Token: token}).Expect(t, 200).JSON(t, &at)
	return at
}

// asRoot runs a script as root in a sandbox, as the learner's sudo would, and
// fails the test unless it ends with exit 0.
func asRoot(t *testing.T, e *apitest.Env, userID, id int64, script string) string {
	t.Helper()
	return execOK(t, e, userID, id, sandbox.Script{Text: script, AsRoot: true, Timeout: time.Minute}, "as root")
}

// execOK runs s in sandbox id for its owner userID and fails the test,
// saying how it ran (as), unless it ends with exit 0.
func execOK(t *testing.T, e *apitest.Env, userID, id int64, s sandbox.Script, as string) string {
	t.Helper()
	res := execIn(t, e, userID, id, s)
	if !res.OK() {
		t.Fatalf("%s: %s\n%s", as, s.Text, res.Transcript())
	}
	return res.Stdout
}

// debianLab creates the lab slug (its title too) of the fixture's shell
// module on the Debian template, with tasks.
func debianLab(t *testing.T, e *apitest.Env, admin *apitest.User, slug string, tasks ...map[string]any) int64 {
	t.Helper()
	mod := loadFixture(t, e)["shell"]
	return createLab(t, e, admin, fmt.Sprintf("slug=%s&title=%s&module_id=%d&template_id=%d", slug, slug, mod, templateNamed(t, e, "Debian")),
		map[string]any{"tasks": tasks})
}

// filesContaining lists the files written in sandbox id (the engine's list of
// changes) that contain needle, read through the engine: nothing in the
// sandbox takes part, so nothing the learner changed can hide them.
func filesContaining(t *testing.T, e *apitest.Env, id int64, needle string) []string {
	t.Helper()
	docker, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	ctx := context.Background()
	diff, err := docker.ContainerDiff(ctx, engineID(t, e, id), client.ContainerDiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, c := range diff.Changes {
		if c.Kind == container.ChangeDelete {
			continue
		}
		res, err := docker.CopyFromContainer(ctx, engineID(t, e, id), client.CopyFromContainerOptions{SourcePath: c.Path})
		if err != nil {
			continue // gone meanwhile, or not a file the engine copies
		}
		if !res.Stat.Mode.IsRegular() { // a directory's files are listed each
			res.Content.Close()
			continue
		}
		tr := tar.NewReader(res.Content)
		for h, err := tr.Next(); err == nil; h, err = tr.Next() {
			if h.Typeflag == tar.TypeReg {
				if b, _ := io.ReadAll(tr); bytes.Contains(b, []byte(needle)) {
					found = append(found, c.Path)
				}
			}
		}
		res.Content.Close()
	}
	return found
}

// TestChecksCannotBeFooledByTheLearnersPrograms: the learner is root in the
// Debian sandbox (sudo) and may put programs of their own in /usr/local,
// first in the image's PATH. A grep that always succeeds, a timeout that
// exits 0 and a timeout or shell that copy their stdin change no verdict and
// capture nothing: checks run the trusted shell and timeout by absolute path,
// with a PATH without /usr/local.
func TestChecksCannotBeFooledByTheLearnersPrograms(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		apitest.RegisterSecret(trustBashCheck, "a bash check")
		apitest.RegisterSecret(trustShCheck, "an sh check")
		labID := debianLab(t, e, admin, "trust", map[string]any{"title": "State", "check": trustBashCheck}, map[string]any{"title": "Other", "check": trustShCheck})
		box := *startLab(t, e, alice.Token, labID).ContainerID
		verdicts := func(when string, want ...string) {
			t.Helper()
			got := labCheck(t, e, labID, alice.Token)
			for i, task := range got.Tasks {
				if task.Passed || len(task.Feedback) != 1 || task.Feedback[0] != want[i] {
					t.Errorf("%s: task %q passed %t, feedback %q; want not passed, %q", when, task.Title, task.Passed, task.Feedback, want[i])
				}
			}
		}
		notDone := []string{"the state file does not say done", "the other file does not say done"}

		// As the learner types it, with sudo.
		learner := func(script string) {
			t.Helper()
			execOK(t, e, alice.ID, box, sandbox.Script{Text: script}, "as the learner")
		}

		// (c) A grep of the learner's that always succeeds, first in PATH.
		learner("printf '#!/bin/sh\\nexit 0\\n' | sudo tee /usr/local/bin/grep >/dev/null && sudo chmod 755 /usr/local/bin/grep")
		verdicts("with a grep that always succeeds", notDone...)

		// (a, b) A timeout that copies its stdin and exits 0, in both of the
		// learner's directories, and a bash and sh that do the same.
		learner(`for f in /usr/local/sbin/timeout /usr/local/bin/timeout /usr/local/bin/bash /usr/local/bin/sh; do
	printf '#!/bin/sh\ncat > /tmp/captured.$$\nexit 0\n' | sudo tee $f >/dev/null && sudo chmod 755 $f
done`)
		verdicts("with a timeout and shells that copy their stdin", notDone...)
		// Nothing of the checks is in the sandbox's files.
		if found := filesContaining(t, e, box, "trust-check-secret"); len(found) > 0 {
			t.Errorf("the check scripts were captured in %q", found)
		}

		// Done for real: the verdicts follow the machine, not the fakes.
		learner("echo done > ~/state && echo done > ~/other")
		if got := labCheck(t, e, labID, alice.Token); !got.Tasks[0].Passed || !got.Tasks[1].Passed {
			t.Errorf("after doing the tasks: %+v", got.Tasks)
		}
	}, func(c *config.Config) { c.LabCheckInterval = time.Millisecond })
}

// TestTamperedSystemFilesStopChecks: on the Debian image, where the learner
// is root, checks do not run once a system program, library or the loader's
// settings changed in a way dpkg's records do not explain; every task fails
// with a reason naming the files and how to recover, and restoring them
// brings the checks back. Installing the lab's own packages with dpkg -i is
// not tampering.
func TestTamperedSystemFilesStopChecks(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		apitest.RegisterSecret(tamperCheck, "a check that always passes")
		labID := debianLab(t, e, admin, "tamper", map[string]any{"title": "One", "check": tamperCheck}, map[string]any{"title": "Two", "check": tamperCheck})
		at := startLab(t, e, alice.Token, labID)
		box := *at.ContainerID
		root := func(script string) { t.Helper(); asRoot(t, e, alice.ID, box, script) }
		passes := func(when string) {
			t.Helper()
			root("rm -f /root/check-ran")
			labCheck(t, e, labID, alice.Token)
			var full labAttemptBody // with the checks' output, for the message
			e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), admin.Token).Expect(t, 200).JSON(t, &full)
			for _, task := range full.Tasks {
				if !task.Passed {
					t.Errorf("%s: task %q did not pass: %q\n%s", when, task.Title, task.Feedback, *task.Output)
				}
			}
		}
		// reported checks that every task fails naming want (and only those
		// first), that no check ran, and that admins read why.
		reported := func(when string, want ...string) {
			t.Helper()
			root("rm -f /root/check-ran")
			got := labCheck(t, e, labID, alice.Token)
			for _, task := range got.Tasks {
				fb := strings.Join(task.Feedback, " ")
				if task.Passed || len(task.Feedback) != 1 || !strings.Contains(fb, "Checks did not run") || !strings.Contains(fb, "new sandbox") {
					t.Errorf("%s: task %q passed %t, feedback %q", when, task.Title, task.Passed, task.Feedback)
				}
				for _, p := range want {
					if !strings.Contains(fb, p) {
						t.Errorf("%s: the reason does not name %s: %q", when, p, fb)
					}
				}
			}
			if ran := asRoot(t, e, alice.ID, box, "[ -e /root/check-ran ] && echo ran || true"); ran != "" {
				t.Errorf("%s: a check ran in a tampered sandbox", when)
			}
			var full labAttemptBody
			e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), admin.Token).Expect(t, 200).JSON(t, &full)
			if out := full.Tasks[0].Output; out == nil || !strings.Contains(*out, "not run") || !strings.Contains(*out, want[0]) {
				t.Errorf("%s: admins read %v", when, out)
			}
		}

		passes("fresh")
		// (f) The lab's own packages, installed and upgraded with dpkg -i.
		root("dpkg -i /opt/tuxlab/packages/tuxlab-hello_1.0_all.deb >/dev/null && dpkg -i /opt/tuxlab/packages/tuxlab-hello_1.1_all.deb >/dev/null")
		passes("after dpkg -i of the lab's packages")

		// (e) /usr/bin/timeout replaced by a wrapper script; restored, all is well.
		root("cp -a /usr/bin/timeout /root/timeout.orig && printf '#!/bin/sh\\nexec /root/timeout.orig \"$@\"\\n' > /root/t && chmod 755 /root/t && mv /root/t /usr/bin/timeout")
		reported("with a wrapped timeout", "/usr/bin/timeout")
		root("cp -a /root/timeout.orig /root/t && mv /root/t /usr/bin/timeout")
		passes("with timeout restored")

		// (e) bash moved aside and wrapped (/bin is /usr/bin on Debian).
		root("mv /bin/bash /bin/bash.real && printf '#!/bin/bash.real\\nexec /bin/bash.real \"$@\"\\n' > /bin/bash && chmod 755 /bin/bash")
		reported("with a wrapped bash", "/usr/bin/bash", "/usr/bin/bash.real")
		root("mv /bin/bash.real /bin/bash")
		passes("with bash restored")

		// (d) The loader told to preload a library into every program.
		root("echo /usr/lib/x86_64-linux-gnu/libpthread.so.0 > /etc/ld.so.preload")
		reported("with /etc/ld.so.preload", "/etc/ld.so.preload")
		root("rm /etc/ld.so.preload")
		passes("with /etc/ld.so.preload gone")

		// A loader cache pointing at libraries of the learner's, made without
		// touching ld.so.conf; a plain ldconfig makes it right again.
		root("mkdir -p /opt/evil && cp /usr/lib/x86_64-linux-gnu/libc.so.6 /opt/evil/ && echo /opt/evil > /root/evil.conf && ldconfig -f /root/evil.conf")
		reported("with a loader cache pointing out of the system", "/etc/ld.so.cache")
		root("ldconfig")
		passes("with the loader cache made again")

		// A system file changed while checks run (as a program of the
		// learner's could, swapping it in and back): their results do not count.
		c, err := e.App.Sandboxes.Get(context.Background(), actor.User(alice.ID), box)
		if err != nil {
			t.Fatal(err)
		}
		ran, err := e.App.Sandboxes.CheckIn(context.Background(), c, sandbox.Script{Text: "#!/bin/bash\ntouch -c /usr/bin/timeout", AsRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		if passed, fb := ran[0].Verdict(); passed || !strings.Contains(ran[0].Transcript(), "/usr/bin/timeout: changed while the checks ran") {
			t.Errorf("a change during the checks: passed %t, %q\n%s", passed, fb, ran[0].Transcript())
		}
		passes("after a change during the checks, the file as its package made it")

		// A replaced program whose checksum is forged in dpkg's records too,
		// both with their size and modification time kept, which the
		// engine's list of changes compares (it shows neither): records
		// changed in the sandbox explain only files it added, and change
		// times tell what changed.
		root(`f=/usr/bin/timeout r=/var/lib/dpkg/info/coreutils.md5sums
size=$(stat -c %s $f)
{ printf '#!/bin/sh\nexit 0\n'; head -c $((size - 18)) /dev/zero | tr '\0' '#'; } > $f
touch -r /root/timeout.orig $f
[ "$(stat -c %s $f)" = "$(stat -c %s /root/timeout.orig)" ]
sum=$(md5sum $f | cut -d' ' -f1)
cp -a $r /root/md5sums.orig
sed -i "s|^[0-9a-f]*  usr/bin/timeout\$|$sum  usr/bin/timeout|" $r
touch -r /root/md5sums.orig $r
grep -q "^$sum  usr/bin/timeout" $r`)
		reported("with a forged checksum", "/usr/bin/timeout")
		root("ln -sf /usr/bin/true /usr/bin/timeout")
		reported("with a link in place of a packaged program", "/usr/bin/timeout")
		root("rm /usr/bin/timeout && cp -a /root/timeout.orig /usr/bin/timeout")

		// Restoring the program is not enough once its package's records were
		// forged: only a new sandbox is trusted again.
		reported("with the forged record left", "/usr/bin/timeout")
	}, func(c *config.Config) { c.LabCheckInterval = time.Millisecond })
}

// TestToolsAreOutOfReach: the trusted tools are a read-only volume; root in
// the Debian sandbox (the widest template: sudo, and the capabilities that
// come with it, never SYS_ADMIN) can neither write, remount, unmount, move
// nor cover it.
func TestToolsAreOutOfReach(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite")
	alice := e.CreateUser("alice", auth.RoleStudent)
	c := createSandbox(t, e, alice.Token, templateNamed(t, e, "Debian"))
	before := asRoot(t, e, alice.ID, c.ID, "md5sum /.tuxlab/bin/bash /.tuxlab/bin/busybox; ls /.tuxlab/bin | wc -l")
	attempts := []string{
		"touch /.tuxlab/bin/x", "rm -f /.tuxlab/bin/bash", "cp /bin/true /.tuxlab/bin/timeout", "chmod 777 /.tuxlab/bin/bash",
		"mkdir /.tuxlab/more", "mv /.tuxlab/bin /.tuxlab/bin2", "mv /.tuxlab /tuxlab-moved",
		"mount -o remount,rw /.tuxlab", "umount /.tuxlab", "umount -l /.tuxlab",
		"mount -t tmpfs none /.tuxlab", "mount --bind /tmp /.tuxlab/bin",
	}
	for _, a := range attempts {
		res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(alice.ID), c.ID, sandbox.Script{Text: a, AsRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 {
			t.Errorf("as root, %q succeeded", a)
		}
	}
	// The same through sudo, as the learner types it.
	for _, a := range attempts[:3] {
		if out := execOut(t, e, alice.ID, c.ID, "sudo -n "+a+" 2>/dev/null && echo done-it"); out != "" {
			t.Errorf("sudo %s: %q", a, out)
		}
	}
	after := asRoot(t, e, alice.ID, c.ID, "md5sum /.tuxlab/bin/bash /.tuxlab/bin/busybox; ls /.tuxlab/bin | wc -l")
	mounts := asRoot(t, e, alice.ID, c.ID, "grep ' /.tuxlab ' /proc/self/mounts")
	if after != before || !strings.Contains(mounts, " ro,") && !strings.Contains(mounts, " ro ") {
		t.Fatalf("the tools changed: %q then %q; mount %q", before, after, mounts)
	}
}

// TestSandboxesNeedTheToolsImage: without the trusted tools there is no
// sandbox (scripts could not run trusted): 503, saying what to run, and
// nothing left behind.
func TestSandboxesNeedTheToolsImage(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: alice.Token,
			Body: map[string]any{"template_id": busyboxTemplate(t, e)}}).Expect(t, 503)
		if !strings.Contains(r.Detail(), "tuxlab/sandbox-tools:missing") || !strings.Contains(r.Detail(), "./scripts/build-images.sh tools") {
			t.Fatalf("detail %q", r.Detail())
		}
		mine := listSandboxes(t, e, alice.Token)
		if len(mine) != 0 {
			t.Fatalf("left behind: %+v", mine)
		}
	}, func(c *config.Config) { c.SandboxToolsImage = "tuxlab/sandbox-tools:missing" })
}

// TestScriptsAreBashOrSh: checks run under the trusted bash only, so a lab or
// exam whose scripts name another interpreter is refused where it is written.
func TestScriptsAreBashOrSh(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("root", auth.RoleAdmin)
		mod := loadFixture(t, e)["shell"]
		tpl := busyboxTemplate(t, e)
		query := fmt.Sprintf("slug=perl&title=Perl&module_id=%d&template_id=%d", mod, tpl)
		r := e.Do(apitest.Request{Method: "POST", Path: "/api/admin/laboratories?" + query, Token: admin.Token, Body: map[string]any{
			"setup":    "#!/bin/bash -l\ntrue",
			"solution": "#!/usr/bin/env python3\nprint(1)",
			"tasks":    []map[string]any{{"title": "Ok", "check": "#!/bin/sh -e\ntrue"}, {"title": "Perl", "check": "#!/usr/bin/perl\nexit 0;"}},
		}}).Expect(t, 422)
		if got, want := strings.Join(locs(t, r), " "), "body.setup body.solution body.tasks.1.check"; got != want {
			t.Fatalf("locs %q, want %q: %s", got, want, r.Body)
		}
		body := fixtureExamBody()
		body["questions"] = append(body["questions"].([]map[string]any), map[string]any{
			"kind": "practical", "prompt": "Anything.", "check": "#!/usr/bin/python3\nraise SystemExit(0)", "explanation": "None."})
		r = e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/exams?slug=py&title=Py&template_id=%d", tpl), Token: admin.Token, Body: body}).Expect(t, 422)
		if got := locs(t, r); len(got) != 1 || got[0] != "body.questions.3.check" {
			t.Fatalf("locs %q: %s", got, r.Body)
		}
	})
}

// TestExamPracticalOnATamperedSandbox: an exam's practical grading runs no
// check in a sandbox whose system programs were changed (here on the BusyBox
// image, which has no package records: any change there is unexplained); the
// question fails with the reason, and admins read why.
func TestExamPracticalOnATamperedSandbox(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		apitest.RegisterSecret(examCheckSecret, "a practical check")
		tpl := busyboxTemplate(t, e)
		body := fixtureExamBody()
		body["questions"] = append(body["questions"].([]map[string]any), map[string]any{
			"kind": "practical", "prompt": "Create the file /tmp/exam-practical-done.", "check": examCheckSecret, "points": 3,
			"explanation": "touch creates an empty file."})
		ex := createExam(t, e, admin, fmt.Sprintf("slug=tampered&title=Tampered&template_id=%d", tpl), body)
		// The attempt's own sandbox, solved and then tampered with.
		var at struct {
			ID          int64
			ContainerID int64 `json:"container_id"`
		}
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/start", ex.ID), Token: alice.Token}).Expect(t, 201).JSON(t, &at)
		execOut(t, e, alice.ID, at.ContainerID, "touch /tmp/exam-practical-done")
		asRoot(t, e, alice.ID, at.ContainerID, "rm /bin/ls && printf '#!/bin/sh\\nexit 0\\n' > /bin/ls && chmod 755 /bin/ls")
		var res examResultsBody
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/submit", ex.ID), Token: alice.Token,
			Body: map[string]any{"answers": []any{}}}).Expect(t, 200).JSON(t, &res)
		p := res.Questions[3]
		if p.Correct || len(p.Feedback) != 1 || !strings.Contains(p.Feedback[0], "Checks did not run") || !strings.Contains(p.Feedback[0], "/bin/ls") || p.Output != nil {
			t.Fatalf("practical on a tampered sandbox %+v", p)
		}
		e.Get(fmt.Sprintf("/api/exams/attempts/%d/results", at.ID), admin.Token).Expect(t, 200).JSON(t, &res)
		if out := res.Questions[3].Output; out == nil || !strings.Contains(*out, "not run") || !strings.Contains(*out, "/bin/ls: no package installed it") {
			t.Fatalf("admins read %v", out)
		}
	})
}
