package hostsplit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every URL, routed once by one node, ends at its owner's sink exactly once.
func TestClusterDeliversToOwnersExactlyOnce(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	all := simURLs(6000, 400, 1)
	for i, nd := range c.nodes {
		var mine []string
		for j, u := range all {
			if j%3 == i {
				mine = append(mine, u)
			}
		}
		for start := 0; start < len(mine); start += 50 { // a page's worth at a time
			if err := nd.sp.Route(ctx, mine[start:min(start+50, len(mine))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := ownedBy(t, c.nodes[0].sp.Ownership().Ring(), all)
	if len(want) != 3 {
		t.Fatalf("ownership uses %d of 3 nodes", len(want))
	}
	waitFor(t, "termination", func() bool {
		ok, err := c.nodes[1].sp.Transport().Terminated(ctx)
		return err == nil && ok
	})
	for _, nd := range c.nodes {
		got := nd.sink.snapshot()
		if diff := cmp.Diff(want[nd.id], keys(got)); diff != "" {
			t.Errorf("%s sink (-want +got):\n%s", nd.id, diff)
		}
		for u, n := range got {
			if n != 1 {
				t.Errorf("%s got %s %d times", nd.id, u, n)
			}
		}
	}
	var local, remote, sent, recv uint64
	for _, nd := range c.nodes {
		st := nd.sp.Stats()
		local += st.DiscoveredLocal
		remote += st.DiscoveredRemote
		sent += st.Total.SentURLs
		recv += st.Total.ReceivedURLs
		if st.Total.SpoolBatches != 0 || st.Total.Malformed != 0 {
			t.Errorf("%s: %+v", nd.id, st.Total)
		}
		if st.WireRatio() <= 0 || st.WireRatio() >= 1 {
			t.Errorf("%s: wire ratio %.3f", nd.id, st.WireRatio())
		}
	}
	if local+remote != uint64(len(all)) || sent != remote || recv != remote {
		t.Errorf("local %d remote %d sent %d received %d of %d", local, remote, sent, recv, len(all))
	}
}

// A receiver that stops mid-stream (server killed, splitter closed while a
// batch is being delivered) and restarts from its data dir loses nothing.
func TestPeerDiesMidBatchLosesNothing(t *testing.T) {
	c := newTestCluster(t, 3, func(o *Options) { o.BatchMaxURLs = 20 })
	ctx := context.Background()
	rcv := c.nodes[1]
	all := simURLs(3000, 300, 2)
	want := ownedBy(t, c.nodes[0].sp.Ownership().Ring(), all)[rcv.id]
	var toRcv []string
	for _, u := range all {
		if o, _ := c.nodes[0].sp.Ownership().Ring().OwnerOfURL(u); o == rcv.id {
			toRcv = append(toRcv, u)
		}
	}
	// Fail the receiver's sink after some batches: as if the node died
	// between receiving a batch and making it durable.
	var n atomic.Int64
	rcv.sink.hook = func([]string) error {
		if n.Add(1) == 5 {
			return errors.New("disk gone")
		}
		return nil
	}
	half := len(toRcv) / 2
	for s := 0; s < half; s += 10 {
		if err := c.nodes[0].sp.Route(ctx, toRcv[s:min(s+10, half)]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "some batches applied", func() bool { return n.Load() > 8 })
	c.stopServer(rcv) // kill mid-stream
	for s := half; s < len(toRcv); s += 10 {
		if err := c.nodes[0].sp.Route(ctx, toRcv[s:min(s+10, len(toRcv))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.nodes[0].sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.restart(rcv)
	waitFor(t, "all URLs at the receiver", func() bool { return len(rcv.sink.snapshot()) == len(want) })
	if diff := cmp.Diff(want, keys(rcv.sink.snapshot())); diff != "" {
		t.Errorf("receiver (-want +got):\n%s", diff)
	}
	waitFor(t, "spool drained", func() bool { return c.nodes[0].sp.Stats().Total.SpoolBatches == 0 })
	if st := c.nodes[0].sp.Stats(); st.Total.StreamErrors == 0 {
		t.Errorf("sender saw no stream error: %+v", st.Total)
	}
}

// A sender closed with batches its peer never acknowledged resends them
// from its spool when it starts again.
func TestSenderRestartResumesFromSpool(t *testing.T) {
	c := newTestCluster(t, 3, func(o *Options) { o.BatchMaxURLs = 25 })
	ctx := context.Background()
	snd, rcv := c.nodes[0], c.nodes[2]
	c.stopServer(rcv)
	all := simURLs(2000, 200, 3)
	var toRcv []string
	for _, u := range all {
		if o, _ := snd.sp.Ownership().Ring().OwnerOfURL(u); o == rcv.id {
			toRcv = append(toRcv, u)
		}
	}
	if err := snd.sp.Route(ctx, toRcv); err != nil {
		t.Fatal(err)
	}
	if err := snd.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := snd.sp.Stats().Peers[1]
	if st.Peer != rcv.id || st.SpoolURLs != uint64(len(toRcv)) || st.SpoolBatches < 2 {
		t.Fatalf("spool before restart: %+v (want %d URLs)", st, len(toRcv))
	}
	c.stop(snd)
	c.startSplitter(snd)
	c.serve(snd, nil)
	if st := snd.sp.Stats().Peers[1]; st.SpoolURLs != uint64(len(toRcv)) {
		t.Fatalf("spool after restart holds %d URLs, want %d", st.SpoolURLs, len(toRcv))
	}
	c.serve(rcv, nil)
	waitFor(t, "delivery after restart", func() bool { return len(rcv.sink.snapshot()) == len(toRcv) })
	waitFor(t, "spool drained", func() bool { return snd.sp.Stats().Total.SpoolBatches == 0 })
	for u, n := range rcv.sink.snapshot() {
		if n != 1 {
			t.Errorf("%s delivered %d times", u, n)
		}
	}
}

// The per-peer cache suppresses repeats, and they are counted.
func TestPeerCacheSuppression(t *testing.T) {
	c := newTestCluster(t, 2, func(o *Options) { o.PeerCache = func() Cache { return mapCache{} } })
	ctx := context.Background()
	snd := c.nodes[0]
	all := simURLs(1000, 100, 4)
	for range 3 {
		if err := snd.sp.Route(ctx, all); err != nil {
			t.Fatal(err)
		}
	}
	if err := snd.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := snd.sp.Stats()
	remote := st.DiscoveredRemote / 3
	if remote == 0 || st.Total.Suppressed != 2*remote || st.Total.SentURLs != remote {
		t.Fatalf("discovered %d, suppressed %d, sent %d", st.DiscoveredRemote, st.Total.Suppressed, st.Total.SentURLs)
	}
	if got, want := st.TrafficReduction(), 2.0/3; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("traffic reduction %.4f, want %.4f", got, want)
	}
	waitFor(t, "delivery", func() bool { return uint64(len(c.nodes[1].sink.snapshot())) == remote })
}

// A batch the peer refuses as malformed (here: the peer's limits are
// smaller) stays in the sender's spool, is counted on both sides, and is
// delivered once the peer accepts it.
func TestRefusedBatchIsKeptBySender(t *testing.T) {
	small := true
	c := newTestCluster(t, 2, func(o *Options) {
		if o.Self == "node-1" && small {
			o.Limits = Limits{MaxURLs: 5}
			o.BatchMaxURLs = 5
		}
	})
	ctx := context.Background()
	snd, rcv := c.nodes[0], c.nodes[1]
	var toRcv []string
	for _, u := range simURLs(400, 40, 7) {
		if o, _ := snd.sp.Ownership().Ring().OwnerOfURL(u); o == rcv.id {
			toRcv = append(toRcv, u)
		}
	}
	if err := snd.sp.Route(ctx, toRcv); err != nil {
		t.Fatal(err)
	}
	if err := snd.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "refusal", func() bool { return snd.sp.Stats().Total.RejectedByPeer > 0 })
	if got := rcv.sp.Stats().Total.Malformed; got == 0 {
		t.Error("receiver did not count the refused batch")
	}
	if st := snd.sp.Stats().Total; st.SpoolURLs != uint64(len(toRcv)) {
		t.Fatalf("spool holds %d of %d URLs", st.SpoolURLs, len(toRcv))
	}
	small = false
	c.restart(rcv)
	waitFor(t, "delivery after the peer accepts", func() bool { return len(rcv.sink.snapshot()) == len(toRcv) })
}
