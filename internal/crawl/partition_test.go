package crawl

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/netcut"
	"github.com/sextant-crawler/sextant/simweb"
)

// newCutProxy is a netcut.Proxy to target, closed at the test's end.
func newCutProxy(t *testing.T, target string) *netcut.Proxy {
	p, err := netcut.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestClusterPartitionLosesNothing(t *testing.T) {
	web, srv, oracle := smallWeb(t, 1<<20)
	root := t.TempDir()
	const cutNode = 2
	ms, cutID, proxies := startPartitionedMembers(t, root, srv, web, cutNode)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, m := range ms {
		if err := m.Seed(ctx, web.Seeds()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Run(ctx) }()
	}
	fetches := func() (n uint64) {
		for _, m := range ms {
			n += m.Node.Stats().Fetches
		}
		return n
	}
	for fetches() < uint64(oracle.Size()/5) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("partition node-%d at %d fetches", cutNode, fetches())
	for _, p := range proxies {
		p.SetCut(true)
	}
	checkInProcessCut(t, ms, cutNode, cutID, fetches)
	for _, p := range proxies {
		p.SetCut(false)
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("cluster did not terminate in time")
	}
	var logs []string
	for i, m := range ms {
		if errs[i] != nil {
			t.Errorf("node %d: %v", i, errs[i])
		}
		st := m.Split.Stats()
		if st.Total.SpoolURLs != 0 || st.Total.BufferedURLs != 0 {
			t.Errorf("node %d: spool not drained: %d spooled, %d buffered", i, st.Total.SpoolURLs, st.Total.BufferedURLs)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		logs = append(logs, filepath.Join(root, fmt.Sprintf("node-%d", i), "crawl.log"))
	}
	got, dups := fetchedURLs(t, logs...)
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched more than once cluster-wide, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(got); err != nil {
		t.Errorf("union of fetched URLs differs from the oracle's (%d fetched, oracle %d): %v", len(got), oracle.Size(), err)
	}
}

// startPartitionedMembers starts a 3-member cluster in this process in
// which every link touching member cutNode goes through a proxy: the
// others reach it through in2; it reaches node-i through out[i].
func startPartitionedMembers(t *testing.T, root string, srv *simweb.Server, web *simweb.Web, cutNode int) ([]*Member, hostsplit.NodeID, []*netcut.Proxy) {
	members, seats, err := LoopbackCluster(filepath.Join(root, "pki"), 3)
	if err != nil {
		t.Fatal(err)
	}
	var proxies []*netcut.Proxy
	in2 := newCutProxy(t, members[cutNode].Addr)
	proxies = append(proxies, in2)
	common := append([]hostsplit.Member(nil), members...)
	common[cutNode].Addr = in2.Addr()
	view2 := append([]hostsplit.Member(nil), members...)
	for i := range view2 {
		if i != cutNode {
			p := newCutProxy(t, members[i].Addr)
			proxies = append(proxies, p)
			view2[i].Addr = p.Addr()
		}
	}
	ms := make([]*Member, len(seats))
	for i, seat := range seats {
		o := testNodeOptions(t, filepath.Join(root, seat.ID), srv, web.Domain())
		o.Workers = 8
		view := common
		if i == cutNode {
			view = view2
		}
		m, err := StartMember(MemberOptions{Node: o, Self: seat.ID, Members: view, TLS: seat.TLS, Listener: seat.Listener, PeerCacheSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
	}
	return ms, hostsplit.NodeID(seats[cutNode].ID), proxies
}

// checkInProcessCut watches the cut for a few seconds: acknowledgements on
// the cut node's links must stop and URLs for and from it pile up in
// spools.
func checkInProcessCut(t *testing.T, ms []*Member, cutNode int, cutID hostsplit.NodeID, fetches func() uint64) {
	// Acknowledgements on the cut node's links must stop: after the
	// batches already on the wire settle, none may advance during the cut
	// (spools are non-empty even without a cut while batches wait to be
	// coalesced, so the acks are what prove the cut).
	acked := func() map[string]uint64 {
		out := map[string]uint64{}
		for i, m := range ms {
			for _, c := range m.Split.Transport().LocalStatus().Channels {
				if i == cutNode || c.Peer == cutID {
					out[fmt.Sprintf("%d>%s", i, c.Peer)] = c.AckedSeq
				}
			}
		}
		return out
	}
	time.Sleep(1500 * time.Millisecond)
	ackedBefore := acked()
	// While cut, URLs for and from the cut node must pile up in spools.
	var heldTo, heldFrom uint64
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for i, m := range ms {
			st := m.Split.Stats()
			if i == cutNode {
				heldFrom = max(heldFrom, st.Total.SpoolURLs)
			} else {
				for _, ps := range st.Peers {
					if ps.Peer == cutID {
						heldTo = max(heldTo, ps.SpoolURLs)
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("heal at %d fetches; spooled during the cut: %d URLs towards node-%d, %d from it", fetches(), heldTo, cutNode, heldFrom)
	if heldTo == 0 || heldFrom == 0 {
		t.Errorf("the partition held nothing back (towards %d, from %d): it did not cut the peers", heldTo, heldFrom)
	}
	for link, a := range acked() {
		if b := ackedBefore[link]; a != b {
			t.Errorf("link %s: acknowledged up to %d during the cut (was %d): the cut did not hold", link, a, b)
		}
	}
}
