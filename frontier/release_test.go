package frontier

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRelease: Release lets the host's next URL be leased at the delay
// Release's result asks for, while the released lease stays outstanding
// until its Done; a released URL not yet Done is handed out again after a
// reopen (never lost), and one requeued by its Done comes back at the tail.
func TestRelease(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(epoch)
	f := open(t, dir, Options{Clock: clock, MinDelay: 10 * time.Millisecond, MaxDelay: time.Second, Factor: 1, FactorSet: true})
	if err := f.Add(items("h", 4)...); err != nil {
		t.Fatal(err)
	}
	next := func() (Lease, bool) {
		t.Helper()
		l, ok, err := f.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		return l, ok
	}
	a, _ := next()
	if _, ok := next(); ok {
		t.Fatal("a second URL of the host was leased during a fetch")
	}
	if err := f.Release(a, Result{Duration: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(a, Result{Duration: time.Hour}); err != nil { // a no-op
		t.Fatal(err)
	}
	if _, ok := next(); ok {
		t.Fatal("leased before the released fetch's delay")
	}
	clock.Advance(20 * time.Millisecond)
	b, ok := next()
	if !ok || b.URL == a.URL {
		t.Fatalf("after Release and the delay: leased %v %q, want the host's next URL", ok, b.URL)
	}
	if got := f.InFlight(); got != 2 {
		t.Errorf("InFlight %d, want 2 (the released lease is outstanding until Done)", got)
	}
	if err := f.Done(a, Result{Requeue: true}); err != nil { // a's URL goes to the tail
		t.Fatal(err)
	}
	if err := f.Release(a, Result{}); !errors.Is(err, ErrUnknownLease) {
		t.Errorf("Release after Done: %v, want ErrUnknownLease", err)
	}
	if err := f.Release(b, Result{}); err != nil {
		t.Fatal(err)
	}
	// b released, not Done: a crash (here a reopen without Close's
	// completion) hands it out again.
	clock.Advance(time.Second)
	c, _ := next()
	if err := f.Done(c, Result{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, Options{Clock: clock})
	defer f.Close()
	clock.Advance(time.Second) // past the host's persisted delay
	got := map[string]bool{}
	for _, u := range drain(t, f) {
		got[u] = true
	}
	want := []string{a.URL, b.URL, "http://h/3"}
	if c.URL == "http://h/3" {
		want[2] = "http://h/2"
	}
	for _, u := range want {
		if !got[u] {
			t.Errorf("after the reopen %s was not handed out (got %v)", u, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("after the reopen got %v, want %v", got, want)
	}
}

// TestReleaseLastURL: a host whose only URL was released and is then Done
// is retired as usual, and a host whose released lease is outstanding is
// not (its Done needs it).
func TestReleaseLastURL(t *testing.T) {
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	if err := f.Add(items("h", 1)...); err != nil {
		t.Fatal(err)
	}
	a, ok, err := f.TryNext()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := f.Release(a, Result{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(Item{URL: "http://h/late", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	b, ok, err := f.TryNext()
	if err != nil || !ok || b.URL != "http://h/late" {
		t.Fatalf("leased %q %v %v", b.URL, ok, err)
	}
	if err := f.Done(b, Result{}); err != nil { // h: no URL, no lease, one released
		t.Fatal(err)
	}
	if err := f.Done(a, Result{}); err != nil {
		t.Fatal(err)
	}
	if !f.Idle() {
		t.Errorf("not idle after both Dones: %+v", f.Stats())
	}
	if s := f.Stats(); s.ActiveHosts != 0 || s.Completed != 2 {
		t.Errorf("stats %+v: want no active host, 2 completed", s)
	}
}

// TestReleaseNextQuiet: in a one-host crawl, ReleaseNext leases the host's
// next URL and wakes none of the callers waiting in Next, and the released
// lease's Done (bounded durability) does not either; a Done that frees
// something (a lease not released) still wakes them.
func TestReleaseNextQuiet(t *testing.T) {
	f := open(t, t.TempDir(), Options{SyncDone: true, MaxLeases: 8})
	defer f.Close()
	a, got, cancel := leaseWithWaiters(t, f, 4, 2)
	defer cancel()
	wakeups := f.Stats().Wakeups
	b, ok, err := f.ReleaseNext(a, Result{}, AnyWorker)
	if err != nil || !ok || b.Item.Host != "h" || b.URL == a.URL {
		t.Fatalf("ReleaseNext: %q %v %v, want the host's next URL", b.URL, ok, err)
	}
	if err := f.Done(a, Result{}); err != nil {
		t.Fatal(err)
	}
	if n := f.Stats().Wakeups - wakeups; n != 0 {
		t.Fatalf("ReleaseNext and the released lease's Done woke %d waiting Next callers for nothing", n)
	}
	f.mu.Lock()
	gen := f.mu.group.gen
	f.mu.Unlock()
	if err := f.waitDurable(gen); err != nil { // the syncer's work, budget not spent
		t.Fatal(err)
	}
	if n := f.Stats().Wakeups - wakeups; n != 0 {
		t.Fatalf("a sync with the lease budget unspent woke %d waiting Next callers for nothing", n)
	}
	if err := f.Done(b, Result{}); err != nil { // not released: the host is free
		t.Fatal(err)
	}
	if c := <-got; c.Item.Host != "h" {
		t.Fatalf("woken waiter leased %+v", c)
	}
}

// TestReleaseNextNotReady: when the released host must wait out a delay,
// ReleaseNext leases nothing and wakes the waiting Next callers, one of
// which leases the host once the delay has passed.
func TestReleaseNextNotReady(t *testing.T) {
	clock := NewManualClock(epoch)
	f := open(t, t.TempDir(), Options{Clock: clock, SyncDone: true, MaxLeases: 8})
	defer f.Close()
	a, got, cancel := leaseWithWaiters(t, f, 2, 1)
	defer cancel()
	if _, ok, err := f.ReleaseNext(a, Result{CrawlDelay: 10 * time.Millisecond}, AnyWorker); err != nil || ok {
		t.Fatalf("ReleaseNext during the host's delay: ok %v, err %v", ok, err)
	}
	if _, _, err := f.ReleaseNext(a, Result{}, AnyWorker); err != nil { // released before: a no-op
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		clock.Advance(10 * time.Millisecond)
		select {
		case b := <-got:
			if b.Item.Host != "h" || b.URL == a.URL {
				t.Fatalf("waiter leased %+v", b)
			}
			return
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting Next caller never leased the host after its delay")
		}
	}
}

// leaseWithWaiters adds n URLs of host h, leases the first and starts
// waiters Next callers, returning once they are queued; cancel them
// before closing f.
func leaseWithWaiters(t *testing.T, f *Frontier, n, waiters int) (Lease, chan Lease, context.CancelFunc) {
	t.Helper()
	if err := f.Add(items("h", n)...); err != nil {
		t.Fatal(err)
	}
	a, ok, err := f.TryNext()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := startNexts(ctx, t, f, waiters)
	waitQueued(t, f, waiters)
	return a, got, cancel
}
