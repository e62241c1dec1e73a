package sandbox_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// hostOnNetwork is the real engine, except that its sandbox networks are
// plain internal bridges on which the host holds the gateway address, as
// they were made before: a host that learners reach. Their subnet is outside
// the sandbox pool, which scripts/ensure-engine.sh's firewall rules name.
type hostOnNetwork struct{ sandbox.Runtime }

func (h hostOnNetwork) EnsureNetwork(ctx context.Context, name string, labels map[string]string) error {
	c, err := client.New(client.FromEnv)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Internal: true, Labels: labels,
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.212.254.0/28")}}}})
	return err
}

// TestIsolationCheck: the start-up check finds the engine's sandbox networks
// isolated from the host, finds a network on which the host answers, and
// leaves no container or network behind either way.
func TestIsolationCheck(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	f := newFixture(t, db)
	ctx := context.Background()
	if got := f.svc.Isolation(); got.Checked {
		t.Fatalf("checked before any check: %+v", got)
	}
	iso, err := f.svc.CheckIsolation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !iso.Checked || iso.Problem != "" || f.svc.Isolation() != iso {
		t.Fatalf("the engine's sandbox networks: %+v", iso)
	}
	leftovers := func(svc *sandbox.Service) {
		t.Helper()
		if in, err := f.rt.List(ctx, map[string]string{sandbox.LabelInstance: svc.Instance()}); err != nil || len(in) != 0 {
			t.Fatalf("containers left: %+v %v", in, err)
		}
		c, err := client.New(client.FromEnv)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		nets, err := c.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("label", sandbox.LabelInstance+"="+svc.Instance())})
		if err != nil || len(nets.Items) != 0 {
			t.Fatalf("networks left: %+v %v", nets.Items, err)
		}
	}
	leftovers(f.svc)

	open := f.service(t, hostOnNetwork{f.rt}, sandbox.Options{Network: "tuxlab-open"})
	iso, err = open.CheckIsolation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !iso.Checked || !strings.Contains(iso.Problem, "10.212.254.1 and the host answered") {
		t.Fatalf("a network on which the host answers: %+v", iso)
	}
	leftovers(open)
}
