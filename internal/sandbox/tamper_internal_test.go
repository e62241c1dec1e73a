package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSuspects: which changes of a container's file system are looked at,
// which are dpkg's records, and which are tampering whatever dpkg says.
func TestSuspects(t *testing.T) {
	M, A, D := ChangeModified, ChangeAdded, ChangeDeleted
	cases := []struct {
		name    string
		changes []Change
		verify  []string
		records []string
		found   []string
	}{
		{"a learner's own files are not looked at",
			[]Change{{"/home/learner/notes", A}, {"/usr/local/bin/grep", A}, {"/usr/local/sbin/timeout", A}, {"/etc/passwd", M}, {"/tmp/x", A}},
			nil, nil, nil},
		{"system programs and libraries, changed or added",
			[]Change{{"/usr/bin/timeout", M}, {"/usr/bin/bash", M}, {"/bin/grep", A}, {"/sbin/x", A}, {"/usr/lib/x86_64-linux-gnu/libc.so.6", M},
				{"/lib64/ld-linux-x86-64.so.2", M}, {"/usr/libexec/x", A}, {"/usr/sbin/nginx", A}, {"/usr/lib64/ld-linux-x86-64.so.2", M}},
			[]string{"/usr/bin/timeout", "/usr/bin/bash", "/bin/grep", "/sbin/x", "/usr/lib/x86_64-linux-gnu/libc.so.6",
				"/lib64/ld-linux-x86-64.so.2", "/usr/libexec/x", "/usr/sbin/nginx", "/usr/lib64/ld-linux-x86-64.so.2"}, nil, nil},
		{"a deletion makes checks fail, never pass",
			[]Change{{"/usr/bin/telnet", D}, {"/etc/ld.so.preload", D}},
			nil, nil, nil},
		{"the loader: a preload is never explained",
			[]Change{{"/etc/ld.so.preload", A}, {"/etc/ld.so.cache", M}, {"/etc/ld.so.conf", M}, {"/etc/ld.so.conf.d/evil.conf", A}, {"/etc/ld.so.conf.d", M}},
			[]string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d/evil.conf"}, nil, []string{"/etc/ld.so.preload"}},
		{"alternatives",
			[]Change{{"/etc/alternatives/awk", M}, {"/etc/alternatives", M}},
			[]string{"/etc/alternatives/awk"}, nil, nil},
		{"dpkg's records",
			[]Change{{"/var/lib/dpkg/status", M}, {"/var/lib/dpkg/info/tuxlab-hello.md5sums", A}, {"/var/lib/dpkg/alternatives/awk", M}, {"/var/lib/dpkg/info/gone.list", D}},
			nil, []string{"/var/lib/dpkg/status", "/var/lib/dpkg/info/tuxlab-hello.md5sums", "/var/lib/dpkg/alternatives/awk"}, nil},
		{"names that could forge the verification's input",
			[]Change{{"/usr/bin/x\nM\t/usr/bin/y", A}, {"/usr/bin/tab\there", A}, {"/home/learner/a\nb", A}},
			nil, nil, []string{`"/usr/bin/x\nM\t/usr/bin/y"`, `"/usr/bin/tab\there"`}},
		{"look-alike prefixes are not system directories",
			[]Change{{"/usr/binx/grep", A}, {"/libexec/x", A}, {"/etc/ld.so.preload.bak", A}, {"/usr/lib", M}},
			[]string{"/usr/lib"}, nil, nil},
	}
	for _, tc := range cases {
		s := suspects(tc.changes)
		var verify, found []string
		for _, c := range s.verify {
			verify = append(verify, c.Path)
		}
		for _, f := range s.found {
			found = append(found, f.Path)
		}
		if !slices.Equal(verify, tc.verify) || !slices.Equal(s.records, tc.records) || !slices.Equal(found, tc.found) {
			t.Errorf("%s:\n verify %q, want %q\n records %q, want %q\n found %q, want %q", tc.name, verify, tc.verify, s.records, tc.records, found, tc.found)
		}
	}
}

// TestTamperingReason: the learner reads the first few paths and how to
// recover; admins read everything.
func TestTamperingReason(t *testing.T) {
	var clean *Tampering
	if !clean.Clean() || !(&Tampering{}).Clean() {
		t.Fatal("nothing found is not clean")
	}
	many := &Tampering{Found: []Tamper{{"/etc/ld.so.preload", "x"}, {"/usr/bin/bash", "y"}, {"/usr/bin/grep", "z"}, {"/usr/bin/timeout", "w"}}, Unlisted: 2}
	cases := []struct {
		t        *Tampering
		contains []string
	}{
		{many, []string{"/etc/ld.so.preload, /usr/bin/bash, /usr/bin/grep and 3 more", "Restore them", "new sandbox"}},
		{&Tampering{Found: []Tamper{{"/usr/bin/timeout", "w"}}}, []string{"(/usr/bin/timeout)"}},
		{&Tampering{Unverified: "exit 137"}, []string{"could not be verified", "new sandbox"}},
	}
	for _, tc := range cases {
		reason := tc.t.Reason()
		for _, want := range tc.contains {
			if !strings.Contains(reason, want) {
				t.Errorf("reason %q lacks %q", reason, want)
			}
		}
	}
	res := &Result{ExitCode: -1, Tampered: many}
	if res.OK() {
		t.Fatal("a check that did not run passed")
	}
	if passed, feedback := res.Verdict(); passed || len(feedback) != 1 || feedback[0] != many.Reason() {
		t.Fatalf("verdict %t %q", passed, feedback)
	}
	if tr := res.Transcript(); !strings.Contains(tr, "not run") || !strings.Contains(tr, "/usr/bin/timeout: w") || !strings.Contains(tr, "2 more") {
		t.Fatalf("transcript %q", tr)
	}
}

// TestParseVerified: only a verification that reached its end is complete.
func TestParseVerified(t *testing.T) {
	var got Tampering
	if !parseVerified("at\t1795616343\t2026-11-25 14:19:03.164742398 +0000\nT\t/usr/bin/timeout\tdiffers\nT\t/usr/bin/a b\tno package installed it\nmore\t7\nok\n", &got) {
		t.Fatal("complete output read as incomplete")
	}
	want := []Tamper{{"/usr/bin/timeout", "differs"}, {"/usr/bin/a b", "no package installed it"}}
	if !slices.Equal(got.Found, want) || got.Unlisted != 7 || got.atUnix != "1795616343" || got.at != "2026-11-25 14:19:03.164742398 +0000" {
		t.Fatalf("%+v", got)
	}
	for _, out := range []string{"", "T\t/usr/bin/x\tdiffers\n", "okay\n", "T\t/usr/bin/x\tok\n"} {
		if parseVerified(out, &Tampering{}) {
			t.Errorf("%q read as complete", out)
		}
	}
}

// TestScriptSpec: every script runs with the trusted env, timeout and shell
// by absolute path, in a clean environment without /usr/local in PATH.
func TestScriptSpec(t *testing.T) {
	tpl := &Template{User: "learner"}
	const mk = mark("m1")
	prefix := func(user, home string) []string {
		return []string{"/.tuxlab/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
			"TUXLAB_USER=learner", "TUXLAB_HOME=/home/learner", "HOME=" + home, "USER=" + user, "LOGNAME=" + user, "TUXLAB_RUN=m1",
			"/.tuxlab/bin/timeout", "-s", "KILL", "10"}
	}
	cases := []struct {
		name  string
		sc    Script
		shell []string
		user  string
		dir   string
		err   error
	}{
		{"bash as root", Script{Text: "#!/bin/bash\ntrue", AsRoot: true}, []string{"/.tuxlab/bin/bash", "-s"}, "root", "/", nil},
		{"sh as the learner", Script{Text: "#!/bin/sh\ntrue"}, []string{"/.tuxlab/bin/bash", "--posix", "-s"}, "learner", "/home/learner", nil},
		{"no #! line is sh", Script{Text: "true"}, []string{"/.tuxlab/bin/bash", "--posix", "-s"}, "learner", "/home/learner", nil},
		{"usr paths and env", Script{Text: "#!/usr/bin/env bash\ntrue"}, []string{"/.tuxlab/bin/bash", "-s"}, "learner", "/home/learner", nil},
		{"/usr/bin/sh", Script{Text: "#!/usr/bin/sh -e\r\ntrue"}, []string{"/.tuxlab/bin/bash", "--posix", "-e", "-s"}, "learner", "/home/learner", nil},
		{"set options pass", Script{Text: "#!/bin/bash -eu\ntrue"}, []string{"/.tuxlab/bin/bash", "-eu", "-s"}, "learner", "/home/learner", nil},
		{"another interpreter", Script{Text: "#!/usr/bin/perl\nprint 1"}, nil, "", "", ErrInterpreter},
		{"a relative interpreter", Script{Text: "#!bash\ntrue"}, nil, "", "", ErrInterpreter},
		{"env of something else", Script{Text: "#!/usr/bin/env python3\n"}, nil, "", "", ErrInterpreter},
		{"a login shell reads startup files", Script{Text: "#!/bin/bash -l\ntrue"}, nil, "", "", ErrInterpreterOption},
		{"an option with an argument", Script{Text: "#!/bin/bash -o pipefail\ntrue"}, nil, "", "", ErrInterpreterOption},
	}
	for _, tc := range cases {
		tc.sc.Timeout = 10 * time.Second
		spec, err := scriptSpec(tpl, tc.sc, mk)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || CheckInterpreter(tc.sc.Text) == nil {
				t.Errorf("%s: err %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		home := "/home/learner"
		if tc.sc.AsRoot {
			home = "/root"
		}
		want := append(prefix(tc.user, home), tc.shell...)
		if err != nil || !slices.Equal(spec.Cmd, want) || spec.User != tc.user || spec.Dir != tc.dir || len(spec.Env) != 0 {
			t.Errorf("%s: %v %+v\nwant cmd %q", tc.name, err, spec, want)
		}
	}
}
