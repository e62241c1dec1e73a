package kube_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	sigsyaml "sigs.k8s.io/yaml"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/kube"
)

// manifestDir holds the Kubernetes manifests of tuxlab (docs/operations.md,
// "Scale-out on Kubernetes").
const manifestDir = "../../../deploy/kubernetes"

// manifest is one object of one file of manifestDir.
type manifest struct {
	file string
	gvk  schema.GroupVersionKind
	obj  runtime.Object
}

// decodeStrict decodes a YAML document into its typed object of client-go's
// scheme, failing on a field the type does not have or on a duplicate one.
func decodeStrict(doc []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	s := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	return s.Decode(doc, nil, nil)
}

// readManifests decodes every object of every YAML file of dir but the
// kustomization, strictly.
func readManifests(t *testing.T, dir string) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	var out []manifest
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, gvk, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
				continue
			}
			out = append(out, manifest{file: filepath.Base(f), gvk: *gvk, obj: obj})
		}
	}
	return out
}

// stripComments drops YAML comment lines, so a document of comments only
// counts as empty.
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
		}
	}
	return out.Bytes()
}

// only returns the one object of type T among ms.
func only[T runtime.Object](t *testing.T, ms []manifest) T {
	t.Helper()
	var found []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T in the manifests; want 1", len(found), zero)
	}
	return found[0]
}

// TestDecodeStrictly: a misspelled or misplaced field fails here, not when
// an operator applies the manifests.
func TestDecodeStrictly(t *testing.T) {
	bad := []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  prots: []\n")
	if _, _, err := decodeStrict(bad); err == nil || !strings.Contains(err.Error(), "prots") {
		t.Fatalf("decoding a Service with an unknown field: %v; want an error naming it", err)
	}
	ms := readManifests(t, manifestDir)
	kinds := map[string]bool{}
	for _, m := range ms {
		kinds[m.gvk.Kind] = true
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Secret",
		"PersistentVolumeClaim", "Deployment", "PodDisruptionBudget", "Service", "Ingress"} {
		if !kinds[k] {
			t.Errorf("no %s in %s", k, manifestDir)
		}
	}
}

// TestKustomizationListsEveryManifest: `kubectl apply -k` applies every file
// but the example Secret.
func TestKustomizationListsEveryManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(manifestDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := sigsyaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	var want []string
	for _, f := range files {
		if n := filepath.Base(f); n != "kustomization.yaml" && n != "secret.example.yaml" {
			want = append(want, n)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v; want %v", got, want)
	}
}

// driverRules are the calls of this driver (kube.go, pod.go, exec.go), as
// RBAC rules: what the Role must grant, and all it may.
var driverRules = map[string][]string{
	"/configmaps":                       {"create", "delete", "get", "list", "patch"},
	"/pods":                             {"create", "delete", "get", "list"},
	"/pods/exec":                        {"create", "get"}, // POST for SPDY, GET for WebSocket
	"/persistentvolumeclaims":           {"create", "delete"},
	"networking.k8s.io/networkpolicies": {"create", "delete", "get"},
}

// TestRBACIsTheDriversAndNamespaced: tuxlab's identity may do what the
// driver does in the sandbox namespace and nothing else, nowhere else.
func TestRBACIsTheDriversAndNamespaced(t *testing.T) {
	ms := readManifests(t, manifestDir)
	cm := only[*corev1.ConfigMap](t, ms)
	ns := cm.Data["TUXLAB_KUBE_NAMESPACE"]
	if ns == "" {
		t.Fatal("the ConfigMap sets no TUXLAB_KUBE_NAMESPACE")
	}
	for _, m := range ms {
		switch m.obj.(type) {
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			t.Errorf("%s: %s %s: nothing cluster-wide", m.file, m.gvk.Kind, m.obj.(metav1.Object).GetName())
		}
	}
	role := only[*rbacv1.Role](t, ms)
	if role.Namespace != ns {
		t.Errorf("Role in namespace %q; want the sandboxes' %q", role.Namespace, ns)
	}
	got := map[string][]string{}
	for _, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: want resources only", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = slices.Sorted(slices.Values(append(got[g+"/"+res], r.Verbs...)))
			}
		}
	}
	if !maps.EqualFunc(got, driverRules, slices.Equal) {
		t.Errorf("the Role grants %v; the driver needs exactly %v", got, driverRules)
	}
	sa := only[*corev1.ServiceAccount](t, ms)
	rb := only[*rbacv1.RoleBinding](t, ms)
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}
	if rb.Namespace != ns || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name ||
		len(rb.Subjects) != 1 || rb.Subjects[0] != want {
		t.Errorf("RoleBinding %s/%s binds %+v to %+v; want Role %s to %+v in %s", rb.Namespace, rb.Name,
			rb.Subjects, rb.RoleRef, role.Name, want, ns)
	}
	if sa.Namespace == ns {
		t.Errorf("tuxlab's ServiceAccount is in the sandbox namespace %s: its pods and Secret belong apart", ns)
	}
	d := only[*appsv1.Deployment](t, ms)
	if d.Spec.Template.Spec.ServiceAccountName != sa.Name || d.Namespace != sa.Namespace {
		t.Errorf("the Deployment runs as %s/%s; want %s/%s", d.Namespace, d.Spec.Template.Spec.ServiceAccountName,
			sa.Namespace, sa.Name)
	}
}

