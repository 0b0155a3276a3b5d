package crawl

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/killtest"
	"github.com/sextant-crawler/sextant/internal/netcut"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
	"github.com/sextant-crawler/sextant/simweb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// channelSeqs is what the cut changes: for each directed link touching the
// cut node, the last seq the sender spooled and the last the receiver
// applied.
type channelSeqs struct{ sent, applied uint64 }

// Issue 6: a 3-node cluster of separate processes (mTLS gRPC) crawls simweb;
// mid-crawl one node's links to and from its peers are cut for a few
// seconds (the peers reach it, and it reaches them, through TCP proxies
// that reset every connection and refuse new ones) while every node keeps
// crawling. During the cut nothing crosses it and the spools on both sides
// hold the URLs; after the heal they drain, the cluster terminates, the
// union of fetched URLs equals the oracle's set and no URL is fetched twice.
func TestClusterPartitionProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	web, srv, oracle := smallWeb(t, killBodyCap)
	pc := startPartitionCluster(t, srv)
	cutNode := pc.cutNode
	fetched := func() int { f, _, _ := serverFetched(web, srv); return len(f) }
	// The cut node's frontier, so that it has pages of its own to crawl
	// during the cut: a node whose URLs all come from its peers can be
	// starved by the cut itself and then spools nothing.
	frontier := func() int64 { return pc.cutStatus().FrontierSize }
	const minFrontier = 50
	deadline := time.Now().Add(2 * time.Minute)
	for fetched() < oracle.Size()/5 || frontier() < minFrontier {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d URLs fetched before the cut, node-%d's frontier %d (want ≥ %d)", fetched(), oracle.Size(), cutNode, frontier(), minFrontier)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("cut node-%d at %d fetches, its frontier %d", cutNode, fetched(), frontier())
	for _, p := range pc.proxies {
		p.SetCut(true)
	}
	pc.watchCut(fetched)
	for _, p := range pc.proxies {
		p.SetCut(false)
	}
	deadline = time.Now().Add(3 * time.Minute)
	for i, k := range pc.kids {
		if err := k.Wait(time.Until(deadline)); err != nil {
			t.Errorf("node-%d: %v\n%.2000s", i, err, k.Output())
		}
	}
	all, extra, dups := serverFetched(web, srv)
	if err := oracle.Check(all); err != nil { // trap hosts included: one budget each
		t.Errorf("the fetched set differs from the oracle's: %v", err)
	}
	if extra > 0 {
		t.Errorf("%d repeated fetches: %v", extra, dups[:min(10, len(dups))])
	}
	t.Logf("%d URLs fetched (oracle %d + traps), %d repeated", len(all), oracle.Size(), extra)
}

// partitionCluster is three child nodes, one of which (cutNode) reaches
// its peers and is reached by them through proxies that can cut the links,
// and gRPC connections to the nodes' own addresses (node-0's certificate)
// for watching the channels.
type partitionCluster struct {
	t          *testing.T
	n, cutNode int
	ids        []string
	proxies    []*netcut.Proxy
	kids       []*killtest.Child
	conns      []*grpc.ClientConn
}

// startPartitionCluster starts the nodes crawling srv's web; t.Cleanup
// kills them and closes the connections.
func startPartitionCluster(t *testing.T, srv *simweb.Server) *partitionCluster {
	root := t.TempDir()
	const n, cutNode = 3, 2
	ids := []string{"node-0", "node-1", "node-2"}
	pki := filepath.Join(root, "pki")
	if err := tlsutil.WriteCluster(pki, ids, []string{"127.0.0.1", "localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, n) // for the children
	// The others reach the cut node through in; it reaches node-i through
	// out[i]. Each child is given its own view of the addresses.
	in := newCutProxy(t, addrs[cutNode])
	proxies := []*netcut.Proxy{in}
	views := make([][]string, n)
	for i := range views {
		views[i] = append([]string(nil), addrs...)
		if i != cutNode {
			views[i][cutNode] = in.Addr()
		}
	}
	for i := range addrs {
		if i != cutNode {
			p := newCutProxy(t, addrs[i])
			proxies = append(proxies, p)
			views[cutNode][i] = p.Addr()
		}
	}
	kids := make([]*killtest.Child, n)
	for i := range kids {
		kids[i] = killtest.Start(t, killtest.Options{Run: "TestClusterKillChild", Env: []string{ckRootEnv + "=" + root,
			ckIndexEnv + "=" + strconv.Itoa(i), ckAddrsEnv + "=" + strings.Join(views[i], ","), ckWebEnv + "=" + srv.Addr(), caEnv(srv)}})
	}

	// The test watches the channels with node-0's certificate, on the
	// nodes' own addresses (not through the proxies).
	cert, key := tlsutil.NodeFiles(pki, ids[0])
	tn, err := tlsutil.Load(filepath.Join(pki, "ca.pem"), cert, key)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*grpc.ClientConn, n)
	for i, a := range addrs {
		cfg := tn.ClientConfig(ids)
		cfg.ServerName = ids[i]
		if conns[i], err = grpc.NewClient(a, grpc.WithTransportCredentials(credentials.NewTLS(cfg))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conns[i].Close() })
	}
	return &partitionCluster{t: t, n: n, cutNode: cutNode, ids: ids, proxies: proxies, kids: kids, conns: conns}
}

