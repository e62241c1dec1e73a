package kube

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// podRequest is what the scheduler reserves for pod p of resource name: the
// larger of its containers' sum and its largest init container, a request
// left out being the limit (as the API server defaults it).
func podRequest(p *corev1.Pod, name corev1.ResourceName) resource.Quantity {
	req := func(c corev1.Container) resource.Quantity {
		if q, ok := c.Resources.Requests[name]; ok {
			return q
		}
		return c.Resources.Limits[name]
	}
	var sum resource.Quantity
	for _, c := range p.Spec.Containers {
		sum.Add(req(c))
	}
	for _, c := range p.Spec.InitContainers {
		if q := req(c); q.Cmp(sum) > 0 {
			sum = q
		}
	}
	return sum
}

// TestPodRequests: a sandbox pod asks the scheduler for a quarter of its
// template's limits, so that nodes fit as many mostly idle sandboxes as the
// sizing in docs/operations.md says; the init container that copies the
// tools must not raise that.
func TestPodRequests(t *testing.T) {
	t.Parallel()
	r := &Runtime{pull: corev1.PullNever}
	tests := []struct {
		name      string
		memory    int64
		nanoCPUs  int64
		cpu, mem  string
		withTools bool
	}{
		{"debian", 512 << 20, 1e9, "250m", "128Mi", true},
		{"busybox", 64 << 20, 5e8, "125m", "16Mi", true},
		{"without tools", 64 << 20, 5e8, "125m", "16Mi", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sandbox.Spec{Image: "x", MemoryBytes: tt.memory, NanoCPUs: tt.nanoCPUs}
			if tt.withTools {
				s.ToolsVolume = "tools"
			}
			p := r.podFor(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sb"}}, s)
			cpu, mem := podRequest(p, corev1.ResourceCPU), podRequest(p, corev1.ResourceMemory)
			if cpu.Cmp(resource.MustParse(tt.cpu)) != 0 || mem.Cmp(resource.MustParse(tt.mem)) != 0 {
				t.Errorf("the pod requests %s CPU and %s memory; want %s and %s", cpu.String(), mem.String(), tt.cpu, tt.mem)
			}
		})
	}
}
