package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Sandbox networks (templates with network) must reach a learner's own
// sandboxes and nothing on the host: a service bound to the host's 0.0.0.0
// would otherwise answer learners at the network's gateway address. The
// Docker driver makes each network so that the host holds no address on it;
// scripts/ensure-engine.sh adds firewall rules besides. Whether that holds on
// this engine is checked once the engine answers, by trying: a throwaway
// sandbox on a network made as learners' are connects to its gateway, and a
// host that answers (even with a refusal) is a host learners can reach.

// Isolation is what the check of sandbox networks found.
type Isolation struct {
	Checked bool      // false until the check ran to its end
	At      time.Time // when it ran
	// Problem says, for operators, how a sandbox reached the host; empty
	// when nothing on the host answered.
	Problem string
}

// Isolation returns what the last check of sandbox networks found.
func (s *Service) Isolation() Isolation {
	if iso := s.isolation.Load(); iso != nil {
		return *iso
	}
	return Isolation{}
}

// isolationProbe connects from a sandbox to its default gateway's TCP port 1:
// a connection or a refusal means the host holds that address and answers;
// a timeout or "no route" means nothing does. It prints "answers ADDR" or
// "isolated". Both BusyBox's nc and Debian's (which says why only with -v,
// which BusyBox's refuses) are understood.
const isolationProbe = `command -v ip >/dev/null && command -v nc >/dev/null || { echo "no-tools"; exit 0; }
gw=$(ip route | awk '$1 == "default" {print $3; exit}')
[ -n "$gw" ] || { echo isolated; exit 0; }
out=$(nc -v -w 2 "$gw" 1 </dev/null 2>&1) && { echo "answers $gw"; exit 0; }
case $out in *"invalid option"* | *"unrecognized option"*)
	out=$(nc -w 2 "$gw" 1 </dev/null 2>&1) && { echo "answers $gw"; exit 0; } ;;
esac
case $out in *refused*) echo "answers $gw" ;; *) echo isolated ;; esac`

// Labels of a throwaway container (the network check's): LabelManaged has
// this value, so that reconciliation, which removes this install's
// containers without a row, leaves it to the check that made it.
const managedProbe = "probe"

// CheckIsolation checks that nothing on the host answers a sandbox on a
// sandbox network, records the outcome for Isolation and logs it. It needs
// the engine and one template image that has ip and nc (both seeded ones do).
func (s *Service) CheckIsolation(ctx context.Context) (Isolation, error) {
	rt, err := s.rt()
	if err != nil {
		return Isolation{}, err
	}
	image, err := s.probeImage(ctx, rt)
	if err != nil {
		return Isolation{}, err
	}
	s.removeProbeLeftovers(ctx, rt)
	out, err := s.probeNetwork(ctx, rt, image)
	if err != nil {
		return Isolation{}, err
	}
	iso := Isolation{Checked: true, At: s.now()}
	switch {
	case out == "isolated":
		s.opt.Log.Info("sandbox networks reach nothing on the host")
	case strings.HasPrefix(out, "answers "):
		iso.Problem = fmt.Sprintf("Sandbox networks reach the host: a sandbox connected to its network's gateway %s and the host answered, "+
			"so any service listening on the host's addresses answers learners. Use Docker 20.10 or later "+
			"(sandbox networks need com.docker.network.bridge.inhibit_ipv4), and run scripts/ensure-engine.sh as root for its firewall rules",
			strings.TrimPrefix(out, "answers "))
		s.opt.Log.Error("sandbox networks reach the host", "detail", iso.Problem)
	default:
		return Isolation{}, fmt.Errorf("network check in %s: unexpected answer %q (the image needs ip and nc)", image, out)
	}
	s.isolation.Store(&iso)
	return iso, nil
}

// probeImage is the image of a template that exists on the engine: a
// network template's first, then the others.
func (s *Service) probeImage(ctx context.Context, rt Runtime) (string, error) {
	ts, err := s.store.FindTemplates(ctx)
	if err != nil {
		return "", err
	}
	slices.SortStableFunc(ts, func(a, b *Template) int {
		switch {
		case a.Network == b.Network:
			return 0
		case a.Network:
			return -1
		}
		return 1
	})
	for _, t := range ts {
		if ok, err := rt.ImageExists(ctx, t.Image); err != nil {
			return "", err
		} else if ok {
			return t.Image, nil
		}
	}
	return "", errors.New("network check: no template's image is on the engine (scripts/build-images.sh)")
}

// removeProbeLeftovers removes throwaway containers that are no longer
// running: a process that died during a check leaves one behind. This
// install's go at once; another install's (a test run killed midway leaves
// them with an instance no process will start again) once they are older
// than probeLeftoverAge. A running one belongs to a check under way and ends
// by itself.
func (s *Service) removeProbeLeftovers(ctx context.Context, rt Runtime) {
	list, err := rt.List(ctx, map[string]string{LabelManaged: managedProbe})
	if err != nil {
		return
	}
	for _, in := range list {
		if in.State.Running {
			continue
		}
		if in.Labels[LabelInstance] != s.instance {
			st, err := rt.Inspect(ctx, in.EngineID)
			if err != nil || s.now().Sub(st.Created) < probeLeftoverAge {
				continue
			}
		}
		rt.Remove(ctx, in.EngineID)
	}
}

// probeLeftoverAge is the age past which a stopped throwaway container is
// garbage whoever made it: a check is over within a minute (its container
// sleeps 60 s at most).
const probeLeftoverAge = 10 * time.Minute

// probeNetwork runs isolationProbe in a throwaway sandbox on a network made
// as learners' are, removes both, and returns the probe's answer.
func (s *Service) probeNetwork(ctx context.Context, rt Runtime, image string) (string, error) {
	network := fmt.Sprintf("%s-%s-probe", s.opt.Network, s.instance[:8])
	// An engine call cut short may have done its work all the same: what
	// may exist is removed by name on the way out, whatever happened.
	defer rt.RemoveNetwork(context.WithoutCancel(ctx), network)
	if err := rt.EnsureNetwork(ctx, network, map[string]string{LabelManaged: "true", LabelInstance: s.instance}); err != nil {
		return "", err
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := fmt.Sprintf("tuxlab-%s-netcheck-%s", s.instance[:8], hex.EncodeToString(b))
	id, err := rt.Create(ctx, Spec{
		Name: name, Image: image,
		User: "0", Cmd: []string{"sleep", "60"}, // ends by itself should this process die meanwhile
		Labels:      map[string]string{LabelManaged: managedProbe, LabelInstance: s.instance},
		MemoryBytes: 64 << 20, NanoCPUs: 500_000_000, PidsLimit: 32,
		Network: network, NoNewPrivileges: true,
	})
	if err != nil {
		rt.Remove(context.WithoutCancel(ctx), name) // the engine accepts a name for an id
		return "", err
	}
	defer rt.Remove(context.WithoutCancel(ctx), id)
	if err := rt.Start(ctx, id); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if _, err := rt.Run(ctx, id, ExecSpec{Cmd: []string{"/bin/sh", "-c", isolationProbe}, User: "0"}, nil, &stdout, &stderr); err != nil {
		return "", fmt.Errorf("network check: %w", err)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// checkIsolationOnce runs CheckIsolation until it has run to its end once,
// logging why it could not.
func (s *Service) checkIsolationOnce(ctx context.Context) {
	if s.Isolation().Checked {
		return
	}
	if _, err := s.CheckIsolation(ctx); err != nil && ctx.Err() == nil {
		s.opt.Log.Warn("could not check that sandbox networks reach nothing on the host; trying again later", "error", err.Error())
	}
}