// seqs returns, for each directed link touching the cut node ("i>j"), the
// sender's last spooled seq, the receiver's last applied seq, and the URLs
// spooled towards and from the cut node.
func (p *partitionCluster) seqs() (map[string]channelSeqs, uint64, uint64, error) {
	n, ids, cutNode := p.n, p.ids, p.cutNode
	sts := make([]hostsplit.NodeStatus, n)
	for i, c := range p.conns {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := pb.NewPeerClient(c).Status(ctx, &pb.StatusRequest{})
		cancel()
		if err != nil {
			return nil, 0, 0, err
		}
		sts[i] = hostsplit.NodeStatusFromProto(r)
	}
	ch := func(i, j int) hostsplit.Channel {
		for _, c := range sts[i].Channels {
			if c.Peer == hostsplit.NodeID(ids[j]) {
				return c
			}
		}
		return hostsplit.Channel{}
	}
	out := map[string]channelSeqs{}
	var to, from uint64
	for i := range n {
		if i == cutNode {
			continue
		}
		out[ids[i]+">"+ids[cutNode]] = channelSeqs{ch(i, cutNode).SentSeq, ch(cutNode, i).AppliedSeq}
		out[ids[cutNode]+">"+ids[i]] = channelSeqs{ch(cutNode, i).SentSeq, ch(i, cutNode).AppliedSeq}
		to += ch(i, cutNode).SpoolURLs
		from += ch(cutNode, i).SpoolURLs
	}
	return out, to, from, nil
}

// cutStatus is the cut node's status, asked on its own address.
func (p *partitionCluster) cutStatus() hostsplit.NodeStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := pb.NewPeerClient(p.conns[p.cutNode]).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return hostsplit.NodeStatus{}
	}
	return hostsplit.NodeStatusFromProto(r)
}

// watchCut checks that the cut holds: no batch crosses it, and the spools
// on both sides fill.
func (p *partitionCluster) watchCut(fetched func() int) {
	t, cutNode, seqs, cutStatus := p.t, p.cutNode, p.seqs, p.cutStatus
	// Let batches already received finish applying, then watch the cut
	// hold for a few seconds: no batch crosses it, and the spools fill.
	time.Sleep(1500 * time.Millisecond)
	before, _, _, err := seqs()
	if err != nil {
		t.Fatal(err)
	}
	var heldTo, heldFrom uint64
	var after map[string]channelSeqs
	// Watch at least 3 s, and on until both directions have held something
	// (a node may find no link for a peer for a few seconds on a loaded
	// machine), up to 15 s.
	for start := time.Now(); time.Since(start) < 3*time.Second ||
		((heldTo == 0 || heldFrom == 0) && time.Since(start) < 15*time.Second); time.Sleep(100 * time.Millisecond) {
		var to, from uint64
		if after, to, from, err = seqs(); err != nil {
			t.Fatal(err)
		}
		heldTo, heldFrom = max(heldTo, to), max(heldFrom, from)
	}
	t.Logf("heal at %d fetches; spooled during the cut: up to %d URLs towards node-%d, %d from it; links %v → %v",
		fetched(), heldTo, cutNode, heldFrom, before, after)
	for link, a := range after {
		if b := before[link]; a.applied != b.applied {
			t.Errorf("link %s: batches %d..%d applied across the cut", link, b.applied+1, a.applied)
		}
	}
	if heldTo == 0 || heldFrom == 0 {
		st := cutStatus()
		t.Errorf("the cut held nothing back (towards %d, from %d URLs); node-%d: idle %v, frontier %d, in flight %d, buffered %d",
			heldTo, heldFrom, cutNode, st.Idle, st.FrontierSize, st.InFlight, st.BufferedURLs)
	}
}
