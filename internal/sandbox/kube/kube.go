// Package kube is the Kubernetes driver of sandbox.Runtime: one pod per
// started sandbox in one namespace, hardened in its pod spec, with terminals
// and checks through the exec API (docs/kubernetes.md).
//
// Kubernetes has no stopped pod, so a sandbox is two objects of the same
// name: a ConfigMap, made by Create and removed by Remove, that holds the
// sandbox's spec and labels (the sandbox "exists" while it does), and a pod,
// made by Start and deleted by Stop. What a sandbox wrote in its own file
// system goes with its pod, except, when the driver has a storage class
// (Options.StorageClass), the learner's directories (keptDirs), which live
// on a PersistentVolumeClaim of the same name, made by Create and deleted by
// Remove (state.go).
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Labels and annotations of the driver's own.
const (
	// LabelNetwork carries a pod's network: "none", or the name of a network
	// of EnsureNetwork, whose NetworkPolicy selects pods by it.
	LabelNetwork = "org.tuxlab.network"
	// LabelManagedBy is Kubernetes' usual label, on everything the driver makes.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	annotationStarted  = "org.tuxlab/started-at"
	annotationFinished = "org.tuxlab/finished-at"
	annotationBase     = "org.tuxlab/base-kib" // the root file system's size when the pod started
	annotationState    = "org.tuxlab/state"    // the storage class of the sandbox's kept state, if it has one
	specKey            = "spec.json"
	// sandboxContainer is the name of the pod's container the learner uses.
	sandboxContainer = "sandbox"
	// toolsVolume is the pod's volume of trusted tools.
	toolsVolume = "tuxlab-tools"
	// noneNetwork is the NetworkPolicy that denies all traffic to and from
	// pods of network "none" (where the CNI enforces NetworkPolicy).
	noneNetwork = "tuxlab-network-none"
)

// Options configure the driver.
type Options struct {
	// Namespace holds the sandboxes' pods (default "tuxlab-sandboxes").
	Namespace string
	// Kubeconfig is the path of a kubeconfig file; "" means the in-cluster
	// configuration when running in a pod, else KUBECONFIG or ~/.kube/config.
	Kubeconfig string
	// Log receives client-go's own messages (klog), such as a stream's
	// errors after its session was closed; nil leaves klog as it is
	// (standard error).
	Log *slog.Logger
	// PullPolicy is the pods' imagePullPolicy (default IfNotPresent; Never
	// for images imported into the nodes' runtime, as scripts/kube-up.sh does).
	PullPolicy corev1.PullPolicy
	// StorageClass, when set, gives each sandbox created from then on a
	// PersistentVolumeClaim of this class that keeps the learner's
	// directories (keptDirs) across Stop and Start; "" keeps nothing (a
	// stopped sandbox starts afresh from its image).
	StorageClass string
}

// Runtime is the Kubernetes driver.
type Runtime struct {
	cs      kubernetes.Interface
	cfg     *rest.Config
	ns      string
	pull    corev1.PullPolicy
	storage string
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns a driver for the cluster o names, without asking it anything.
func New(o Options) (*Runtime, error) {
	// Every New passes through the Once, so each runtime's requests come
	// after the logger is set (the Once orders them), whichever New set it.
	klogOnce.Do(func() {
		log := o.Log
		if log == nil {
			log = slog.Default()
		}
		klog.SetSlogLogger(log.With("component", "client-go"))
	})
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes configuration: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if o.Namespace == "" {
		o.Namespace = "tuxlab-sandboxes"
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullIfNotPresent
	}
	return &Runtime{cs: cs, cfg: cfg, ns: o.Namespace, pull: o.PullPolicy, storage: o.StorageClass}, nil
}

// klogOnce sets client-go's logger once: klog's logger is the process's,
// and setting it while another runtime's requests read it is a data race
// (seen under -race with two runtimes in one test binary). The first
// runtime's logger is kept.
var klogOnce sync.Once

// restConfig loads path, or the in-cluster configuration, or the default
// kubeconfig (KUBECONFIG, ~/.kube/config).
func restConfig(path string) (*rest.Config, error) {
	if path != "" { // KUBECONFIG's syntax: one path or several
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(path)}
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return rest.InClusterConfig()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// Namespace returns the namespace the sandboxes live in.
func (r *Runtime) Namespace() string { return r.ns }

// wrap maps the API server's answers to the domain's errors: a missing
// object is sandbox.ErrGone, an unreachable or overloaded server
// sandbox.ErrRuntimeUnavailable; ctx's errors stay what they are.
func wrap(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", sandbox.ErrGone, err)
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err) && strings.Contains(err.Error(), "etcd"),
		errors.As(err, &netErr), errors.As(err, &urlErr):
		return fmt.Errorf("%w: %w", sandbox.ErrRuntimeUnavailable, err)
	}
	return err
}

