package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"tuxlab/internal/config"
	"tuxlab/internal/sandbox/kube"
)

// DefaultKubeconfig is where scripts/kube-up.sh leaves the admin kubeconfig.
const DefaultKubeconfig = "/var/lib/tuxlab/kube/admin.kubeconfig"

// KubeRequired reports whether a missing cluster must fail the tests rather
// than skip them: TUXLAB_TEST_KUBE=1, as CI sets it after scripts/kube-up.sh.
func KubeRequired() bool { return os.Getenv("TUXLAB_TEST_KUBE") == "1" }

// RequireKube returns the Option that runs a test server's sandboxes as pods
// on the cluster of KUBECONFIG (or scripts/kube-up.sh's), the configuration
// TUXLAB_SANDBOX_ENGINE=kubernetes gives, or stops the test: it fails when
// KubeRequired, and skips otherwise. Each server (New) then gets a namespace
// of its own, made for it and deleted when its test ends, which its
// replicas share (an Option after it that sets KubeNamespace keeps that
// namespace instead).
func RequireKube(t testing.TB) Option {
	t.Helper()
	path := Kubeconfig(t)
	if path == "" {
		return nil
	}
	// No namespace: New makes one for each server.
	return func(c *config.Config) { c.SandboxEngine, c.Kubeconfig, c.KubeNamespace = "kubernetes", path, "" }
}

// Kubeconfig returns the path of the kubeconfig of a cluster that answers
// (KUBECONFIG, or scripts/kube-up.sh's), or stops the test and returns "":
// it fails when KubeRequired, and skips otherwise.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	stop := t.Skipf
	if KubeRequired() {
		stop = t.Fatalf
	}
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		path = DefaultKubeconfig
	}
	if _, err := os.Stat(path); err != nil {
		stop("no kubeconfig (run ./scripts/kube-up.sh; TUXLAB_TEST_KUBE=1 makes this fatal): %v", err)
		return ""
	}
	// The driver's client, not one of the test's own: kube.New sets up
	// client-go's global logger once, and every use of client-go must come
	// after that (the race detector saw a plain client read it as New set it).
	rt, err := kube.New(kube.Options{Kubeconfig: path})
	if err != nil {
		stop("kubernetes: %v", err)
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		stop("no cluster answers at %s (run ./scripts/kube-up.sh; TUXLAB_TEST_KUBE=1 makes this fatal): %v", path, err)
		return ""
	}
	return path
}

// kubeClient is a client of the cluster of kubeconfig path.
func kubeClient(path string) (*kubernetes.Clientset, error) {
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(path)}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = time.Minute
	return kubernetes.NewForConfig(cfg)
}

// kubeNamespace makes a fresh namespace on the cluster of kubeconfig for one
// test server, waits for its default service account (the API server admits
// no pod before it), and deletes it, with whatever is left in it, when t ends.
func kubeNamespace(t testing.TB, kubeconfig string) string {
	t.Helper()
	cs, err := kubeClient(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "tuxlab-test-" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "tuxlab-apitest"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	for {
		if _, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return name
		}
		select {
		case <-ctx.Done():
			t.Fatalf("namespace %s has no default service account after a minute", name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// KubeObjects lists what is in e's namespace on the cluster: its pods and
// its ConfigMaps (but the CA bundle Kubernetes puts in every namespace), by
// kind and name, so a test sees whatever a sandbox left behind, labelled by
// tuxlab or not.
func (e *Env) KubeObjects(t testing.TB) []string {
	t.Helper()
	cs, err := kubeClient(e.Config.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods, err := cs.CoreV1().Pods(e.Config.KubeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := cs.CoreV1().ConfigMaps(e.Config.KubeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			out = append(out, "configmap/"+cm.Name)
		}
	}
	slices.Sort(out)
	return out
}
