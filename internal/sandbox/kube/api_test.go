package kube_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// TestThroughTheAPI runs tuxlab with TUXLAB_SANDBOX_ENGINE=kubernetes on the
// cluster: a learner's BusyBox sandbox is a running pod whose terminal
// echoes, deleting it deletes the pod, and the bundled machine template is
// refused with 503 saying machines need the QEMU driver.
func TestThroughTheAPI(t *testing.T) {
	t.Parallel()
	rt, path := requireCluster(t)
	if rt == nil {
		return
	}
	e := apitest.New(t, "sqlite", func(c *config.Config) {
		c.SandboxEngine, c.Kubeconfig = "kubernetes", path
		if ns := os.Getenv("TUXLAB_KUBE_NAMESPACE"); ns != "" {
			c.KubeNamespace = ns
		}
	})
	u := e.CreateUser("learner", auth.RoleStudent)
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, http.StatusOK).JSON(t, &templates)
	ids := map[string]int64{}
	for _, x := range templates {
		ids[x.Name] = x.ID
	}

	r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
		Body: map[string]any{"template_id": ids[sandbox.MachineTemplateName]}}).Expect(t, http.StatusServiceUnavailable)
	if !strings.Contains(r.Detail(), "Machines need the QEMU driver") {
		t.Errorf("a machine template on Kubernetes answered %q", r.Detail())
	}

	var c struct {
		ID          int64  `json:"id"`
		Status      string `json:"status"`
		TerminalURL string `json:"terminal_url"`
	}
	e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
		Body: map[string]any{"template_id": ids["BusyBox"]}}).Expect(t, http.StatusCreated).JSON(t, &c)
	if c.Status != "running" {
		t.Fatalf("created %+v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mine := map[string]string{sandbox.LabelInstance: e.App.Sandboxes.Instance(), sandbox.LabelContainer: fmt.Sprint(c.ID)}
	if list, err := rt.List(ctx, mine); err != nil || len(list) != 1 || !list[0].State.Running {
		t.Fatalf("the sandbox's pod: %+v, %v", list, err)
	}
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	tc.Exchange("echo on-kube-$((6*7))\n", "on-kube-42")
	tc.Hangup()

	e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", c.ID), Token: u.Token}).Expect(t, http.StatusOK)
	if list, err := rt.List(ctx, mine); err != nil || len(list) != 0 {
		t.Errorf("after delete the cluster still has %+v, %v", list, err)
	}
}
