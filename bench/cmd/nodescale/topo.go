package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ErrTopology is returned when the namespaces, links or shaping of a run
// cannot be made (root and iproute2 are needed).
var ErrTopology = errors.New("nodescale: network topology")

// grpcPort is the port every node listens on for its peers, each on its own
// address: the nft counters of a node's namespace count exactly the
// gRPC traffic by this port.
const grpcPort = 7000

// topology is a router namespace holding a bridge, one namespace for simweb
// and one per node, each joined to the bridge by a veth pair. A node's link
// is shaped in both directions (its own eth0 and the router's end).
type topology struct {
	prefix string
	router string
	web    string
	nodes  []string
	shape  string  // the qdisc actually applied to each node link ("" = none)
	perfCG *cgroup // where the profilers run (set by run)
}

// webIP and nodeIP are the addresses on the bridge's subnet.
func webIP() string       { return "10.77.0.2" }
func nodeIP(i int) string { return "10.77.0." + strconv.Itoa(11+i) }

// ipRun runs ip (or tc, nft: argv[0]) and wraps its output into the error.
func ipRun(argv ...string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s: %v: %s", ErrTopology, strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newTopology builds the router, web and n node namespaces. qdiscs are
// tried in order on each node link; the first the kernel accepts is used
// (netem may be missing: a kernel without CONFIG_NET_SCH_NETEM).
func newTopology(prefix string, n int, qdiscs [][]string) (*topology, error) {
	t := &topology{prefix: prefix, router: prefix + "r", web: prefix + "w"}
	for i := range n {
		t.nodes = append(t.nodes, prefix+"n"+strconv.Itoa(i))
	}
	t.close() // leftovers of a killed run
	steps := [][]string{
		{"ip", "netns", "add", t.router},
		{"ip", "-n", t.router, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", t.router, "link", "set", "br0", "up"},
	}
	for _, s := range steps {
		if err := ipRun(s...); err != nil {
			t.close()
			return nil, err
		}
	}
	if err := t.attach(t.web, "pw", webIP()); err != nil {
		t.close()
		return nil, err
	}
	for i, ns := range t.nodes {
		port := "pn" + strconv.Itoa(i)
		if err := t.attach(ns, port, nodeIP(i)); err != nil {
			t.close()
			return nil, err
		}
		shape, err := t.shapeLink(ns, port, qdiscs)
		if err != nil {
			t.close()
			return nil, err
		}
		t.shape = shape
		if err := countGRPC(ns); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// attach makes namespace ns with its loopback up and a veth pair: eth0 in
// ns with address ip, port in the router, enslaved to the bridge.
func (t *topology) attach(ns, port, ip string) error {
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", t.router, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"ip", "-n", t.router, "link", "set", port, "master", "br0", "up"},
		{"ip", "-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if err := ipRun(s...); err != nil {
			return err
		}
	}
	return nil
}

// shapeLink puts the first accepted qdisc on both ends of a node's link
// and returns its description ("" when qdiscs is empty).
func (t *topology) shapeLink(ns, port string, qdiscs [][]string) (string, error) {
	var errs []error
	for _, q := range qdiscs {
		a := append([]string{"ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "eth0", "root"}, q...)
		b := append([]string{"ip", "netns", "exec", t.router, "tc", "qdisc", "replace", "dev", port, "root"}, q...)
		err := ipRun(a...)
		if err == nil {
			err = ipRun(b...)
		}
		if err == nil {
			return strings.Join(q, " "), nil
		}
		errs = append(errs, err)
	}
	if len(qdiscs) == 0 {
		return "", nil
	}
	return "", errors.Join(errs...)
}

// countGRPC adds nft counters of the gRPC bytes a node's namespace SENDS
// (as a client to a peer's port, and as a server from its own): summed over
// the nodes, every gRPC byte on the wire is counted once, at its sender.
// Lengths are IP packet lengths (headers included, Ethernet's not).
func countGRPC(ns string) error {
	rules := fmt.Sprintf(`table inet nodescale {
	counter grpc_out {}
	chain out {
		type filter hook output priority 0; policy accept;
		tcp dport %d counter name grpc_out
		tcp sport %d counter name grpc_out
	}
}
`, grpcPort, grpcPort)
	f, err := os.CreateTemp("", "nodescale-*.nft")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(rules); err != nil {
		f.Close()
		return err
	}
	f.Close()
	return ipRun("ip", "netns", "exec", ns, "nft", "-f", f.Name())
}

// grpcBytes reads the counter countGRPC made in ns: bytes and packets.
func grpcBytes(ns string) (nftCount, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "counter", "inet", "nodescale", "grpc_out").CombinedOutput()
	if err != nil {
		return nftCount{}, fmt.Errorf("%w: nft list counter: %v: %s", ErrTopology, err, out)
	}
	return parseNft(string(out))
}

type nftCount struct{ Bytes, Packets int64 }

// parseNft finds "packets N bytes M" in `nft list counter` output.
func parseNft(s string) (nftCount, error) {
	var c nftCount
	found := 0
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i++ {
		dst := map[string]*int64{"bytes": &c.Bytes, "packets": &c.Packets}[f[i]]
		if dst == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(f[i+1], ";"), 10, 64)
		if err != nil {
			return c, fmt.Errorf("nft counter: %q: %w", f[i+1], err)
		}
		*dst = n
		found++
	}
	if found != 2 {
		return c, fmt.Errorf("nft counter: no packets and bytes in %q", s)
	}
	return c, nil
}

func (t *topology) close() {
	for _, ns := range append(append([]string{}, t.nodes...), t.web, t.router) {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}
