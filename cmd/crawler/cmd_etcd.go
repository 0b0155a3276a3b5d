package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/internal/coord"
)

func init() {
	register(&command{name: "etcd", summary: "run one member of the etcd control plane in-process (for compose; mTLS)", run: runEtcd})
}

func runEtcd(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "etcd", `--data DIR --ca CA --cert CERT --key KEY [--name etcd-0] [--client ADDR] [--peer ADDR] [--peers NAME=HOST:PORT,...]
    [--listen-client ADDR] [--listen-peer ADDR] [--election-timeout D] [--heartbeat D]

Runs one etcd member (go.etcd.io/etcd/server/v3/embed: a real Raft member)
for Sextant's control plane (issue 25), until SIGTERM or Ctrl-C: so that the
image built FROM scratch with the crawler binary needs no etcd binary.
Clients and peers must present certificates signed by CA (mTLS); the
member's own certificate must name the addresses clients and peers dial.
--peers lists every member of a multi-member cluster (this one included)
by its peer address; without it the member is a cluster of one. Nodes
join with 'crawler node --etcd https://ADDR'. In a container, advertise
the member's name (--client etcd-0:2379) and listen on every interface
(--listen-client 0.0.0.0:2379). Nodes must know --election-timeout
(crawler node --etcd-election-timeout): their lease TTL must outlast an
election.`)
	name := f.String("name", "etcd-0", "member name")
	data := f.String("data", "", "data directory (kept: a restart resumes the member)")
	client := f.String("client", "127.0.0.1:2379", "client listen and advertised address host:port")
	peer := f.String("peer", "127.0.0.1:2380", "peer listen and advertised address host:port")
	peers := f.String("peers", "", "every member NAME=HOST:PORT (peer address), comma-separated")
	listenClient := f.String("listen-client", "", "client listen address host:port (default --client)")
	listenPeer := f.String("listen-peer", "", "peer listen address host:port (default --peer)")
	election := f.Duration("election-timeout", time.Second, "Raft election timeout (etcd's --election-timeout)")
	heartbeat := f.Duration("heartbeat", 100*time.Millisecond, "Raft heartbeat interval (etcd's --heartbeat-interval)")
	ca := f.String("ca", "", "CA certificate (PEM) that signs clients, peers and this member")
	cert := f.String("cert", "", "this member's certificate (PEM)")
	key := f.String("key", "", "this member's key (PEM)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *data == "" || *ca == "" || *cert == "" || *key == "" {
		return usagef("--data, --ca, --cert and --key are required")
	}
	if *heartbeat < time.Millisecond || *election < 5**heartbeat {
		return usagef("--election-timeout %v must be at least 5 × --heartbeat %v", *election, *heartbeat)
	}
	for _, a := range []string{*client, *peer, *listenClient, *listenPeer} {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return usagef("address %q: %v", a, err)
		}
	}
	// Members of a cluster start in any order: wait for a quorum below,
	// for as long as it takes, instead of failing.
	o := coord.EmbedOptions{Name: *name, Dir: *data, ClientAddr: *client, PeerAddr: *peer, ReadyTimeout: -1,
		ListenClientAddr: *listenClient, ListenPeerAddr: *listenPeer,
		TickMs: uint(heartbeat.Milliseconds()), ElectionMs: uint(election.Milliseconds())}
	if *peers != "" {
		o.Peers = map[string]string{}
		for _, p := range strings.Split(*peers, ",") {
			n, a, ok := strings.Cut(p, "=")
			if !ok || n == "" || a == "" {
				return usagef("--peers: %q is not NAME=HOST:PORT", p)
			}
			o.Peers[n] = a
		}
	}
	var err error
	for _, p := range []struct {
		dst  *[]byte
		file string
	}{{&o.CAPEM, *ca}, {&o.CertPEM, *cert}, {&o.KeyPEM, *key}} {
		if *p.dst, err = os.ReadFile(p.file); err != nil {
			return err
		}
	}
	m, err := coord.StartEmbedded(o)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(env.stdout, "etcd %s: clients %s, peers %s, data %s; waiting for a quorum\n", *name, m.ClientURL, m.PeerURL, *data)
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.Err():
		return err
	case <-m.Ready():
		fmt.Fprintf(env.stdout, "etcd %s: serving\n", *name)
	}
	select {
	case <-ctx.Done():
		fmt.Fprintf(env.stdout, "etcd %s: stopping\n", *name)
		return nil
	case err := <-m.Err():
		return err
	}
}