// Ping asks the API server whether it is ready.
func (r *Runtime) Ping(ctx context.Context) error {
	res := r.cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx)
	if err := res.Error(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", sandbox.ErrRuntimeUnavailable, err)
	}
	return nil
}

// ImageExists reports whether an image is on one of the cluster's nodes, as
// their status lists them (a kubelet reports its 50 largest images by
// default). An image in an operator's registry (a name with a registry host)
// counts as there: nodes pull it when a pod needs it. Listing nodes is
// cluster-wide, which the manifests of deploy/kubernetes do not grant: an
// identity that may not is told (503) to name the image with its registry.
func (r *Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	full := normalizeImage(image)
	if hasRegistry(image) {
		return true, nil
	}
	nodes, err := r.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return false, &errs.Error{Kind: errs.Unavailable, Err: err, Detail: fmt.Sprintf(
			"The image %s is named without a registry host, and tuxlab may not list the cluster's nodes to find it: "+
				"an operator must push it to a registry and name it with the registry (docs/kubernetes.md)", image)}
	}
	if err != nil {
		return false, wrap(err)
	}
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if name == full {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// hasRegistry reports whether image names a registry host other than
// Docker Hub's default and localhost.
func hasRegistry(image string) bool {
	first, _, ok := strings.Cut(image, "/")
	return ok && (strings.ContainsAny(first, ".:") && first != "docker.io") && first != "localhost"
}

// normalizeImage spells image as container runtimes list it:
// docker.io/library/busybox:latest for busybox.
func normalizeImage(image string) string {
	name := image
	first, _, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !ok {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	last := name[strings.LastIndex(name, "/")+1:]
	if !strings.Contains(last, ":") && !strings.Contains(last, "@") {
		name += ":latest"
	}
	return name
}

// ToolsVolume returns the tools image itself: each pod copies its /tuxlab/bin
// into an emptyDir in an init container, mounted read-only at
// sandbox.ToolsDir in the sandbox's container. Kubernetes volumes cannot be
// filled once and shared by pods on every node without a storage class that
// can, so the copy (a few MiB) is per pod.
func (r *Runtime) ToolsVolume(ctx context.Context, image string) (string, error) {
	ok, err := r.ImageExists(ctx, image)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", sandbox.ErrToolsMissing, image)
	}
	return image, nil
}

// ProbeDiskQuota returns nil: a pod's ephemeral-storage limit bounds what its
// container writes (the kubelet evicts a pod past it).
func (r *Runtime) ProbeDiskQuota(ctx context.Context, image string) error { return ctx.Err() }

// WaitReady returns at once: Start returns when the container runs.
func (r *Runtime) WaitReady(ctx context.Context, id string) error {
	if _, err := r.record(ctx, id); err != nil {
		return err
	}
	return ctx.Err()
}

var invalidName = regexp.MustCompile(`[^a-z0-9.-]+`)

// objectName turns a sandbox's name into a Kubernetes object name.
func objectName(name string) string {
	n := invalidName.ReplaceAllString(strings.ToLower(name), "-")
	n = strings.Trim(n, "-.")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-.")
	}
	return n
}

// Create records s in a ConfigMap named after s.Name, which is the engine id.
// No pod runs until Start.
func (r *Runtime) Create(ctx context.Context, s sandbox.Spec) (string, error) {
	name := objectName(s.Name)
	if name == "" {
		return "", fmt.Errorf("sandbox name %q gives no Kubernetes name", s.Name)
	}
	lbl, err := objectLabels(s.Labels)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
		Data:       map[string]string{specKey: string(b)},
	}
	if r.storage != "" {
		cm.Annotations = map[string]string{annotationState: r.storage}
	}
	cm, err = r.cs.CoreV1().ConfigMaps(r.ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return "", wrap(err)
	}
	if r.storage != "" {
		if err := r.createState(ctx, cm, s); err != nil {
			// A failed Create leaves nothing behind.
			r.cs.CoreV1().ConfigMaps(r.ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
			return "", err
		}
	}
	return name, nil
}

// objectLabels are l and the driver's managed-by label, checked against
// Kubernetes' rules for labels.
func objectLabels(l map[string]string) (map[string]string, error) {
	out := map[string]string{LabelManagedBy: "tuxlab"}
	maps.Copy(out, l)
	if _, err := labels.ValidatedSelectorFromSet(out); err != nil {
		return nil, fmt.Errorf("labels not valid on Kubernetes: %w", err)
	}
	return out, nil
}

// record returns sandbox id's ConfigMap; ErrGone when it does not exist.
func (r *Runtime) record(ctx context.Context, id string) (*corev1.ConfigMap, error) {
	if objectName(id) != id {
		return nil, fmt.Errorf("%w: %q is no sandbox of this driver", sandbox.ErrGone, id)
	}
	cm, err := r.cs.CoreV1().ConfigMaps(r.ns).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return nil, wrap(err)
	}
	return cm, nil
}

