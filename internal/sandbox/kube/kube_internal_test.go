package kube

import (
	"slices"
	"testing"

	"tuxlab/internal/sandbox"
)

// TestCommand: the exec API has no user, environment or directory, so the
// driver wraps the command in the trusted BusyBox; without the tools only
// root can be asked for.
func TestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		s       sandbox.ExecSpec
		tools   bool
		want    []string
		wantErr bool
	}{
		{"root", sandbox.ExecSpec{Cmd: []string{"id"}}, true,
			[]string{busybox, "env", busybox, "sh", "-c", inDir, "", "id"}, false},
		{"user, env and dir", sandbox.ExecSpec{Cmd: []string{"pwd"}, User: "learner", Env: []string{"A=b"}, Dir: "/tmp"}, true,
			[]string{busybox, "start-stop-daemon", "-S", "-c", "learner", "-n", "tuxlab-no-such", "-a", busybox, "--",
				"env", "A=b", busybox, "sh", "-c", inDir, "/tmp", "pwd"}, false},
		{"no tools, root", sandbox.ExecSpec{Cmd: []string{"id"}, User: "0", Env: []string{"A=b"}}, false,
			[]string{"/bin/sh", "-c", inDir, "", "env", "A=b", "--", "id"}, false},
		{"no tools, another user", sandbox.ExecSpec{Cmd: []string{"id"}, User: "65534"}, false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := command(tt.s, tt.tools)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("command = %q, %v; want %q (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestImageNames: images are looked up as the container runtime names them,
// and one in a registry counts as there.
func TestImageNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		image, full string
		registry    bool
	}{
		{"busybox", "docker.io/library/busybox:latest", false},
		{"tuxlab/sandbox-debian:latest", "docker.io/tuxlab/sandbox-debian:latest", false},
		{"localhost/pause:tuxlab", "localhost/pause:tuxlab", false},
		{"registry.example.org:5000/tuxlab/sandbox-tools:1", "registry.example.org:5000/tuxlab/sandbox-tools:1", true},
		{"docker.io/tuxlab/x", "docker.io/tuxlab/x:latest", false},
	}
	for _, tt := range tests {
		if got := normalizeImage(tt.image); got != tt.full {
			t.Errorf("normalizeImage(%q) = %q; want %q", tt.image, got, tt.full)
		}
		if got := hasRegistry(tt.image); got != tt.registry {
			t.Errorf("hasRegistry(%q) = %v", tt.image, got)
		}
	}
}
