package hostsplit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func ch(peer NodeID, epoch, sent, inEpoch, applied uint64) Channel {
	return Channel{Peer: peer, OutEpoch: epoch, SentSeq: sent, AckedSeq: sent, InEpoch: inEpoch, AppliedSeq: applied}
}

func TestQuiescentRule(t *testing.T) {
	// a (epoch 1) sent 3 batches to b; b (epoch 2) sent 0 to a.
	done := []NodeStatus{
		{Node: "a", Idle: true, Channels: []Channel{ch("b", 1, 3, 2, 0)}},
		{Node: "b", Idle: true, Channels: []Channel{ch("a", 2, 0, 1, 3)}},
	}
	clone := func(r []NodeStatus, edit func([]NodeStatus)) []NodeStatus {
		out := make([]NodeStatus, len(r))
		for i, ns := range r {
			ns.Channels = append([]Channel(nil), ns.Channels...)
			out[i] = ns
		}
		edit(out)
		return out
	}
	if err := Quiescent(done, clone(done, func([]NodeStatus) {})); err != nil {
		t.Fatalf("finished cluster not quiescent: %v", err)
	}
	notYet := map[string][]NodeStatus{
		"busy":         clone(done, func(r []NodeStatus) { r[1].Idle = false }),
		"buffered":     clone(done, func(r []NodeStatus) { r[0].BufferedURLs = 1 }),
		"in flight":    clone(done, func(r []NodeStatus) { r[1].Channels[0].AppliedSeq = 2 }),
		"unacked":      clone(done, func(r []NodeStatus) { r[0].Channels[0].AckedSeq = 2 }),
		"spooled":      clone(done, func(r []NodeStatus) { r[0].Channels[0].SpoolBatches = 1 }),
		"other epoch":  clone(done, func(r []NodeStatus) { r[1].Channels[0].InEpoch = 9 }),
		"missing node": done[:1],
		"changed": clone(done, func(r []NodeStatus) {
			r[0].Channels[0].SentSeq, r[0].Channels[0].AckedSeq, r[1].Channels[0].AppliedSeq = 4, 4, 4
		}),
		"member change": clone(done, func(r []NodeStatus) { r[1].Node = "c" }),
		// b was repaired: a has not re-sent its archive for b yet.
		"resend unserved": clone(done, func(r []NodeStatus) { r[1].ResendToken = 7 }),
		"resend other token": clone(done, func(r []NodeStatus) {
			r[1].ResendToken, r[0].Channels[0].ResendServed = 7, 6
		}),
	}
	for name, round2 := range notYet {
		t.Run(name, func(t *testing.T) {
			if err := Quiescent(done, round2); !errors.Is(err, ErrNotQuiescent) {
				t.Errorf("round2 %s: %v, want ErrNotQuiescent", name, err)
			}
			if name != "changed" && name != "member change" {
				if err := Quiescent(round2, done); !errors.Is(err, ErrNotQuiescent) {
					t.Errorf("round1 %s: %v, want ErrNotQuiescent", name, err)
				}
			}
		})
	}
	// A node that restarted its spool (new epoch, nothing sent yet) does
	// not block termination.
	fresh := clone(done, func(r []NodeStatus) {
		r[0].Channels[0].OutEpoch, r[0].Channels[0].SentSeq, r[0].Channels[0].AckedSeq = 5, 0, 0
	})
	if err := Quiescent(fresh, fresh); err != nil {
		t.Errorf("fresh epoch: %v", err)
	}
	// b's token served by a: nothing more to wait for.
	served := clone(done, func(r []NodeStatus) { r[1].ResendToken, r[0].Channels[0].ResendServed = 7, 7 })
	if err := Quiescent(served, served); err != nil {
		t.Errorf("resend token served: %v", err)
	}
}

// Termination is never reported while a batch is being delivered, while a
// node's crawl loop is busy, or while URLs are buffered; it is reported once
// everything has arrived.
func TestTerminationNotEarly(t *testing.T) {
	var busy atomic.Bool
	c := newTestCluster(t, 3, func(o *Options) {
		if o.Self == "node-1" {
			o.Status = func() LocalStatus { return LocalStatus{Idle: !busy.Load()} }
		}
		o.BatchMaxAge = -1 // flushed only by size or Flush
		o.BatchMaxURLs = 10
	})
	ctx := context.Background()
	snd, rcv := c.nodes[0], c.nodes[2]
	release := make(chan struct{})
	var entered atomic.Int64
	rcv.sink.hook = func([]string) error {
		entered.Add(1)
		<-release
		return nil
	}
	check := func(want bool, what string) {
		t.Helper()
		ok, err := snd.sp.Transport().Terminated(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok != want {
			t.Fatalf("%s: terminated = %v, want %v", what, ok, want)
		}
	}
	check(true, "empty cluster")
	var toRcv []string
	for _, u := range simURLs(500, 100, 5) {
		if o, _ := snd.sp.Ownership().Ring().OwnerOfURL(u); o == rcv.id {
			toRcv = append(toRcv, u)
		}
	}
	// Buffered, not spooled: the sender is not idle.
	if err := snd.sp.Route(ctx, toRcv[:5]); err != nil {
		t.Fatal(err)
	}
	check(false, "URLs buffered")
	if err := snd.sp.Route(ctx, toRcv[5:]); err != nil {
		t.Fatal(err)
	}
	if err := snd.sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "receiver delivering", func() bool { return entered.Load() > 0 })
	for range 20 {
		check(false, "batches travelling")
	}
	close(release)
	waitFor(t, "termination", func() bool { ok, err := snd.sp.Transport().Terminated(ctx); return err == nil && ok })
	if got := len(rcv.sink.snapshot()); got != len(toRcv) {
		t.Fatalf("terminated with %d of %d URLs delivered", got, len(toRcv))
	}
	busy.Store(true)
	check(false, "a node's crawl loop busy")
	busy.Store(false)
	check(true, "all idle again")
	// A node that is down makes the round fail, never succeed.
	c.stopServer(c.nodes[1])
	if ok, err := snd.sp.Transport().Terminated(ctx); ok || err == nil {
		t.Fatalf("node down: terminated=%v err=%v", ok, err)
	}
}
