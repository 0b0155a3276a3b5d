package status

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/internal/mrc"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

func tlsNode(t *testing.T, ca *tlsutil.CA, id string) *tlsutil.Node {
	t.Helper()
	c, k, err := ca.Issue(id, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tlsutil.FromPEM(ca.CertPEM, c, k)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPeersOverMTLS: a node's Snapshot travels over the NodeStatus service
// on an mTLS server that admits only members; a certificate of the same CA
// naming a non-member is refused, and an unreachable peer is a Snapshot
// with Error.
func TestPeersOverMTLS(t *testing.T) {
	ca, err := tlsutil.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	members := []string{"node-a", "node-b"}
	a, b, stranger := tlsNode(t, ca, "node-a"), tlsNode(t, ca, "node-b"), tlsNode(t, ca, "node-x")

	curve := []mrc.Point{{K: 1, MissRatio: 0.9}, {K: 1024, MissRatio: 0.3}}
	src := SourceFunc(func() Snapshot {
		return Snapshot{Node: "node-b", Pages: 1234, Frontier: 56,
			Caches:  []Cache{{Name: "front", Size: 512, Lookups: 10, Hits: 4, Curves: map[string][]mrc.Point{mrc.LRU: curve}}},
			Delayed: []Host{{Host: "slow.test", DelayMS: 900}}}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(b.ServerConfig(members))))
	Register(srv, src)
	go srv.Serve(ln)
	defer srv.Stop()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	p, err := DialPeers([]PeerAddr{{"node-b", ln.Addr().String()}, {"node-c", deadAddr}},
		credentials.NewTLS(a.ClientConfig(members)), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	self := SourceFunc(func() Snapshot { return Snapshot{Node: "node-a", Pages: 1} })
	got := p.Cluster(self)(context.Background())
	if len(got) != 3 || got[0].Node != "node-a" {
		t.Fatalf("cluster = %+v", got)
	}
	g := got[1]
	if g.Error != "" || g.Node != "node-b" || g.Pages != 1234 || g.Frontier != 56 || len(g.Delayed) != 1 ||
		len(g.Caches) != 1 || g.Caches[0].HitRate != 0.4 || len(g.Caches[0].Curves[mrc.LRU]) != 2 {
		t.Errorf("peer snapshot = %+v", g)
	}
	if got[2].Node != "node-c" || !strings.HasPrefix(got[2].Error, "unreachable") {
		t.Errorf("dead peer = %+v", got[2])
	}

	// Same CA, not a member: the server refuses the handshake.
	px, err := DialPeers([]PeerAddr{{"node-b", ln.Addr().String()}},
		credentials.NewTLS(stranger.ClientConfig(members)), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	if s := px.Snapshots(context.Background()); s[0].Error == "" {
		t.Errorf("a non-member got a snapshot: %+v", s[0])
	}
}

// A healthy peer addressed by an IP its certificate does not name (certs
// made with --hosts naming other hosts, containers addressed by IP) is
// verified by its node id, as the splitter does.
func TestPeersVerifiedByNodeID(t *testing.T) {
	ca, err := tlsutil.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(id string) *tlsutil.Node {
		c, k, err := ca.Issue(id, nil, time.Hour) // the node id only: no IP
		if err != nil {
			t.Fatal(err)
		}
		n, err := tlsutil.FromPEM(ca.CertPEM, c, k)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	members := []string{"node-a", "node-b"}
	a, b := issue("node-a"), issue("node-b")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(b.ServerConfig(members))))
	Register(srv, SourceFunc(func() Snapshot { return Snapshot{Node: "node-b", Pages: 7} }))
	go srv.Serve(ln)
	defer srv.Stop()
	p, err := DialPeers([]PeerAddr{{"node-b", ln.Addr().String()}}, credentials.NewTLS(a.ClientConfig(members)), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if s := p.Snapshots(context.Background()); s[0].Error != "" || s[0].Pages != 7 {
		t.Errorf("peer addressed by IP: %+v", s[0])
	}
}