// deploymentEnv returns the environment the Deployment's container gets:
// the ConfigMap's and the Secret's keys it names, then its own env.
func deploymentEnv(t *testing.T, ms []manifest) map[string]string {
	t.Helper()
	d := only[*appsv1.Deployment](t, ms)
	cm := only[*corev1.ConfigMap](t, ms)
	sec := only[*corev1.Secret](t, ms)
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil && from.ConfigMapRef.Name == cm.Name:
			maps.Copy(env, cm.Data)
		case from.SecretRef != nil && from.SecretRef.Name == sec.Name:
			maps.Copy(env, sec.StringData)
		default:
			t.Errorf("envFrom %+v names no object of the manifests", from)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("env %s: valueFrom is not checked here", e.Name)
		}
		env[e.Name] = e.Value
	}
	return env
}

// TestEnvIsTuxlabsConfiguration: every variable the Deployment sets is one
// tuxlab reads (internal/config), and the values load as a production
// server's configuration on the Kubernetes engine.
func TestEnvIsTuxlabsConfiguration(t *testing.T) {
	ms := readManifests(t, manifestDir)
	env := deploymentEnv(t, ms)
	for _, k := range []string{"DATABASE_URL", "SECRET_KEY", "TUXLAB_SANDBOX_ENGINE", "TUXLAB_KUBE_NAMESPACE", "TUXLAB_PUBLIC_URL"} {
		if env[k] == "" {
			t.Errorf("the Deployment sets no %s", k)
		}
	}
	asked := map[string]bool{}
	cfg, err := config.Load(func(k string) string { asked[k] = true; return env[k] })
	if err != nil {
		t.Fatalf("tuxlab refuses the manifests' configuration: %v", err)
	}
	if err := cfg.CheckServe(); err != nil {
		t.Errorf("serve refuses the manifests' configuration: %v", err)
	}
	for k := range env {
		if !asked[k] {
			t.Errorf("the Deployment sets %s, which tuxlab does not read", k)
		}
	}
	if cfg.Env != config.Production || cfg.SandboxEngine != "kubernetes" || !config.IsPostgresURL(cfg.DatabaseURL) {
		t.Errorf("env %s, engine %s, database %q; want production, kubernetes, PostgreSQL (replicas share it)",
			cfg.Env, cfg.SandboxEngine, cfg.DatabaseURL)
	}
	// The image runs as a non-root user with a read-only root: tuxlab
	// writes only in its data directory (and SQLite's /tmp), both volumes.
	d := only[*appsv1.Deployment](t, ms)
	c := d.Spec.Template.Spec.Containers[0]
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = !m.ReadOnly
	}
	if !mounts[cfg.DataDir] || !mounts["/tmp"] {
		t.Errorf("writable mounts %v; want the data directory %s and /tmp", mounts, cfg.DataDir)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the container's root file system is writable")
	}
	if p := d.Spec.Template.Spec.SecurityContext; p == nil || p.RunAsNonRoot == nil || !*p.RunAsNonRoot {
		t.Error("the pod does not ask runAsNonRoot")
	}
	// The grace covers the preStop sleep, serve's --shutdown-grace and a
	// margin for the warm pool's removal.
	var shutdown time.Duration = 20 * time.Second
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--shutdown-grace="); ok {
			if shutdown, err = time.ParseDuration(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	var preStop time.Duration
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		preStop = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil ||
		time.Duration(*g)*time.Second < preStop+shutdown+15*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v; want at least preStop %v + shutdown grace %v + 15 s", g, preStop, shutdown)
	}
	t.Run("probes", func(t *testing.T) { probesAnswer(t, ms, cfg) })
}

