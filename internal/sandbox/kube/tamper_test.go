package kube_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
)

// TestTamperedSystemFilesStopChecks mirrors the Docker test of the same name
// (internal/httpapi/trust_test.go) on the cluster: tuxlab on Kubernetes, a
// learner's Debian sandbox, and checks run through the sandbox service as
// labs run theirs. Packages installed with dpkg -i (files the image did not
// have, explained by records changed in the sandbox, which Changes must list
// as added) leave checks running; a wrapped /usr/bin/stat or an
// /etc/ld.so.preload stops them, naming the file, and no check runs.
func TestTamperedSystemFilesStopChecks(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite", apitest.RequireKube(t))
	u := e.CreateUser("learner", auth.RoleStudent)
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, http.StatusOK).JSON(t, &templates)
	var debian int64
	for _, x := range templates {
		if x.Name == "Debian" {
			debian = x.ID
		}
	}
	var created struct {
		ID int64 `json:"id"`
	}
	e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
		Body: map[string]any{"template_id": debian}}).Expect(t, http.StatusCreated).JSON(t, &created)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	box, err := e.App.Sandboxes.Get(ctx, actor.User(u.ID), created.ID)
	if err != nil {
		t.Fatal(err)
	}
	svc := e.App.Sandboxes

	root := func(script string) string {
		t.Helper()
		res, err := svc.ExecIn(ctx, box, sandbox.Script{Text: "#!/bin/sh\nset -e\n" + script, AsRoot: true})
		if err != nil || res[0].ExitCode != 0 {
			t.Fatalf("%q: %v %+v", script, err, res)
		}
		return res[0].Stdout
	}
	check := sandbox.Script{Text: "#!/bin/sh\ntouch /root/check-ran\n", AsRoot: true}
	passes := func(when string) {
		t.Helper()
		root("rm -f /root/check-ran")
		res, err := svc.CheckIn(ctx, box, check)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Tampered != nil || res[0].ExitCode != 0 {
			t.Errorf("%s: the check did not run: exit %d, %s", when, res[0].ExitCode, res[0].Transcript())
		}
	}
	reported := func(when string, want ...string) {
		t.Helper()
		root("rm -f /root/check-ran")
		res, err := svc.CheckIn(ctx, box, check)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Tampered == nil {
			t.Errorf("%s: the check ran: exit %d, %q", when, res[0].ExitCode, res[0].Stdout)
			return
		}
		reason := res[0].Tampered.Reason()
		for _, p := range want {
			if !strings.Contains(reason, p) || !strings.Contains(reason, "Checks did not run") {
				t.Errorf("%s: the reason does not name %s: %q", when, p, reason)
			}
		}
		if ran := root("[ -e /root/check-ran ] && echo ran || true"); ran != "" {
			t.Errorf("%s: a check ran in a tampered sandbox", when)
		}
	}

	passes("fresh")
	root("dpkg -i /opt/tuxlab/packages/tuxlab-hello_1.0_all.deb >/dev/null && dpkg -i /opt/tuxlab/packages/tuxlab-hello_1.1_all.deb >/dev/null")
	passes("after dpkg -i of the lab's packages")

	root(`cp -a /usr/bin/stat /root/stat.orig
printf '#!/bin/sh\nexec /root/stat.orig "$@"\n' > /root/s && chmod 755 /root/s && mv /root/s /usr/bin/stat`)
	reported("with a wrapped stat", "/usr/bin/stat")
	root("cp -a /root/stat.orig /root/s && mv /root/s /usr/bin/stat")
	passes("with stat restored")

	root("echo /usr/lib/x86_64-linux-gnu/libpthread.so.0 > /etc/ld.so.preload")
	reported("with /etc/ld.so.preload", "/etc/ld.so.preload")
	root("rm /etc/ld.so.preload")
	passes("with /etc/ld.so.preload gone")
}
