package hostsplit

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// A serve cut short (the node killed after it began) resumes when the node
// restarts, before any status poll, and re-sends each archived URL once;
// once done, a restart and status polls re-send nothing.
func TestResendResumesAfterRestart(t *testing.T) {
	c := newTestCluster(t, 2, func(o *Options) { o.BatchMaxURLs = 8 })
	n0, n1 := c.nodes[0], c.nodes[1]
	urls := ownedBy(t, n0.sp.Ownership().Ring(), simURLs(400, 40, 3))["node-1"]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n0.sp.Route(ctx, urls); err != nil {
		t.Fatal(err)
	}
	if err := n0.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	acked := func() bool {
		c := n0.sp.Transport().LocalStatus().Channels[0]
		return c.SentSeq > 0 && c.AckedSeq == c.SentSeq
	}
	waitFor(t, "node-1 to acknowledge node-0's batches", acked)
	counts := func(want int) func() bool {
		return func() bool {
			got := n1.sink.snapshot()
			for _, u := range urls {
				if got[u] != want {
					return false
				}
			}
			return true
		}
	}
	if !counts(1)() {
		t.Fatal("node-1 did not get each URL once")
	}

	// node-1 is repaired (a token); node-0 was killed right after it began
	// serving it: its in-progress state is in its spool.
	c.stop(n1)
	token, err := RequestResend(n1.dir)
	if err != nil || token == 0 {
		t.Fatalf("RequestResend: %d, %v", token, err)
	}
	c.startSplitter(n1)
	c.serve(n1, nil)
	c.stop(n0)
	st, err := openStore(n0.dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	last, _, err := st.peerState("node-1")
	if err == nil {
		err = st.setMeta(resendServedMeta("node-1"), resendState{token: token, epoch: st.epoch, limit: last}.encode())
	}
	if cerr := st.close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	c.startSplitter(n0)
	c.serve(n0, nil)
	waitFor(t, "node-0 to finish the serve it began", func() bool {
		return n0.sp.Transport().LocalStatus().Channels[0].ResendServed == token
	})
	waitFor(t, "node-1 to get each URL a second time", func() bool { return acked() && counts(2)() })

	// Served: neither a restart nor node-1's token in its status re-sends.
	c.restart(n0)
	for range 5 {
		ns, err := n0.sp.Transport().PeerStatus(ctx, "node-1")
		if err != nil || ns.ResendToken != token {
			t.Fatalf("node-1's status: token %d (want %d), %v", ns.ResendToken, token, err)
		}
		time.Sleep(resendPoll)
	}
	if sent := n0.sp.Stats().Total.SentURLs; sent != 0 || !counts(2)() {
		t.Fatalf("node-0 re-sent %d URLs for a token served before its restart", sent)
	}
	if !n0.sp.Transport().LocalStatus().Idle {
		t.Error("node-0 not idle with nothing to serve")
	}
}
