package kube_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/kube"
	"tuxlab/internal/sandbox/sandboxtest"
)

// storageClass is the class the kept-state tests use: TUXLAB_KUBE_STORAGE_CLASS,
// else the one scripts/kube-up.sh makes.
func storageClass() string {
	if c := os.Getenv("TUXLAB_KUBE_STORAGE_CLASS"); c != "" {
		return c
	}
	return "tuxlab-local"
}

// requireStateCluster is requireCluster's driver with kept state, and an
// admin client of the same cluster, with volumes for the contract's 4
// sandboxes (requireVolumes).
func requireStateCluster(t *testing.T) (*kube.Runtime, kubernetes.Interface) {
	t.Helper()
	rt0, path := requireCluster(t)
	if rt0 == nil {
		return nil, nil
	}
	rt, err := kube.New(kube.Options{Kubeconfig: path, Namespace: os.Getenv("TUXLAB_KUBE_NAMESPACE"), StorageClass: storageClass()})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	requireVolumes(t, cs, 4)
	return rt, cs
}

// TestContractWithKeptState: the contract holds for sandboxes with a volume
// claim too. The contract's file is written at the root, which is not kept
// (StopDiscards).
func TestContractWithKeptState(t *testing.T) {
	t.Parallel()
	sandboxtest.RunContract(t, func(t *testing.T) sandbox.Runtime {
		if rt, _ := requireStateCluster(t); rt != nil {
			return rt
		}
		return nil
	}, sandboxtest.ContractOptions{
		Image: "tuxlab/sandbox-busybox:latest", ToolsImage: sandbox.DefaultToolsImage, StopDiscards: true,
	})
}

// TestKeptState: with a storage class, what a learner wrote in the kept
// directories outlives Stop and Start (with its owner and mode), what it
// wrote elsewhere does not, the claim goes with the sandbox's record, and
// Remove leaves no claim behind.
func TestKeptState(t *testing.T) {
	t.Parallel()
	rt, cs := requireStateCluster(t)
	if rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tools, err := rt.ToolsVolume(ctx, sandbox.DefaultToolsImage)
	if err != nil {
		t.Fatal(err)
	}
	tag := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	id, err := rt.Create(ctx, sandbox.Spec{Name: "tuxlab-kept-" + tag, Image: "tuxlab/sandbox-busybox:latest", User: "0",
		Cmd:         []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
		Labels:      map[string]string{sandbox.LabelManaged: "true", sandbox.LabelInstance: "kept-" + tag},
		MemoryBytes: 64 << 20, NanoCPUs: 500_000_000, Network: "none", ToolsVolume: tools,
		CapAdd: []string{"CHOWN", "DAC_OVERRIDE", "FOWNER"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Remove(context.Background(), id) })
	run := func(script string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code, err := rt.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}}, nil, &out, &errOut)
		if err != nil || code != 0 {
			t.Fatalf("%q: exit %d, %v: %s", script, code, err, errOut.String())
		}
		return out.String()
	}

	pvc, err := cs.CoreV1().PersistentVolumeClaims(rt.Namespace()).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sandbox's claim: %v", err)
	}
	cm, err := cs.CoreV1().ConfigMaps(rt.Namespace()).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := pvc.OwnerReferences; len(o) != 1 || o[0].UID != cm.UID || o[0].Kind != "ConfigMap" {
		t.Errorf("the claim's owners %+v; want the record %s", o, cm.UID)
	}

	if err := rt.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	image := run("stat -c '%a %u' /root /home")
	run("echo home > /root/kept && mkdir -p /home/kim && echo kim > /home/kim/notes && chown -R 1000:1000 /home/kim && chmod 750 /home/kim && " +
		"echo srv > /srv/site && echo root > /lost")
	for range 2 {
		if err := rt.Stop(ctx, id, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf("%shome\nkim\n1000 750\nsrv\nnone\n", image)
	if got := run("stat -c '%a %u' /root /home; cat /root/kept /home/kim/notes; stat -c '%u %a' /home/kim; cat /srv/site; cat /lost 2>/dev/null || echo none"); got != want {
		t.Errorf("after Stop and Start:\n%s\nwant\n%s", got, want)
	}

	if err := rt.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.CoreV1().PersistentVolumeClaims(rt.Namespace()).Get(ctx, id, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil || ctx.Err() != nil {
			t.Fatalf("the claim after Remove: %v, %v", err, ctx.Err())
		}
		time.Sleep(250 * time.Millisecond)
	}
	if _, err := rt.Inspect(ctx, id); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Inspect after Remove = %v", err)
	}
}

// requireVolumes fails the test unless storageClass() exists and, when it
// has no provisioner (kube-up's), has n volumes left: without, the test's
// sandboxes would wait for one until their deadline.
func requireVolumes(t *testing.T, cs kubernetes.Interface, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, storageClass(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("storage class %s (scripts/kube-up.sh makes tuxlab-local; TUXLAB_KUBE_STORAGE_CLASS names another): %v", storageClass(), err)
	}
	if sc.Provisioner != "kubernetes.io/no-provisioner" {
		return
	}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	free := 0
	for _, pv := range pvs.Items {
		if pv.Spec.StorageClassName == sc.Name && pv.Status.Phase == corev1.VolumeAvailable {
			free++
		}
	}
	if free < n {
		t.Fatalf("storage class %s has %d volumes left, %d needed: run scripts/kube-up.sh, which tops its pool up", sc.Name, free, n)
	}
}
