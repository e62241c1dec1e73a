package kube

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tuxlab/internal/sandbox"
)

// keptDirs are the directories a sandbox with kept state keeps across Stop
// and Start: the learner's files (homes, and what is served or installed by
// hand). The system's own directories (/usr, /etc, /var) stay the image's
// layer and go with the pod: they must agree with each other (dpkg's
// records in /var with the files in /usr, the alternatives in /etc with
// both), and the verification of system files before checks trusts only
// what the image had (docs/kubernetes.md, "Kept state").
var keptDirs = []string{"/home", "/root", "/srv", "/opt"}

const (
	// stateVolume is the pod's volume of the sandbox's PersistentVolumeClaim.
	stateVolume = "tuxlab-state"
	// stateMountDir is where the seeding init container sees the claim.
	stateMountDir = "/tuxlab-state"
	// defaultStateSize is a claim's size when the template sets no disk.
	defaultStateSize = 1 << 30
)

// keepsState reports whether the sandbox of record cm has a claim.
func keepsState(cm *corev1.ConfigMap) bool { return cm.Annotations[annotationState] != "" }

// createState makes the PersistentVolumeClaim of the sandbox of record cm,
// of the same name, owned by the record so that the cluster's garbage
// collector removes it with the record also when tuxlab cannot. Its size is
// the template's disk (Spec.DiskMB), else 1 GiB.
func (r *Runtime) createState(ctx context.Context, cm *corev1.ConfigMap, s sandbox.Spec) error {
	size := int64(defaultStateSize)
	if s.DiskMB > 0 {
		size = int64(s.DiskMB) << 20
	}
	class := cm.Annotations[annotationState]
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Labels: cm.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}},
		},
	}
	if _, err := r.cs.CoreV1().PersistentVolumeClaims(r.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the sandbox's volume claim: %w", wrap(err))
	}
	return nil
}

// deleteState deletes sandbox id's claim; the cluster removes it (and, by
// the class's reclaim policy, its volume) once no pod uses it.
func (r *Runtime) deleteState(ctx context.Context, id string) error {
	err := r.cs.CoreV1().PersistentVolumeClaims(r.ns).Delete(ctx, id, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return wrap(err)
}

// seedScript fills an empty claim, at stateMountDir, with the image's kept
// directories ("$@"), then marks it seeded; a seeded claim is left as it
// is. $1 is the trusted busybox ("" for the image's own tools). A copy cut
// short (no mark) is made again from the start.
const seedScript = `bb=$1; shift
s=` + stateMountDir + `
[ -e $s/.tuxlab-seeded ] && exit 0
for d; do
	$bb rm -rf "$s$d"
	if [ -d "$d" ] && [ ! -L "$d" ]; then $bb cp -a "$d" "$s$d"; else $bb mkdir -p "$s$d"; fi || exit 1
done
$bb touch $s/.tuxlab-seeded`

// addState gives pod, whose sandbox container is c, the sandbox's claim: an
// init container of the sandbox's image copies the image's kept directories
// into it on the first start (as root, with the capabilities a copy that
// keeps owners and modes needs, all in Pod Security's baseline), and the
// sandbox container mounts a subdirectory of it over each of them.
func addState(pod *corev1.Pod, c *corev1.Container, s sandbox.Spec, pull corev1.PullPolicy) {
	no := false
	root := int64(0)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: stateVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pod.Name}}})
	mounts := []corev1.VolumeMount{{Name: stateVolume, MountPath: stateMountDir}}
	cmd := []string{"/bin/sh", "-c", seedScript, "seed", ""}
	if s.ToolsVolume != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: toolsVolume, MountPath: toolsMountDir, ReadOnly: true})
		bb := toolsMountDir + "/bin/busybox"
		cmd = []string{bb, "sh", "-c", seedScript, "seed", bb}
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name: "state", Image: s.Image, ImagePullPolicy: pull,
		Command: append(cmd, keptDirs...),
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: &root,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"},
				Add: []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"}},
			AllowPrivilegeEscalation: &no,
		},
		Resources:    initResources(),
		VolumeMounts: mounts,
	})
	for _, d := range keptDirs {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: stateVolume, MountPath: d, SubPath: strings.TrimPrefix(d, "/")})
	}
}