// probesAnswer: the Deployment's probes name the port tuxlab listens on and
// paths the real server answers 200 on (liveness without the database,
// readiness with it).
func probesAnswer(t *testing.T, ms []manifest, cfg config.Config) {
	d := only[*appsv1.Deployment](t, ms)
	c := d.Spec.Template.Spec.Containers[0]
	_, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	probes := map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe}
	want := map[string]string{"liveness": "/healthz", "readiness": "/readyz", "startup": "/healthz"}
	e := apitest.New(t, "sqlite")
	for kind, p := range probes {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: none, or not HTTP", kind)
			continue
		}
		if p.HTTPGet.Path != want[kind] {
			t.Errorf("%s probe on %s; want %s", kind, p.HTTPGet.Path, want[kind])
		}
		if n := containerPort(c, p.HTTPGet.Port.String()); n != port {
			t.Errorf("%s probe on port %s (%s); tuxlab listens on %s (TUXLAB_ADDR)", kind, p.HTTPGet.Port.String(), n, port)
		}
		res, err := http.Get(e.URL + p.HTTPGet.Path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s probe: GET %s = %d; want 200", kind, p.HTTPGet.Path, res.StatusCode)
		}
	}
	svc := only[*corev1.Service](t, ms)
	for _, sp := range svc.Spec.Ports {
		if n := containerPort(c, sp.TargetPort.String()); n != port {
			t.Errorf("Service port %s targets %s (%s); tuxlab listens on %s", sp.Name, sp.TargetPort.String(), n, port)
		}
	}
}

// containerPort resolves a probe's or a Service's port (a name or a
// number) to the container's port number.
func containerPort(c corev1.Container, p string) string {
	for _, cp := range c.Ports {
		if n := strconv.Itoa(int(cp.ContainerPort)); cp.Name == p || n == p {
			return n
		}
	}
	return p
}

