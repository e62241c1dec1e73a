package qemu

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"tuxlab/internal/sandbox"
)

// Private lab segments: a network EnsureNetwork makes is an L2 segment for
// machines only, QEMU's socket netdev on a UDP multicast group of the host's
// loopback (-netdev socket,mcast=<group>:<port>,localaddr=127.0.0.1): every
// machine on it gets a NIC whose frames go to the group and only to the
// group's other members. The host has no address on it (its frames are UDP
// payloads to the host), so the guests reach each other and nothing else.
// Each network has a subnet 10.77.<n>.0/24 of its own, and each machine a
// static address on it by join order (Create), passed on the kernel command
// line (tuxlab.addr=) with the members' names (tuxlab.hosts=): the guest's
// net-config writes them for systemd-networkd and into /etc/hosts. A member
// that starts later is added to the running members' /etc/hosts over their
// channels. Records: StateDir/networks/<name>.json.

// network is a segment's record.
type network struct {
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels,omitempty"`
	Group   string            `json:"group"` // multicast group:port on 127.0.0.1
	Subnet  int               `json:"subnet"`
	Members []member          `json:"members,omitempty"`
}

// member is a machine on a segment.
type member struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	Host     int    `json:"host"` // its address is 10.77.<subnet>.<host>
}

const (
	firstHost     = 11 // the first member's address: 10.77.<n>.11
	segmentPrefix = 24
)

func (n *network) addr(host int) string { return fmt.Sprintf("10.77.%d.%d", n.Subnet, host) }

// networkName is a network's name (a file name too).
var networkName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// networks serializes changes to the network records of one process.
var networks sync.Mutex

func (r *Runtime) networkFile(name string) string {
	return filepath.Join(r.opts.StateDir, "networks", name+".json")
}

// loadNetwork reads network name's record: sandbox.ErrGone when there is
// none.
func (r *Runtime) loadNetwork(name string) (*network, error) {
	if !networkName.MatchString(name) || name == NetworkUser || name == "none" {
		return nil, fmt.Errorf("%w: no network %q", sandbox.ErrGone, name)
	}
	b, err := os.ReadFile(r.networkFile(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no network %q", sandbox.ErrGone, name)
	}
	if err != nil {
		return nil, err
	}
	var n network
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("network %s: %w", name, err)
	}
	return &n, nil
}

