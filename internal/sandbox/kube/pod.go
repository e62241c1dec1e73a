package kube

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tuxlab/internal/sandbox"
)

// toolsMountDir is where the init container sees the emptyDir it fills.
const toolsMountDir = "/tools-out"

// execCaps are the capabilities every sandbox container keeps besides its
// template's: the exec API has no user, so the driver switches to
// ExecSpec.User itself (start-stop-daemon of the trusted busybox), which
// needs them. A process that becomes another user than root loses them.
var execCaps = []corev1.Capability{"SETUID", "SETGID"}

// podFor is the pod of the sandbox of record cm and spec s: the hardening of
// the Docker driver expressed in a pod spec (docs/kubernetes.md).
func (r *Runtime) podFor(cm *corev1.ConfigMap, s sandbox.Spec) *corev1.Pod {
	no, yes := false, true
	lbl := map[string]string{}
	for k, v := range cm.Labels {
		lbl[k] = v
	}
	network := s.Network
	if network == "" {
		network = "none"
	}
	lbl[LabelNetwork] = objectName(network)
	caps := append([]corev1.Capability{}, execCaps...)
	for _, c := range s.CapAdd {
		caps = append(caps, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
	}
	sc := &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: caps},
		Privileged:               &no,
		AllowPrivilegeEscalation: &yes,
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if s.NoNewPrivileges {
		sc.AllowPrivilegeEscalation = &no
	}
	if uid, err := strconv.ParseInt(s.User, 10, 64); err == nil {
		sc.RunAsUser = &uid
	}
	c := corev1.Container{
		Name: sandboxContainer, Image: s.Image, Args: s.Cmd, Env: envVars(s.Env),
		ImagePullPolicy: r.pull, SecurityContext: sc, Resources: resources(s),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Labels: lbl,
			// The pod goes with its record, also when tuxlab cannot delete it.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			Hostname:                     hostname(s.Hostname),
			// The pause container is PID 1 and reaps orphans, as the Docker
			// driver's init does.
			ShareProcessNamespace: &yes,
			SecurityContext:       &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}
	if s.ToolsVolume != "" {
		pod.Spec.Volumes = []corev1.Volume{{Name: toolsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: toolsVolume, MountPath: sandbox.ToolsDir, ReadOnly: true}}
		pod.Spec.InitContainers = []corev1.Container{{
			Name: "tools", Image: s.ToolsVolume, ImagePullPolicy: r.pull,
			Command: []string{"/tuxlab/bin/busybox", "cp", "-a", "/tuxlab/bin", toolsMountDir + "/bin"},
			SecurityContext: &corev1.SecurityContext{
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				AllowPrivilegeEscalation: &no,
			},
			Resources:    initResources(),
			VolumeMounts: []corev1.VolumeMount{{Name: toolsVolume, MountPath: toolsMountDir}},
		}, indexContainer(s, r.pull, keepsState(cm))}
	}
	if keepsState(cm) {
		addState(pod, &c, s, r.pull)
	}
	pod.Spec.Containers = []corev1.Container{c}
	return pod
}

// initResources are the init containers' limits, with small requests: left
// out they would be the limits, and the scheduler reserves a pod's largest
// init container when it is above its containers' sum (500m CPU for a
// sandbox of 250m).
func initResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("500m")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Mi"), corev1.ResourceCPU: resource.MustParse("10m")},
	}
}

// resources are the container's limits, and requests of a quarter of them
// (a request left out would be the limit), so that the scheduler packs
// sandboxes, which are idle and nearly empty most of the time, as tightly as
// the Docker host does.
func resources(s sandbox.Spec) corev1.ResourceRequirements {
	lim, req := corev1.ResourceList{}, corev1.ResourceList{}
	if s.MemoryBytes > 0 {
		lim[corev1.ResourceMemory] = *resource.NewQuantity(s.MemoryBytes, resource.BinarySI)
		req[corev1.ResourceMemory] = *resource.NewQuantity(s.MemoryBytes/4, resource.BinarySI)
	}
	if s.NanoCPUs > 0 {
		lim[corev1.ResourceCPU] = *resource.NewMilliQuantity(s.NanoCPUs/1_000_000, resource.DecimalSI)
		req[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(s.NanoCPUs/4_000_000, 1), resource.DecimalSI)
	}
	if s.DiskMB > 0 {
		lim[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(s.DiskMB)<<20, resource.BinarySI)
		req[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(s.DiskMB)<<18, resource.BinarySI)
	}
	return corev1.ResourceRequirements{Limits: lim, Requests: req}
}

// envVars turns NAME=value strings into a container's environment.
func envVars(env []string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}

// hostname makes h a valid pod hostname (a DNS label).
func hostname(h string) string {
	n := strings.ReplaceAll(objectName(h), ".", "-")
	if len(n) > 63 {
		n = n[:63]
	}
	return strings.Trim(n, "-")
}