// TestObjectsFitTogether: the Service, the PodDisruptionBudget and the
// Ingress reach the Deployment's pods, and two replicas keep one through a
// drain.
func TestObjectsFitTogether(t *testing.T) {
	ms := readManifests(t, manifestDir)
	d := only[*appsv1.Deployment](t, ms)
	pod := labels(d.Spec.Template.Labels)
	svc := only[*corev1.Service](t, ms)
	if len(svc.Spec.Selector) == 0 || !selects(svc.Spec.Selector, pod) {
		t.Errorf("the Service selects %v; the pods are %v", svc.Spec.Selector, pod)
	}
	pdb := only[*policyv1.PodDisruptionBudget](t, ms)
	if pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, pod) || pdb.Spec.MinAvailable == nil ||
		pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("the PodDisruptionBudget %+v; want minAvailable 1 of the pods %v", pdb.Spec, pod)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v; want 2", d.Spec.Replicas)
	}
	ing := only[*networkingv1.Ingress](t, ms)
	for _, r := range ing.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			if b := p.Backend.Service; b == nil || b.Name != svc.Name || b.Port.Name != svc.Spec.Ports[0].Name {
				t.Errorf("the Ingress path %s goes to %+v; want Service %s port %s", p.Path, b, svc.Name, svc.Spec.Ports[0].Name)
			}
		}
	}
	for _, a := range []string{"proxy-read-timeout", "proxy-send-timeout", "affinity"} {
		if ing.Annotations["nginx.ingress.kubernetes.io/"+a] == "" {
			t.Errorf("the Ingress has no %s: terminals need it (docs/operations.md)", a)
		}
	}
	for _, m := range ms {
		o := m.obj.(metav1.Object)
		if _, ns := m.obj.(*corev1.Namespace); !ns && o.GetNamespace() == "" {
			t.Errorf("%s: %s %s has no namespace", m.file, m.gvk.Kind, o.GetName())
		}
	}
}

type labels map[string]string

// selects reports whether selector matches every label of it in l.
func selects(selector map[string]string, l labels) bool {
	for k, v := range selector {
		if l[k] != v {
			return false
		}
	}
	return true
}

// TestServerDryRun has the API server of scripts/kube-up.sh's cluster (or
// KUBECONFIG's) validate every manifest: a server-side apply with dryRun
// All, which runs its validation and admission and stores nothing. The
// namespaces must exist for the namespaced objects' dry run: one that does
// not is made for the test and deleted after it.
func TestServerDryRun(t *testing.T) {
	t.Parallel()
	rt, path := requireCluster(t)
	if rt == nil {
		return
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(rc)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms := readManifests(t, manifestDir)
	for _, m := range ms {
		ns, ok := m.obj.(*corev1.Namespace)
		if !ok {
			continue
		}
		waitNamespaceNotTerminating(ctx, t, cs, ns.Name)
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			t.Fatal(err)
		default:
			name := ns.Name
			t.Cleanup(func() {
				if err := cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
					t.Errorf("deleting the test's namespace %s: %v", name, err)
				}
			})
		}
	}
	for _, m := range ms {
		mapping, err := mapper.RESTMapping(m.gvk.GroupKind(), m.gvk.Version)
		if err != nil {
			t.Errorf("%s: %s: %v", m.file, m.gvk, err)
			continue
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m.obj)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetGroupVersionKind(m.gvk)
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == "namespace" {
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		_, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "tuxlab-deploy-test", Force: true, DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Errorf("%s: %s %s: the API server refuses it: %v", m.file, m.gvk.Kind, obj.GetName(), err)
		}
	}
}

