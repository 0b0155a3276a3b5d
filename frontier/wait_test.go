package frontier

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// queuedWaiters is the number of Next callers waiting for a change.
func queuedWaiters(f *Frontier) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.waiters.q)
}

// waitQueued waits until n Next callers are queued.
func waitQueued(t *testing.T, f *Frontier, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for queuedWaiters(f) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d Next callers queued, want %d", queuedWaiters(f), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// startNexts starts n Next callers; their leases arrive on the channel.
func startNexts(ctx context.Context, t *testing.T, f *Frontier, n int) chan Lease {
	got := make(chan Lease, n)
	for range n {
		go func() {
			l, err := f.Next(ctx)
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			got <- l
		}()
	}
	return got
}

func collect(t *testing.T, got chan Lease, n int) map[string]bool {
	t.Helper()
	hosts := map[string]bool{}
	for range n {
		select {
		case l := <-got:
			hosts[l.Item.Host] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d waiting Next callers got a lease", len(hosts), n)
		}
	}
	return hosts
}

// One Add that makes 8 hosts ready leases all 8 to the 8 waiting callers.
func TestWaitersCascadeOnAdd(t *testing.T) {
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := startNexts(ctx, t, f, 8)
	waitQueued(t, f, 8)
	var it []Item
	for i := range 8 {
		it = append(it, items(fmt.Sprintf("h%d", i), 1)...)
	}
	if err := f.Add(it...); err != nil {
		t.Fatal(err)
	}
	if hosts := collect(t, got, 8); len(hosts) != 8 {
		t.Errorf("leased hosts %v, want 8 distinct", hosts)
	}
}

// Only one waiter holds a timer; when the hosts' delays end together, its
// timer's lease wakes the others one after the other.
func TestWaitersCascadeOnTimer(t *testing.T) {
	clock := NewManualClock(epoch)
	f := open(t, t.TempDir(), Options{Clock: clock, MaxDelay: time.Second})
	defer f.Close()
	var it []Item
	for i := range 4 {
		it = append(it, items(fmt.Sprintf("h%d", i), 2)...)
	}
	if err := f.Add(it...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ls []Lease
	for range 4 {
		l, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		if err := f.Done(l, Result{Duration: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	got := startNexts(ctx, t, f, 4)
	waitQueued(t, f, 4)
	f.mu.Lock()
	holder := f.mu.waiters.holder != nil
	f.mu.Unlock()
	if !holder {
		t.Error("no waiter holds a timer while every host waits out a delay")
	}
	clock.Advance(10 * time.Second)
	if hosts := collect(t, got, 4); len(hosts) != 4 {
		t.Errorf("leased hosts %v, want 4 distinct", hosts)
	}
}

// A waiter that leaves (its context ended) after it was woken passes the
// wake-up on to the next one, and gives up the timer role.
func TestWaiterLeavingPassesWakeUp(t *testing.T) {
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	w1, w2 := newWaiter(), newWaiter()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.enqueueLocked(w1, epoch.Add(time.Second)) {
		t.Error("the first waiter with a wake time did not get the timer")
	}
	if f.enqueueLocked(w2, epoch.Add(2*time.Second)) {
		t.Error("a waiter with a later wake time took the timer")
	}
	f.signalOneLocked()
	if len(w1.ch) != 1 || len(w2.ch) != 0 {
		t.Fatalf("signalOne woke %d and %d waiters, want the first only", len(w1.ch), len(w2.ch))
	}
	f.leaveLocked(w1)
	if len(w2.ch) != 1 {
		t.Error("the leaving waiter's wake-up was not passed on")
	}
	if f.mu.waiters.holder != nil {
		t.Error("the leaving waiter kept the timer role")
	}
	if n := len(f.mu.waiters.q); n != 0 {
		t.Errorf("%d waiters still queued", n)
	}
}

// A caller whose context has ended takes no lease, even with a host ready:
// it would only requeue the URL (a stopping crawl's workers each leased,
// failed and requeued the same URL before).
func TestNextAfterCancelLeasesNothing(t *testing.T) {
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	if err := f.Add(items("h", 2)...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l, err := f.Next(ctx); err != context.Canceled {
		t.Fatalf("Next on a cancelled context: lease %v, err %v; want context.Canceled", l.Item.URL, err)
	}
	if n := f.InFlight(); n != 0 {
		t.Fatalf("%d leases in flight after a cancelled Next", n)
	}
	if _, err := f.Next(context.Background()); err != nil {
		t.Fatalf("the URL is still there for a live caller: %v", err)
	}
}