// saveNetwork writes n atomically.
func (r *Runtime) saveNetwork(n *network) error {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	f := r.networkFile(n.Name)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(f+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(f+".tmp", f)
}

// allNetworks returns every network's record.
func (r *Runtime) allNetworks() []*network {
	files, _ := filepath.Glob(filepath.Join(r.opts.StateDir, "networks", "*.json"))
	var all []*network
	for _, f := range files {
		if n, err := r.loadNetwork(strings.TrimSuffix(filepath.Base(f), ".json")); err == nil {
			all = append(all, n)
		}
	}
	return all
}

// EnsureNetwork makes the private segment name (labels kept in its record)
// unless it exists: a multicast group and port derived from its name (the
// next free one if another network has it) and the next free subnet.
func (r *Runtime) EnsureNetwork(ctx context.Context, name string, labels map[string]string) error {
	if !networkName.MatchString(name) || name == NetworkUser || name == "none" {
		return fmt.Errorf("%w: network name %q", sandbox.ErrUnsupported, name)
	}
	networks.Lock()
	defer networks.Unlock()
	if _, err := r.loadNetwork(name); err == nil {
		return ctx.Err()
	}
	used, subnets := map[string]bool{}, map[int]bool{}
	for _, n := range r.allNetworks() {
		used[n.Group], subnets[n.Subnet] = true, true
	}
	sum := sha256.Sum256([]byte(name))
	v := binary.BigEndian.Uint32(sum[:4])
	var group string
	for i := uint32(0); ; i++ {
		w := v + i
		group = fmt.Sprintf("239.255.%d.%d:%d", w>>24&0xff, w>>16&0xff, 20000+w%20000)
		if !used[group] {
			break
		}
	}
	subnet := 1
	for subnets[subnet] {
		subnet++
	}
	if subnet > 254 {
		return fmt.Errorf("%w: 254 machine networks already", sandbox.ErrUnsupported)
	}
	return r.saveNetwork(&network{Name: name, Labels: maps.Clone(labels), Group: group, Subnet: subnet})
}

// RemoveNetwork removes segment name unless a machine is on it (it is then
// left alone, nil). A network that is gone is nil too.
func (r *Runtime) RemoveNetwork(ctx context.Context, name string) error {
	networks.Lock()
	defer networks.Unlock()
	n, err := r.loadNetwork(name)
	if err != nil {
		return ctx.Err()
	}
	for _, m := range n.Members {
		if _, err := r.load(m.ID); err == nil {
			return ctx.Err()
		}
	}
	if err := os.Remove(r.networkFile(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return ctx.Err()
}

// join adds machine rec to its network's members with the first free
// address, and records the address in rec.
func (r *Runtime) join(rec *record) error {
	networks.Lock()
	defer networks.Unlock()
	n, err := r.loadNetwork(rec.Network)
	if err != nil {
		return err
	}
	host := firstHost
	for slices.ContainsFunc(n.Members, func(m member) bool { return m.Host == host }) {
		host++
	}
	if host > 254 {
		return fmt.Errorf("%w: network %s is full", sandbox.ErrUnsupported, rec.Network)
	}
	n.Members = append(n.Members, member{ID: rec.ID, Hostname: rec.Hostname, Host: host})
	rec.Addr = n.addr(host)
	return r.saveNetwork(n)
}

// leave removes machine id from network name's members.
func (r *Runtime) leave(name, id string) {
	networks.Lock()
	defer networks.Unlock()
	n, err := r.loadNetwork(name)
	if err != nil {
		return
	}
	n.Members = slices.DeleteFunc(n.Members, func(m member) bool { return m.ID == id })
	if err := r.saveNetwork(n); err != nil {
		r.log.Warn("machine network", "network", name, "err", err)
	}
}

// segmentArgs are QEMU's NIC on rec's segment and the kernel command line's
// words for its address and its members' names.
func (r *Runtime) segmentArgs(rec *record) (qemu []string, cmdline []string, err error) {
	n, err := r.loadNetwork(rec.Network)
	if err != nil {
		return nil, nil, err
	}
	qemu = []string{"-netdev", "socket,id=net0,mcast=" + n.Group + ",localaddr=127.0.0.1",
		"-device", "virtio-net-pci,netdev=net0,mac=" + macOf(rec.ID)}
	cmdline = []string{fmt.Sprintf("tuxlab.addr=%s/%d", rec.Addr, segmentPrefix), "tuxlab.hosts=" + hostsWord(n)}
	return qemu, cmdline, nil
}

// hostsWord is network n's members as name=address,... .
func hostsWord(n *network) string {
	var w []string
	for _, m := range n.Members {
		w = append(w, m.Hostname+"="+n.addr(m.Host))
	}
	return strings.Join(w, ",")
}

// macOf is machine id's MAC address on a segment: locally administered, from
// its id, so each member's differs.
func macOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("52:54:%02x:%02x:%02x:%02x", sum[0], sum[1], sum[2], sum[3])
}

// hostsScript rewrites the segment's lines of /etc/hosts from $1
// (name=address,...): the machine's own name only for its own address.
const hostsScript = `set -e
self=$(hostname)
own=$(ip -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}' | cut -d/ -f1)
tmp=$(mktemp)
grep -v '# tuxlab-segment$' /etc/hosts >"$tmp" || true
echo "$1" | tr ',' '\n' | while IFS='=' read -r name ip; do
	[ -n "$name" ] || continue
	[ "$name" != "$self" ] || [ -z "$own" ] || [ "$ip" = "$own" ] || continue
	printf '%s\t%s # tuxlab-segment\n' "$ip" "$name" >>"$tmp"
done
cat "$tmp" >/etc/hosts
rm -f "$tmp"`

// announce writes network name's members into /etc/hosts of each running
// member but machine except (which has them from its command line), in the
// background: a member still booting is waited for, up to attemptTimeout.
func (r *Runtime) announce(name, except string) {
	n, err := r.loadNetwork(name)
	if err != nil {
		return
	}
	word := hostsWord(n)
	for _, m := range n.Members {
		if m.ID == except || r.pid(m.ID) == 0 {
			continue
		}
		go func(id string) {
			ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
			defer cancel()
			var errOut strings.Builder
			code, err := r.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", hostsScript, "hosts", word}, User: "root"}, nil, io.Discard, &errOut)
			if errors.Is(err, sandbox.ErrGone) || errors.Is(err, sandbox.ErrNotRunning) {
				return // stopped or removed meanwhile: it reads the members at its next boot
			}
			if err != nil || code != 0 {
				r.log.Warn("machine network: /etc/hosts not updated", "machine", id, "network", name, "code", code, "err", err, "stderr", errOut.String())
			}
		}(m.ID)
	}
}