// waitNamespaceNotTerminating waits while namespace name is being deleted
// (by this test's previous run): nothing can be made, even in a dry run, in
// a namespace that terminates.
func waitNamespaceNotTerminating(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	for {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp == nil) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("namespace %s still terminating: %v", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestRoleSufficesForTheDriver: the manifests' Role, bound to a user of the
// test's own, lets the driver acting as that user (impersonated) run a whole
// sandbox: create, start (with the "none" network's policy), a command
// through exec, a terminal, disk usage, a network made and removed, list,
// stop and remove. TestRBACIsTheDriversAndNamespaced holds the Role to no
// more than these calls; this test, to no less. The one call it does not
// allow is the cluster-wide list of nodes, made for an image without a
// registry host.
func TestRoleSufficesForTheDriver(t *testing.T) {
	t.Parallel()
	admin, path := requireCluster(t)
	if admin == nil {
		return
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := admin.Namespace()
	id := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	user := "tuxlab-deploy-test-" + id

	role := only[*rbacv1.Role](t, readManifests(t, manifestDir)).DeepCopy()
	role.ObjectMeta = metav1.ObjectMeta{Name: user, Namespace: ns}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, err := range []error{cs.RbacV1().RoleBindings(ns).Delete(ctx, user, metav1.DeleteOptions{}),
			cs.RbacV1().Roles(ns).Delete(ctx, user, metav1.DeleteOptions{})} {
			if err != nil {
				t.Errorf("deleting the test's RBAC: %v", err)
			}
		}
	})

	// A kubeconfig of the admin's acting as user.
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate = user
	}
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		t.Fatal(err)
	}
	// With kept state: the Role must grant the claims too.
	requireVolumes(t, cs, 1)
	rt, err := kube.New(kube.Options{Kubeconfig: kcPath, Namespace: ns, StorageClass: storageClass()})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := rt.ImageExists(ctx, "tuxlab/sandbox-busybox:latest"); !apierrors.IsForbidden(err) {
		t.Errorf("ImageExists of an image without a registry host as %s: %v; want forbidden (list nodes)", user, err)
	}
	if ok, err := rt.ImageExists(ctx, "registry.example.org/tuxlab/sandbox-busybox:1"); !ok || err != nil {
		t.Errorf("ImageExists of a registry's image: %v, %v; want true without asking the cluster", ok, err)
	}
	// The Role may take a moment to reach the authorizer.
	var sid string
	for {
		sid, err = rt.Create(ctx, sandbox.Spec{
			Name: "tuxlab-deploy-" + id, Image: "tuxlab/sandbox-busybox:latest", Hostname: "deploy", User: "0",
			Cmd:    []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
			Labels: map[string]string{sandbox.LabelManaged: "deploy-test", sandbox.LabelInstance: user},
			// ToolsVolume would list nodes to find the tools image: named directly.
			MemoryBytes: 64 << 20, NanoCPUs: 500_000_000, Network: "none", ToolsVolume: sandbox.DefaultToolsImage,
		})
		if !apierrors.IsForbidden(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Create as %s: %v", user, err)
	}
	t.Cleanup(func() {
		if err := admin.Remove(context.Background(), sid); err != nil && !errors.Is(err, sandbox.ErrGone) {
			t.Errorf("removing sandbox %s: %v", sid, err)
		}
	})
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s as %s: %v", what, user, err)
		}
	}
	step("Start", rt.Start(ctx, sid))
	st, err := rt.Inspect(ctx, sid)
	step("Inspect", err)
	if !st.Running {
		t.Fatalf("Inspect after Start: %+v; want running", st)
	}
	var out bytes.Buffer
	code, err := rt.Run(ctx, sid, sandbox.ExecSpec{Cmd: []string{"echo", "deployed"}}, nil, &out, io.Discard)
	step("Run", err)
	if code != 0 || strings.TrimSpace(out.String()) != "deployed" {
		t.Errorf("Run echo: %d %q", code, out.String())
	}
	sess, err := rt.Exec(ctx, sid, sandbox.ExecSpec{Cmd: []string{"/bin/sh"}, TTY: true})
	step("Exec", err)
	step("Resize", sess.Resize(ctx, 100, 30))
	_, err = sess.Write([]byte("exit 3\n"))
	step("terminal input", err)
	go io.Copy(io.Discard, sess)
	code, err = sess.Wait(ctx)
	step("terminal's end", err)
	if code != 3 {
		t.Errorf("terminal ended with %d; want 3", code)
	}
	sess.Close()
	_, err = rt.DiskUsage(ctx, []string{sid})
	step("DiskUsage", err)
	network := "tuxlab-deploy-" + id + "-net"
	step("EnsureNetwork", rt.EnsureNetwork(ctx, network, map[string]string{sandbox.LabelInstance: user}))
	step("RemoveNetwork", rt.RemoveNetwork(ctx, network))
	list, err := rt.List(ctx, map[string]string{sandbox.LabelInstance: user})
	step("List", err)
	if len(list) != 1 || list[0].EngineID != sid {
		t.Errorf("List: %+v; want %s", list, sid)
	}
	step("Stop", rt.Stop(ctx, sid, time.Second))
	step("Remove", rt.Remove(ctx, sid))

	// Through the API, as that identity: a template whose image has no
	// registry host is a clear 503 telling the operator what to do, not a
	// 500 (the driver may not list the nodes).
	e := apitest.New(t, "sqlite", func(c *config.Config) {
		c.SandboxEngine, c.Kubeconfig, c.KubeNamespace = "kubernetes", kcPath, ns
	})
	u := e.CreateUser("learner", auth.RoleStudent)
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, http.StatusOK).JSON(t, &templates)
	for _, tpl := range templates {
		if tpl.Name != "BusyBox" {
			continue
		}
		r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
			Body: map[string]any{"template_id": tpl.ID}}).Expect(t, http.StatusServiceUnavailable)
		if !strings.Contains(r.Detail(), "registry") {
			t.Errorf("a template image without a registry host answered %q; want the operator told to name its registry", r.Detail())
		}
	}
}