// spec returns the Spec a ConfigMap holds.
func spec(cm *corev1.ConfigMap) (sandbox.Spec, error) {
	var s sandbox.Spec
	if err := json.Unmarshal([]byte(cm.Data[specKey]), &s); err != nil {
		return s, fmt.Errorf("sandbox %s: its spec: %w", cm.Name, err)
	}
	return s, nil
}

// pod returns sandbox id's pod, nil when it has none (stopped) or when it is
// being deleted.
func (r *Runtime) pod(ctx context.Context, id string) (*corev1.Pod, error) {
	p, err := r.cs.CoreV1().Pods(r.ns).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	if p.DeletionTimestamp != nil {
		return nil, nil
	}
	return p, nil
}

// Inspect returns a sandbox's state: its pod's, or stopped when it has none.
func (r *Runtime) Inspect(ctx context.Context, id string) (sandbox.State, error) {
	cm, err := r.record(ctx, id)
	if err != nil {
		return sandbox.State{}, err
	}
	p, err := r.pod(ctx, id)
	if err != nil {
		return sandbox.State{}, err
	}
	st := podState(cm, p)
	st.Created = cm.CreationTimestamp.UTC()
	return st, nil
}

// podState is the state of a sandbox of record cm and pod p (nil: none).
func podState(cm *corev1.ConfigMap, p *corev1.Pod) sandbox.State {
	st := sandbox.State{Status: "created"}
	if t, err := time.Parse(time.RFC3339Nano, cm.Annotations[annotationStarted]); err == nil {
		st.StartedAt = t
	}
	if t, err := time.Parse(time.RFC3339Nano, cm.Annotations[annotationFinished]); err == nil {
		st.FinishedAt, st.Status = t, "exited"
	}
	if p == nil {
		return st
	}
	st.Status = strings.ToLower(string(p.Status.Phase))
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != sandboxContainer {
			continue
		}
		switch {
		case c.State.Running != nil:
			st.Running, st.Status, st.StartedAt = true, "running", c.State.Running.StartedAt.UTC()
		case c.State.Terminated != nil:
			t := c.State.Terminated
			st.Status, st.ExitCode, st.OOMKilled = "exited", int(t.ExitCode), t.Reason == "OOMKilled"
			st.StartedAt, st.FinishedAt = t.StartedAt.UTC(), t.FinishedAt.UTC()
		}
	}
	return st
}

// List returns the sandboxes carrying every one of want.
func (r *Runtime) List(ctx context.Context, want map[string]string) ([]sandbox.Instance, error) {
	sel := labels.SelectorFromSet(want).String()
	cms, err := r.cs.CoreV1().ConfigMaps(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, wrap(err)
	}
	pods, err := r.cs.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, wrap(err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			byName[p.Name] = p
		}
	}
	out := []sandbox.Instance{}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if _, ok := cm.Data[specKey]; !ok {
			continue
		}
		st := podState(cm, byName[cm.Name])
		out = append(out, sandbox.Instance{EngineID: cm.Name, Labels: cm.Labels,
			State: sandbox.State{Running: st.Running, Status: st.Status}})
	}
	return out, nil
}

// Start makes the sandbox's pod and waits until its container runs; a
// running sandbox changes nothing. A network that does not exist is ErrGone.
func (r *Runtime) Start(ctx context.Context, id string) error {
	cm, err := r.record(ctx, id)
	if err != nil {
		return err
	}
	p, err := r.pod(ctx, id)
	if err != nil {
		return err
	}
	created := p == nil
	if created {
		s, err := spec(cm)
		if err != nil {
			return err
		}
		if err := r.checkNetwork(ctx, s.Network); err != nil {
			return err
		}
		if err := r.waitPodGone(ctx, id); err != nil { // a pod of a Stop may still be leaving
			return err
		}
		if p, err = r.cs.CoreV1().Pods(r.ns).Create(ctx, r.podFor(cm, s), metav1.CreateOptions{}); err != nil {
			return refused(err)
		}
	}
	started, err := r.waitRunning(ctx, id)
	if err != nil {
		return err
	}
	if err := r.annotate(ctx, id, map[string]string{annotationStarted: started.Format(time.RFC3339Nano), annotationFinished: ""}); err != nil {
		return err
	}
	if created {
		return r.recordBase(ctx, id, p)
	}
	return nil
}

