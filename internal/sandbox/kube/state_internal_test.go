package kube

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tuxlab/internal/sandbox"
)

// TestPodInitContainers: a pod with the tools lists its image's files
// (index); one of a record with kept state also seeds its claim (state) and
// mounts a subdirectory of it over each kept directory, which neither list
// of files descends into.
func TestPodInitContainers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tools     string
		state     string
		wantInit  []string
		wantMount []string
	}{
		{"no tools, nothing kept", "", "", nil, nil},
		{"tools", "tuxlab/sandbox-tools:latest", "", []string{"tools", "index"}, []string{sandbox.ToolsDir}},
		{"tools and kept state", "tuxlab/sandbox-tools:latest", "tuxlab-local", []string{"tools", "index", "state"},
			[]string{sandbox.ToolsDir, "/home", "/root", "/srv", "/opt"}},
		{"kept state without tools", "", "tuxlab-local", []string{"state"}, []string{"/home", "/root", "/srv", "/opt"}},
	}
	r := &Runtime{pull: corev1.PullNever}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tuxlab-x-1"}}
			if tt.state != "" {
				cm.Annotations = map[string]string{annotationState: tt.state}
			}
			p := r.podFor(cm, sandbox.Spec{Image: "tuxlab/sandbox-debian:latest", ToolsVolume: tt.tools})
			var inits, mounts []string
			for _, c := range p.Spec.InitContainers {
				inits = append(inits, c.Name)
				if c.Name == "index" && strings.Contains(strings.Join(c.Command, " "), "-path /home") != (tt.state != "") {
					t.Errorf("index %q: the kept directories pruned is not %t", c.Command, tt.state != "")
				}
			}
			for _, m := range p.Spec.Containers[0].VolumeMounts {
				mounts = append(mounts, m.MountPath)
				if m.Name == stateVolume && m.SubPath != strings.TrimPrefix(m.MountPath, "/") {
					t.Errorf("%s mounts the claim's %q", m.MountPath, m.SubPath)
				}
			}
			if !slices.Equal(inits, tt.wantInit) || !slices.Equal(mounts, tt.wantMount) {
				t.Errorf("init containers %v, mounts %v; want %v, %v", inits, mounts, tt.wantInit, tt.wantMount)
			}
			if hasIndex(p) != (tt.tools != "") {
				t.Errorf("hasIndex = %t", hasIndex(p))
			}
		})
	}
}

// TestParseChanges: changesScript's lines become changes; without its final
// "ok" the list is incomplete.
func TestParseChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		out      string
		want     []sandbox.Change
		complete bool
	}{
		{"empty", "ok\n", nil, true},
		{"kinds", "A\t/usr/bin/evil\nM\t/usr/bin/stat\nD\t/etc/motd\nok\n", []sandbox.Change{
			{Path: "/usr/bin/evil", Kind: sandbox.ChangeAdded}, {Path: "/usr/bin/stat", Kind: sandbox.ChangeModified},
			{Path: "/etc/motd", Kind: sandbox.ChangeDeleted}}, true},
		{"a tab in a name", "A\t/tmp/a\tb\nok\n", []sandbox.Change{{Path: "/tmp/a\tb", Kind: sandbox.ChangeAdded}}, true},
		{"cut short", "A\t/x\n", []sandbox.Change{{Path: "/x", Kind: sandbox.ChangeAdded}}, false},
		{"noise", "X\t/x\nfind: /root/y: Permission denied\nok\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete := parseChanges(tt.out)
			if !slices.Equal(got, tt.want) || complete != tt.complete {
				t.Errorf("parseChanges = %+v, %t; want %+v, %t", got, complete, tt.want, tt.complete)
			}
		})
	}
}
