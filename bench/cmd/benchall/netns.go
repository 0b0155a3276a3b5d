package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/harness"
)

// ErrNetns is returned when the benchmark's network namespace cannot be
// made (it needs root and iproute2's ip); entering it fails with
// harness.ErrNetns.
var ErrNetns = errors.New("benchall: network namespace")

// netns is the private network namespace every contender and simweb run
// in. Its /etc/hosts (bound over /etc/hosts by `ip netns exec`) names the
// web's hosts at 127.0.0.1, where the plain-HTTP simweb listens on port 80,
// so that Scrapy and wget2 resolve them the ordinary way; its resolv.conf
// names a nameserver on the namespace's own loopback where nothing listens,
// so that any other name (the web's deliberately unresolvable host, the
// pages' links to example.com) fails at once instead of timing out.
type netns struct {
	name string
	etc  string // /etc/netns/NAME
}

// nsCur is the namespace of this run ("" when -netns=false): start and
// startWeb prefix their commands with it, get and freeAddr enter it.
var nsCur *netns

// setupNetns makes a fresh namespace called name with its loopback up.
func setupNetns(name string) (*netns, error) {
	n := &netns{name: name, etc: filepath.Join("/etc/netns", name)}
	_ = exec.Command("ip", "netns", "del", name).Run() // a leftover of a killed run
	steps := [][]string{{"netns", "add", name}, {"-n", name, "link", "set", "lo", "up"}}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			n.close()
			return nil, fmt.Errorf("%w: ip %s: %v: %s (root and iproute2 needed)", ErrNetns, strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	if err := os.MkdirAll(n.etc, 0o755); err != nil {
		n.close()
		return nil, fmt.Errorf("%w: %w", ErrNetns, err)
	}
	resolv := "# benchall: fail fast, nothing answers here\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
	if err := os.WriteFile(filepath.Join(n.etc, "resolv.conf"), []byte(resolv), 0o644); err != nil {
		n.close()
		return nil, fmt.Errorf("%w: %w", ErrNetns, err)
	}
	return n, n.writeHosts(nil)
}

// writeHosts names every host at 127.0.0.1 in the namespace's /etc/hosts.
func (n *netns) writeHosts(hosts []string) error {
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n::1 localhost\n")
	for _, h := range hosts {
		b.WriteString("127.0.0.1 " + h + "\n")
	}
	if err := os.WriteFile(filepath.Join(n.etc, "hosts"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("%w: %w", ErrNetns, err)
	}
	return nil
}

func (n *netns) close() {
	_ = exec.Command("ip", "netns", "del", n.name).Run()
	_ = os.RemoveAll(n.etc)
}

// command returns name and args to run inside the namespace (unchanged
// when n is nil).
func (n *netns) command(name string, args ...string) (string, []string) {
	return harness.NetnsCommand(n.nameOf(), name, args...)
}

// do runs f on an OS thread moved into the namespace (harness.InNetns):
// sockets f creates belong to it.
func (n *netns) do(f func() error) error { return harness.InNetns(n.nameOf(), f) }

// nameOf is the namespace's name, "" for none (n nil).
func (n *netns) nameOf() string {
	if n == nil {
		return ""
	}
	return n.name
}

// nsClient is an HTTP client whose connections are made inside nsCur (the
// cluster nodes' /metrics and status pages listen there).
var nsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return harness.DialIn(ctx, nsCur.nameOf(), network, addr)
	},
	DisableKeepAlives: true,
}}
