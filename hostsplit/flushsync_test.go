package hostsplit

import (
	"context"
	"testing"
)

// A Flush spools the buffers of every peer in one synced write: workers
// wait for a group flush every few milliseconds, and an fsync per peer per
// flush was most of what a cross URL cost the spool. Each peer still gets
// its own batch, and a Flush with nothing buffered writes nothing.
func TestFlushSpoolsAllPeersInOneSyncedWrite(t *testing.T) {
	c := newTestCluster(t, 3, func(o *Options) { o.BatchMaxAge = -1 })
	snd := c.nodes[0]
	for _, nd := range c.nodes[1:] {
		c.stopServer(nd) // batches stay spooled: the counters are stable
	}
	ring := snd.sp.Ownership().Ring()
	var urls []string
	for _, nd := range c.nodes[1:] {
		urls = append(urls, urlsOwnedBy(t, ring, nd.id, 5)...)
	}
	ctx := context.Background()
	before := snd.sp.Stats().SpoolSyncs
	if err := snd.sp.Route(ctx, urls); err != nil {
		t.Fatal(err)
	}
	if err := snd.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := snd.sp.Stats()
	if got := st.SpoolSyncs - before; got != 1 {
		t.Errorf("Flush to 2 peers made %d synced writes; want 1", got)
	}
	for _, ps := range st.Peers {
		if ps.SpoolBatches != 1 || ps.SpoolURLs != 5 || ps.BufferedURLs != 0 {
			t.Errorf("%s: %d batches, %d URLs spooled, %d buffered; want 1, 5, 0", ps.Peer, ps.SpoolBatches, ps.SpoolURLs, ps.BufferedURLs)
		}
	}
	if err := snd.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := snd.sp.Stats().SpoolSyncs - st.SpoolSyncs; got != 0 {
		t.Errorf("an empty Flush made %d synced writes", got)
	}
}
