package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/config"
)

// The tests of tuxlab with its sandboxes on Kubernetes
// (TUXLAB_SANDBOX_ENGINE=kubernetes) run on a real cluster: scripts/kube-up.sh's
// in CI, after the test suite (.ci/run, TUXLAB_TEST_KUBE=1 go test -run Kube).
// Each server gets a namespace of its own (apitest.RequireKube).

// TestKubeSandboxEndToEnd: through the HTTP API, with the sandboxes as pods:
// a sandbox of the BusyBox template is a running pod; its terminal echoes,
// resizes (stty size answers the new size); a laboratory's check fails fresh
// and passes once the learner's fix is typed in the lab sandbox's terminal;
// stop deletes the pod and keeps the sandbox, start makes a new pod, and
// delete (and the lab's submission) leaves no pod and no ConfigMap.
func TestKubeSandboxEndToEnd(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		c := createSandbox(t, e, alice.Token, busyboxTemplate(t, e))
		if c.Status != "running" {
			t.Fatalf("created %+v", c)
		}
		pod := "pod/" + engineID(t, e, c.ID)
		if got := e.KubeObjects(t); !slices.Contains(got, pod) {
			t.Fatalf("no %s on the cluster: %v", pod, got)
		}

		tc := e.OpenTerminal(t, c.TerminalURL, alice.Token, 80, 24)
		tc.Exchange("echo kube-$((6*7))\n", "kube-42\r\n")
		tc.SendControl(map[string]any{"type": "resize", "cols": 100, "rows": 33})
		tc.Exchange("stty size\n", "33 100\r\n")
		tc.End()

		id := oneTaskLab(t, e, admin, "kube", "#!/bin/sh\n# lab-check-secret-kube\n[ -f /home/learner/fixed ] || { echo 'FAIL: not fixed'; exit 1; }\n")
		at := startLab(t, e, alice.Token, id)
		if taskPassed(t, post(e, alice.Token, labPath(id, "check"), nil)) {
			t.Fatal("the check passed before the learner's fix")
		}
		lab := e.OpenTerminal(t, terminalPath(*at.ContainerID), alice.Token, 80, 24)
		lab.Exchange("touch /home/learner/fixed && echo fixed-$((40+2))\n", "fixed-42")
		lab.End()
		if r := post(e, alice.Token, labPath(id, "check"), nil); !taskPassed(t, r) {
			t.Fatalf("the check failed after the learner's fix: %s", r.Body)
		}
		var done labAttemptBody
		post(e, alice.Token, labPath(id, "submit"), nil).Expect(t, http.StatusOK).JSON(t, &done)
		if !done.Passed || done.SandboxRemovedAt == nil {
			t.Fatalf("submitted %+v, want passed with its sandbox removed", done)
		}

		var got containerBody
		post(e, alice.Token, fmt.Sprintf("/api/containers/%d/stop", c.ID), nil).Expect(t, http.StatusOK).JSON(t, &got)
		if got.Status != "stopped" {
			t.Fatalf("stopped %+v", got)
		}
		if objs := e.KubeObjects(t); slices.Contains(objs, pod) || !slices.Contains(objs, "configmap/"+engineID(t, e, c.ID)) {
			t.Fatalf("a stopped sandbox is its ConfigMap without a pod; the cluster has %v", objs)
		}
		post(e, alice.Token, fmt.Sprintf("/api/containers/%d/start", c.ID), nil).Expect(t, http.StatusOK).JSON(t, &got)
		if got.Status != "running" {
			t.Fatalf("started %+v", got)
		}
		tc = e.OpenTerminal(t, c.TerminalURL, alice.Token, 80, 24)
		tc.Exchange("echo again-$((6*7))\n", "again-42\r\n")
		tc.End()
		deleteSandbox(t, e, alice.Token, c.ID)
		e.Get(fmt.Sprintf("/api/containers/%d", c.ID), alice.Token).Expect(t, http.StatusNotFound)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			left := e.KubeObjects(t)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a minute after the deletions the cluster still has %v", left)
			}
		}
	}, apitest.RequireKube(t), func(c *config.Config) { c.LabCheckInterval = time.Millisecond })
}

// TestKubeReplicasServeOneSandbox is TestReplicasServeOneSandbox with the
// sandboxes as pods: created through one replica, terminal and lab check
// through the other.
func TestKubeReplicasServeOneSandbox(t *testing.T) {
	t.Parallel()
	apitest.Each(t, replicasServeOneSandbox, apitest.RequireKube(t))
}

// TestKubeReplicasHoldTheHostCap is TestReplicasHoldTheHostCap with the
// sandboxes as pods.
func TestKubeReplicasHoldTheHostCap(t *testing.T) {
	t.Parallel()
	apitest.Each(t, replicasHoldTheHostCap, apitest.RequireKube(t), oneRunning)
}
