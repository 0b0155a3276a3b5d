package hostsplit

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// A membership change under load: node-2 leaves first (it forwards what it
// receives to the new owners, whose batches are refused until they adopt
// the view), then node-0 and node-1 adopt the view (re-routing what they
// spooled for node-2). Every URL ends at its owner under the new view.
func TestSetViewForwardsAndReroutes(t *testing.T) {
	c := newTestCluster(t, 3, func(o *Options) { o.BatchMaxURLs = 50 })
	ctx := context.Background()
	v2 := View{Epoch: 2, Members: c.members[:2]}
	ring2, err := NewRing(v2.IDs(), false)
	if err != nil {
		t.Fatal(err)
	}
	n0, n1, n2 := c.nodes[0], c.nodes[1], c.nodes[2]
	if err := n2.sp.SetView(ctx, v2); err != nil {
		t.Fatal(err)
	}
	if err := n2.sp.SetView(ctx, v2); err != nil { // repeated: a no-op
		t.Fatal(err)
	}
	if err := n2.sp.SetView(ctx, View{Epoch: 1, Members: c.members}); !errors.Is(err, ErrStaleView) {
		t.Fatalf("older view: %v", err)
	}
	all := simURLs(3000, 300, 5)
	half := len(all) / 2
	for s := 0; s < half; s += 25 {
		if err := n0.sp.Route(ctx, all[s:s+25]); err != nil {
			t.Fatal(err)
		}
	}
	if err := n0.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Flush only spools: wait until node-2 has acknowledged (and forwarded)
	// the first half, or a slow sender leaves it all to the re-route below.
	waitFor(t, "the first half delivered", func() bool {
		return n0.sp.Stats().Total.SpoolBatches == 0
	})
	c.stopServer(n2) // node-2 stops receiving: node-0's batches for it wait in its spool
	for s := half; s < len(all); s += 25 {
		if err := n0.sp.Route(ctx, all[s:min(s+25, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := n0.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, nd := range []*testNode{n0, n1} {
		if err := nd.sp.SetView(ctx, v2); err != nil {
			t.Fatal(err)
		}
	}
	want := ownedBy(t, ring2, all)
	waitFor(t, "every URL at its new owner", func() bool {
		return len(n0.sink.snapshot()) == len(want[n0.id]) && len(n1.sink.snapshot()) == len(want[n1.id])
	})
	for _, nd := range []*testNode{n0, n1} {
		if got := keys(nd.sink.snapshot()); !slices.Equal(got, want[nd.id]) {
			t.Errorf("%s received %d URLs, want %d", nd.id, len(got), len(want[nd.id]))
		}
	}
	if got := n2.sink.snapshot(); len(got) != 0 {
		t.Errorf("node-2, not a member, delivered %d URLs locally", len(got))
	}
	var fwd, rerouted uint64
	for _, nd := range c.nodes {
		for _, p := range nd.sp.tr.allPeers() {
			fwd += p.st.forwarded.Load()
			rerouted += p.st.rerouted.Load()
		}
	}
	if fwd == 0 || rerouted == 0 {
		t.Errorf("forwarded %d batches, re-routed %d URLs: the test did not exercise both", fwd, rerouted)
	}
	waitFor(t, "spools drained", func() bool {
		return n0.sp.Stats().Total.SpoolBatches == 0 && n1.sp.Stats().Total.SpoolBatches == 0
	})
	// Restarted, node-0 resumes the adopted view whatever its options say.
	c.restart(n0)
	if e := n0.sp.Ownership().Epoch(); e != 2 || !slices.Equal(n0.sp.Ownership().View().IDs(), v2.IDs()) {
		t.Errorf("after restart: epoch %d, members %v", e, n0.sp.Ownership().View().IDs())
	}
}

// A member lost with its disk: node-2 had acknowledged node-0's batches
// (they left node-0's spool for its archive), then vanished. After the
// view without node-2, node-0's ResendLost (after a restart: the archive
// is durable) re-routes every URL it had sent to node-2 to the new
// owners, node-1's share over the wire and its own to its Local sink. A
// second call re-sends nothing; a graceful leaver's archive is dropped.
func TestResendLostReroutesAcknowledgedBatches(t *testing.T) {
	c := newTestCluster(t, 3, func(o *Options) { o.BatchMaxURLs = 50 })
	ctx := context.Background()
	n0, n1, n2 := c.nodes[0], c.nodes[1], c.nodes[2]
	ring1, err := NewRing(View{Members: c.members}.IDs(), false)
	if err != nil {
		t.Fatal(err)
	}
	all := simURLs(3000, 300, 7)
	for s := 0; s < len(all); s += 25 {
		if err := n0.sp.Route(ctx, all[s:s+25]); err != nil {
			t.Fatal(err)
		}
	}
	if err := n0.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	was := ownedBy(t, ring1, all)
	waitFor(t, "node-2 applied its share", func() bool {
		return len(n2.sink.snapshot()) == len(was[n2.id]) && n0.sp.Stats().Total.SpoolBatches == 0
	})
	nu, bytes, err := n0.sp.Spool().ArchiveSize(n2.id)
	if err != nil || nu != uint64(len(was[n2.id])) || bytes == 0 {
		t.Fatalf("archive for node-2: %d URLs (sent %d), %d bytes, %v", nu, len(was[n2.id]), bytes, err)
	}
	t.Logf("archive for node-2: %d URLs, %d bytes (%.1f B/URL)", nu, bytes, float64(bytes)/float64(nu))
	c.stop(n2) // gone with its disk

	v2 := View{Epoch: 2, Members: c.members[:2]}
	ring2, err := NewRing(v2.IDs(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range []*testNode{n0, n1} {
		if err := nd.sp.SetView(ctx, v2); err != nil {
			t.Fatal(err)
		}
	}
	c.restart(n0)
	if _, err := n0.sp.ResendLost(ctx, []NodeID{n0.id}); !errors.Is(err, ErrBadView) {
		t.Errorf("ResendLost of a member: %v, want ErrBadView", err)
	}
	n, err := n0.sp.ResendLost(ctx, []NodeID{n2.id})
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(was[n2.id])) {
		t.Errorf("re-sent %d URLs, node-2 had acknowledged %d", n, len(was[n2.id]))
	}
	want := ownedBy(t, ring2, all)
	waitFor(t, "every URL at its new owner", func() bool {
		return len(n0.sink.snapshot()) == len(want[n0.id]) && len(n1.sink.snapshot()) == len(want[n1.id])
	})
	for _, nd := range []*testNode{n0, n1} {
		if got := keys(nd.sink.snapshot()); !slices.Equal(got, want[nd.id]) {
			t.Errorf("%s received %d URLs, want %d", nd.id, len(got), len(want[nd.id]))
		}
	}
	if n, err := n0.sp.ResendLost(ctx, []NodeID{n2.id}); err != nil || n != 0 {
		t.Errorf("second ResendLost: %d URLs, %v; want 0, nil", n, err)
	}
	if nb, _, err := n0.sp.Spool().ArchiveSize(n2.id); err != nil || nb != 0 {
		t.Errorf("archive for node-2 after the re-send: %d URLs, %v", nb, err)
	}
	// node-1's archive (what node-0 sent it) is dropped on demand.
	waitFor(t, "spool drained", func() bool { return n0.sp.Stats().Total.SpoolBatches == 0 })
	if nb, _, err := n0.sp.Spool().ArchiveSize(n1.id); err != nil || nb == 0 {
		t.Fatalf("archive for node-1: %d URLs, %v", nb, err)
	}
	if err := n0.sp.Spool().DropArchive(n1.id); err != nil {
		t.Fatal(err)
	}
	if nb, _, err := n0.sp.Spool().ArchiveSize(n1.id); err != nil || nb != 0 {
		t.Errorf("archive for node-1 after DropArchive: %d URLs, %v", nb, err)
	}
}