// refused says why the API server refused a sandbox's pod when its
// admission did (Pod Security "baseline" on the sandbox namespace refuses a
// template's NET_RAW): a 503 naming the rule, which an operator must change,
// instead of an internal error.
func refused(err error) error {
	if !apierrors.IsForbidden(err) {
		return wrap(err)
	}
	msg := err.Error()
	if st, ok := err.(apierrors.APIStatus); ok {
		msg = st.Status().Message
	}
	return &errs.Error{Kind: errs.Unavailable, Err: err,
		Detail: "The cluster refuses this sandbox's pod (an operator must change the template or the namespace's policy): " + msg}
}

// annotate sets (or, for "", removes) annotations of sandbox id's record.
func (r *Runtime) annotate(ctx context.Context, id string, set map[string]string) error {
	ann := map[string]any{}
	for k, v := range set {
		if v == "" {
			ann[k] = nil
		} else {
			ann[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	_, err := r.cs.CoreV1().ConfigMaps(r.ns).Patch(ctx, id, "application/merge-patch+json", b, metav1.PatchOptions{})
	return wrap(err)
}

// pollEvery is how often the driver looks at a pod it waits for.
const pollEvery = 250 * time.Millisecond

// waitRunning waits until pod id's sandbox container runs and returns when
// it started. A pod that cannot start (its image missing, a refused
// container) is deleted and its reason returned.
func (r *Runtime) waitRunning(ctx context.Context, id string) (time.Time, error) {
	for {
		p, err := r.cs.CoreV1().Pods(r.ns).Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return time.Time{}, wrap(err)
		}
		if t, done, err := podStarted(p); done {
			if err != nil {
				r.deletePod(context.WithoutCancel(ctx), id, 0)
			}
			return t, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// failedToStart are the reasons a waiting container will not start by itself.
var failedToStart = map[string]bool{
	"ErrImageNeverPull": true, "InvalidImageName": true, "CreateContainerConfigError": true,
	"CreateContainerError": true, "RunContainerError": true, "ImagePullBackOff": true, "ErrImagePull": true,
	"CrashLoopBackOff": true,
}

// podStarted says whether p's sandbox container runs (done, its start), or
// cannot (done, an error), or not yet.
func podStarted(p *corev1.Pod) (time.Time, bool, error) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return time.Time{}, true, fmt.Errorf("pod %s ended (%s): %s", p.Name, p.Status.Phase, p.Status.Message)
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, c := range statuses {
		if w := c.State.Waiting; w != nil && failedToStart[w.Reason] {
			return time.Time{}, true, fmt.Errorf("pod %s: container %s: %s: %s", p.Name, c.Name, w.Reason, w.Message)
		}
		if t := c.State.Terminated; t != nil && (c.Name == sandboxContainer || t.ExitCode != 0) {
			return time.Time{}, true, fmt.Errorf("pod %s: container %s exited with %d (%s)", p.Name, c.Name, t.ExitCode, t.Reason)
		}
		if c.Name == sandboxContainer && c.State.Running != nil {
			return c.State.Running.StartedAt.UTC(), true, nil
		}
	}
	return time.Time{}, false, nil
}

// deletePod deletes pod id with grace seconds to end (0: at once).
func (r *Runtime) deletePod(ctx context.Context, id string, grace int64) error {
	err := r.cs.CoreV1().Pods(r.ns).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return wrap(err)
}

// waitPodGone waits until pod id no longer exists.
func (r *Runtime) waitPodGone(ctx context.Context, id string) error {
	for {
		_, err := r.cs.CoreV1().Pods(r.ns).Get(ctx, id, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return wrap(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// Stop deletes the sandbox's pod, giving its processes grace to end, and
// waits until it is gone; the record stays, so Start makes a new pod. What
// the sandbox wrote goes with the pod, but for its kept directories when it
// has a PersistentVolumeClaim.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	cm, err := r.record(ctx, id)
	if err != nil {
		return err
	}
	p, err := r.pod(ctx, id)
	if err != nil {
		return err
	}
	if p != nil {
		secs := max(int64((grace+time.Second-1)/time.Second), 1)
		if err := r.deletePod(ctx, id, secs); err != nil {
			return err
		}
	}
	if err := r.waitPodGone(ctx, id); err != nil {
		return err
	}
	if p == nil && cm.Annotations[annotationFinished] != "" {
		return nil
	}
	return r.annotate(ctx, id, map[string]string{annotationFinished: time.Now().UTC().Format(time.RFC3339Nano)})
}

// Remove deletes the sandbox's pod, at once, its PersistentVolumeClaim
// (which the cluster removes once the pod is gone) and its record.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	cm, err := r.record(ctx, id)
	if err != nil {
		return err
	}
	if err := r.deletePod(ctx, id, 0); err != nil {
		return err
	}
	if keepsState(cm) {
		if err := r.deleteState(ctx, id); err != nil {
			return err
		}
	}
	err = r.cs.CoreV1().ConfigMaps(r.ns).Delete(ctx, id, metav1.DeleteOptions{})
	return wrap(err)
}