// TestSandboxesPassPodSecurity: in a namespace labelled as the manifests'
// sandbox namespace (Pod Security "baseline" enforced, so that tuxlab's
// right to create pods there cannot make a privileged one), a sandbox with
// the Debian template's capabilities starts, and one whose template keeps
// NET_RAW, which tuxlab allows and baseline does not, is refused with a 503
// that names the rule.
func TestSandboxesPassPodSecurity(t *testing.T) {
	t.Parallel()
	admin, path := requireCluster(t)
	if admin == nil {
		return
	}
	var sandboxNS *corev1.Namespace
	ms := readManifests(t, manifestDir)
	cm := only[*corev1.ConfigMap](t, ms)
	for _, m := range ms {
		if ns, ok := m.obj.(*corev1.Namespace); ok && ns.Name == cm.Data["TUXLAB_KUBE_NAMESPACE"] {
			sandboxNS = ns
		}
	}
	if sandboxNS == nil || sandboxNS.Labels["pod-security.kubernetes.io/enforce"] != "baseline" {
		t.Fatalf("the sandbox namespace %+v enforces no Pod Security baseline", sandboxNS)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	name := "tuxlab-deploy-psa-" + id
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sandboxNS.Labels}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the test's namespace %s: %v", name, err)
		}
	})
	// With kept state: the init container that seeds the claim passes too.
	requireVolumes(t, cs, 2)
	rt, err := kube.New(kube.Options{Kubeconfig: path, Namespace: name, StorageClass: storageClass()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		caps    []string
		refused bool
	}{
		{"debian's capabilities", []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}, false},
		{"net_raw", []string{"NET_RAW"}, true},
	}
	for i, tt := range tests {
		sid, err := rt.Create(ctx, sandbox.Spec{
			Name: fmt.Sprintf("tuxlab-psa-%s-%d", id, i), Image: "tuxlab/sandbox-busybox:latest", User: "0",
			Cmd:    []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
			Labels: map[string]string{sandbox.LabelManaged: "deploy-test", sandbox.LabelInstance: name},
			CapAdd: tt.caps, MemoryBytes: 64 << 20, NanoCPUs: 500_000_000, Network: "none", ToolsVolume: sandbox.DefaultToolsImage,
		})
		if err != nil {
			t.Fatalf("%s: Create: %v", tt.name, err)
		}
		err = rt.Start(ctx, sid)
		var e *errs.Error
		switch {
		case !tt.refused && err != nil:
			t.Errorf("%s: Start: %v; want it running under baseline", tt.name, err)
		case tt.refused && (!errors.As(err, &e) || e.Kind != errs.Unavailable || !strings.Contains(e.Detail, "NET_RAW")):
			t.Errorf("%s: Start: %v; want a 503 naming NET_RAW", tt.name, err)
		}
		if err := rt.Remove(ctx, sid); err != nil {
			t.Errorf("%s: Remove: %v", tt.name, err)
		}
	}
}