// checkNetwork returns ErrGone when network (other than none) has no
// NetworkPolicy, which EnsureNetwork makes; for none it makes the policy
// that denies all traffic, once.
func (r *Runtime) checkNetwork(ctx context.Context, network string) error {
	if network == "" || network == "none" {
		return r.ensurePolicy(ctx, noneNetwork, "none", nil, false)
	}
	_, err := r.cs.NetworkingV1().NetworkPolicies(r.ns).Get(ctx, objectName(network), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("network %s: %w", network, wrap(err))
	}
	return nil
}

// ensurePolicy makes NetworkPolicy name for the pods of network value: with
// peers, traffic among them only; without, none at all. One that exists is
// left as it is.
func (r *Runtime) ensurePolicy(ctx context.Context, name, value string, lbl map[string]string, peers bool) error {
	all, err := objectLabels(lbl)
	if err != nil {
		return err
	}
	sel := metav1.LabelSelector{MatchLabels: map[string]string{LabelNetwork: value}}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: sel,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}},
	}
	if peers {
		peer := []networkingv1.NetworkPolicyPeer{{PodSelector: &sel}}
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: peer}}
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: peer}}
	}
	_, err = r.cs.NetworkingV1().NetworkPolicies(r.ns).Create(ctx, np, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return wrap(err)
}

// EnsureNetwork makes a NetworkPolicy named name that lets the pods of this
// network reach each other and nothing else. Whether that holds depends on
// the cluster's CNI: one that does not enforce NetworkPolicy (the bridge
// plugin of scripts/kube-up.sh) lets every pod reach every other and the
// outside (docs/kubernetes.md).
func (r *Runtime) EnsureNetwork(ctx context.Context, name string, lbl map[string]string) error {
	n := objectName(name)
	if n != name || n == "none" {
		return fmt.Errorf("network name %q is not valid on Kubernetes", name)
	}
	return r.ensurePolicy(ctx, n, n, lbl, true)
}

// RemoveNetwork deletes the network's NetworkPolicy unless a pod still uses
// it.
func (r *Runtime) RemoveNetwork(ctx context.Context, name string) error {
	n := objectName(name)
	pods, err := r.cs.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: LabelNetwork + "=" + n})
	if err != nil {
		return wrap(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			return nil
		}
	}
	err = r.cs.NetworkingV1().NetworkPolicies(r.ns).Delete(ctx, n, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return wrap(err)
}

// duScript prints the kibibytes of the container's root file system, the
// image's files included, with the trusted du.
const duScript = busybox + ` du -sxk / 2>/dev/null | ` + busybox + ` cut -f1`

// rootKiB measures what sandbox id's root file system holds.
func (r *Runtime) rootKiB(ctx context.Context, id string) (int64, error) {
	var out, errOut bytes.Buffer
	code, err := r.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{busybox, "sh", "-c", duScript}}, nil, &out, &errOut)
	if err != nil {
		return 0, err
	}
	kib, perr := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if code != 0 || perr != nil {
		return 0, fmt.Errorf("du in sandbox %s: exit %d, %q %q", id, code, out.String(), errOut.String())
	}
	return kib, nil
}

// recordBase measures a new pod's root file system, its image's files, and
// keeps the figure for DiskUsage. A pod without the tools is not measured.
func (r *Runtime) recordBase(ctx context.Context, id string, p *corev1.Pod) error {
	if !hasTools(p) {
		return nil
	}
	kib, err := r.rootKiB(ctx, id)
	if err != nil {
		return err
	}
	return r.annotate(ctx, id, map[string]string{annotationBase: strconv.FormatInt(kib, 10)})
}

// hasTools reports whether pod p mounts the trusted tools.
func hasTools(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Name == toolsVolume {
			return true
		}
	}
	return false
}

// DiskUsage returns what each running sandbox of ids wrote: the size of its
// root file system, measured by the trusted du inside it, less the size it
// had when its pod started. (The kubelet's own figures are out of reach: the
// API server's node proxy refuses a node at a loopback address, and the
// container runtime measures layers every 10 s only.) Files deleted but held
// open are not counted. Stopped sandboxes, and pods without the tools, are
// left out.
func (r *Runtime) DiskUsage(ctx context.Context, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, id := range ids {
		if objectName(id) != id {
			continue
		}
		cm, err := r.cs.CoreV1().ConfigMaps(r.ns).Get(ctx, id, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return out, wrap(err)
		}
		p, err := r.pod(ctx, id)
		if err != nil {
			return out, err
		}
		if p == nil || p.Status.Phase != corev1.PodRunning || !hasTools(p) {
			continue
		}
		kib, err := r.rootKiB(ctx, id)
		if err != nil {
			return out, err
		}
		base, _ := strconv.ParseInt(cm.Annotations[annotationBase], 10, 64)
		out[id] = max(kib-base, 0) << 10
	}
	return out, nil
}
