package hostsplit

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// routeSmallBatches routes urls to snd in pieces of per, each followed by a
// Flush (as a worker's group commit does), so that each piece is spooled
// as its own batch.
func routeSmallBatches(t *testing.T, snd *Splitter, urls []string, per int) {
	t.Helper()
	ctx := context.Background()
	for s := 0; s < len(urls); s += per {
		if err := snd.Route(ctx, urls[s:min(s+per, len(urls))]); err != nil {
			t.Fatal(err)
		}
		if err := snd.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// urlsOwnedBy returns n of the sim URLs that id owns under r.
func urlsOwnedBy(t *testing.T, r *Ring, id NodeID, n int) []string {
	t.Helper()
	var out []string
	for _, u := range simURLs(20*n, 300, 9) {
		if o, _ := r.OwnerOfURL(u); o == id {
			out = append(out, u)
		}
		if len(out) == n {
			return out
		}
	}
	t.Fatalf("only %d URLs owned by %s", len(out), id)
	return nil
}

// Batches spooled while the peer is down travel coalesced into messages of
// up to BatchMaxURLs URLs, encoded together (smaller than the batches as
// spooled), each URL delivered once; with coalescing off, one message per
// batch.
func TestSenderCoalescesSpooledBatches(t *testing.T) {
	const nURLs, per, maxURLs = 350, 7, 100
	for _, tc := range []struct {
		name     string
		age      time.Duration
		messages uint64
	}{
		{"off", -1, nURLs / per},
		// 14 batches of 7 fit in 100 URLs: 3 messages of 98, one of 56.
		{"on", time.Nanosecond, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 2, func(o *Options) { o.BatchMaxURLs, o.CoalesceMaxAge = maxURLs, tc.age })
			snd, rcv := c.nodes[0], c.nodes[1]
			c.stopServer(rcv)
			urls := urlsOwnedBy(t, snd.sp.Ownership().Ring(), rcv.id, nURLs)
			routeSmallBatches(t, snd.sp, urls, per)
			if st := snd.sp.Stats().Total; st.SpoolBatches != nURLs/per || st.SpoolURLs != nURLs {
				t.Fatalf("spooled %d batches, %d URLs; want %d, %d", st.SpoolBatches, st.SpoolURLs, nURLs/per, nURLs)
			}
			c.serve(rcv, nil)
			waitFor(t, "spool drained", func() bool { return snd.sp.Stats().Total.SpoolBatches == 0 })
			got := rcv.sink.snapshot()
			if diff := cmp.Diff(ownedBy(t, snd.sp.Ownership().Ring(), urls)[rcv.id], keys(got)); diff != "" {
				t.Errorf("receiver (-want +got):\n%s", diff)
			}
			for u, n := range got {
				if n != 1 {
					t.Errorf("%s delivered %d times", u, n)
				}
			}
			st := snd.sp.Stats().Total
			if st.WireMessages != tc.messages || rcv.sp.Stats().Total.ReceivedBatches != tc.messages {
				t.Errorf("wire messages %d, received %d, want %d", st.WireMessages, rcv.sp.Stats().Total.ReceivedBatches, tc.messages)
			}
			if tc.age < 0 && st.WireBytes != st.SpooledBytes {
				t.Errorf("uncoalesced: wire bytes %d != spooled %d", st.WireBytes, st.SpooledBytes)
			}
			if tc.age > 0 && st.WireBytes*2 > st.SpooledBytes {
				t.Errorf("coalesced: wire bytes %d, spooled %d: want at most half", st.WireBytes, st.SpooledBytes)
			}
		})
	}
}

// A spooled batch is held back for CoalesceMaxAge unless BatchMaxURLs URLs
// are waiting: then those go as one message and the rest stays spooled.
func TestSenderHoldsSmallBatchesUntilFull(t *testing.T) {
	const per, maxURLs = 7, 100
	c := newTestCluster(t, 2, func(o *Options) { o.BatchMaxURLs, o.CoalesceMaxAge = maxURLs, time.Hour })
	snd, rcv := c.nodes[0], c.nodes[1]
	urls := urlsOwnedBy(t, snd.sp.Ownership().Ring(), rcv.id, 15*per)
	routeSmallBatches(t, snd.sp, urls[:13*per], per)
	// 91 URLs wait: nothing may be sent, however long this takes.
	if st := snd.sp.Stats().Total; st.WireMessages != 0 || st.SpoolURLs != 13*per {
		t.Fatalf("before 100 URLs: %d messages sent, %d URLs spooled", st.WireMessages, st.SpoolURLs)
	}
	routeSmallBatches(t, snd.sp, urls[13*per:], per)
	waitFor(t, "one full message", func() bool { return len(rcv.sink.snapshot()) == 14*per })
	waitFor(t, "its acknowledgement", func() bool { return snd.sp.Stats().Total.SpoolURLs == per })
	if st := snd.sp.Stats().Total; st.WireMessages != 1 || st.SpoolBatches != 1 {
		t.Errorf("after 105 URLs: %d messages, %d batches still spooled; want 1, 1", st.WireMessages, st.SpoolBatches)
	}
}

// The receiver applies a coalesced message once, also when it overlaps
// batches applied before (a resend with other boundaries), and refuses a
// gap or a malformed range.
func TestReceiverAppliesCoalescedRanges(t *testing.T) {
	c := newTestCluster(t, 2, nil)
	target := c.nodes[0]
	creds := clientCreds(t, c.ca, "node-1", c.ids, "node-0", true)
	u := urlsOwnedBy(t, target.sp.Ownership().Ring(), target.id, 6) // u[1..5]; u[0] is x
	coalesced := func(first, seq uint64, urls ...string) *pb.Batch {
		b := batchOf(t, "node-1", seq, urls...)
		b.FirstSeq = first
		return b
	}
	steps := []struct {
		b    *pb.Batch
		code codes.Code
	}{
		{batchOf(t, "node-1", 1, u[1]), codes.OK},
		{coalesced(1, 3, u[1], u[2], u[3]), codes.OK},     // overlaps 1
		{coalesced(2, 3, u[0]), codes.OK},                 // already applied: ignored
		{coalesced(5, 6, u[5]), codes.FailedPrecondition}, // 4 missing
		{coalesced(5, 4, u[4]), codes.InvalidArgument},    // first > seq
		{func() *pb.Batch { b := coalesced(4, 5, u[4]); b.Kind = pb.BatchKind_BATCH_KIND_SEEN; return b }(), codes.InvalidArgument},
		{coalesced(4, 5, u[4], u[5]), codes.OK},
	}
	for i, s := range steps {
		if err := inject(t, target.addr, creds, s.b); status.Code(err) != s.code {
			t.Errorf("step %d: %v, want %v", i, err, s.code)
		}
	}
	want := map[string]int{u[1]: 2, u[2]: 1, u[3]: 1, u[4]: 1, u[5]: 1}
	if diff := cmp.Diff(want, target.sink.snapshot()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if st := target.sp.Stats().Peers[0]; st.DupBatches != 1 || st.Malformed != 2 || st.ReceivedBatches != 3 {
		t.Errorf("dups %d malformed %d received %d; want 1, 2, 3", st.DupBatches, st.Malformed, st.ReceivedBatches)
	}
}
