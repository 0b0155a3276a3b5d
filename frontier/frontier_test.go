package frontier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if childMain() {
		return
	}
	goleak.VerifyTestMain(m)
}

// open opens a frontier in dir with no politeness delay and a manual clock.
func open(t testing.TB, dir string, o Options) *Frontier {
	t.Helper()
	if o.Clock == nil {
		o.Clock = NewManualClock(epoch)
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = time.Nanosecond
		o.Factor = 1e-9
	}
	f, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func items(host string, n int) []Item {
	var it []Item
	for i := range n {
		it = append(it, Item{URL: fmt.Sprintf("http://%s/%d", host, i), Host: host})
	}
	return it
}

// drain leases and completes everything ready now, returning the URLs in order.
func drain(t testing.TB, f *Frontier) []string {
	t.Helper()
	var got []string
	for {
		l, ok, err := f.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		got = append(got, l.URL)
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
	}
}

// With one back queue the frontier is a plain FIFO per priority: priority 0
// first, arrival order within a priority.
func TestFIFOAndPriority(t *testing.T) {
	f := open(t, t.TempDir(), Options{BackQueues: 1})
	defer f.Close()
	add := func(url, host string, prio uint8) {
		if err := f.Add(Item{URL: url, Host: host, Priority: prio}); err != nil {
			t.Fatal(err)
		}
	}
	add("a1", "a", 1)
	add("b1", "b", 0)
	add("a2", "a", 0)
	add("c1", "c", 1)
	add("b2", "b", 0)
	add("a3", "a", 2)
	add("c2", "c", 0)
	got := fmt.Sprint(drain(t, f))
	// Priority 0: b1 a2 b2 c2, then 1: a1 c1, then 2: a3.
	if want := "[b1 a2 b2 c2 a1 c1 a3]"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	if !f.Idle() || f.Len() != 0 {
		t.Fatalf("not idle after drain: len %d", f.Len())
	}
}

// Breadth-first across many hosts: with enough back queues every host gets
// its first URL before any host gets its second.
func TestBreadthFirstAcrossHosts(t *testing.T) {
	f := open(t, t.TempDir(), Options{Workers: 10})
	defer f.Close()
	for round := range 3 {
		for h := range 20 {
			host := fmt.Sprintf("h%02d", h)
			if err := f.Add(Item{URL: fmt.Sprintf("%s/%d", host, round), Host: host}); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[string]int{}
	got := drain(t, f)
	if len(got) != 60 {
		t.Fatalf("drained %d URLs, want 60", len(got))
	}
	for _, u := range got {
		var host string
		var round int
		fmt.Sscanf(u, "h%02d/%d", new(int), &round)
		host = u[:3]
		if round != seen[host] {
			t.Fatalf("host %s: got round %d, want %d (order %v)", host, round, seen[host], got)
		}
		seen[host]++
	}
}

// At most one lease per host, whatever the number of workers.
func TestOneLeasePerHost(t *testing.T) {
	f := open(t, t.TempDir(), Options{Workers: 4})
	defer f.Close()
	if err := f.Add(append(items("a", 5), items("b", 5)...)...); err != nil {
		t.Fatal(err)
	}
	l1, ok1, _ := f.TryNext()
	l2, ok2, _ := f.TryNext()
	_, ok3, _ := f.TryNext()
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("leases: %v %v %v, want true true false", ok1, ok2, ok3)
	}
	if l1.Host == l2.Host {
		t.Fatalf("two leases on %s", l1.Host)
	}
	if err := f.Done(l1, Result{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Done(l1, Result{}); !errors.Is(err, ErrUnknownLease) {
		t.Fatalf("second Done: %v, want ErrUnknownLease", err)
	}
	l4, ok4, _ := f.TryNext()
	if !ok4 || l4.Host != l1.Host {
		t.Fatalf("after Done got %v %v, want host %s", l4, ok4, l1.Host)
	}
	if s := f.Stats(); s.InFlight != 2 || s.Queued != 7 || s.ActiveHosts != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// Next blocks until the host's delay has passed on the (manual) clock.
func TestNextWaitsForPoliteness(t *testing.T) {
	clock := NewManualClock(epoch)
	f := open(t, t.TempDir(), Options{Clock: clock, MaxDelay: time.Second})
	defer f.Close()
	if err := f.Add(items("a", 2)...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Done(l, Result{Duration: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	got := make(chan Lease)
	go func() {
		l, err := f.Next(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	// Advance in small steps; the lease must not come before 200ms.
	for elapsed := time.Duration(0); ; elapsed += 10 * time.Millisecond {
		select {
		case l := <-got:
			if elapsed < 200*time.Millisecond {
				t.Fatalf("leased %s after %v, before the 200ms delay", l.URL, elapsed)
			}
			if s := f.Stats(); s.PolitenessWaits == 0 {
				t.Errorf("PolitenessWaits = 0")
			}
			return
		case <-time.After(5 * time.Millisecond):
		}
		if elapsed > time.Second {
			t.Fatal("no lease after 1s of clock time")
		}
		clock.Advance(10 * time.Millisecond)
	}
}

func TestNextCancelAndClose(t *testing.T) {
	f := open(t, t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	go func() { _, err := f.Next(ctx); errc <- err }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v", err)
	}
	go func() { _, err := f.Next(context.Background()); errc <- err }()
	time.Sleep(10 * time.Millisecond)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := f.Add(items("a", 1)...); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
}

func TestExitWhenIdle(t *testing.T) {
	f := open(t, t.TempDir(), Options{ExitWhenIdle: true})
	defer f.Close()
	if err := f.Add(items("a", 1)...); err != nil {
		t.Fatal(err)
	}
	l, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A lease is out: not idle, Next must block until Done.
	errc := make(chan error)
	go func() { _, err := f.Next(context.Background()); errc <- err }()
	select {
	case err := <-errc:
		t.Fatalf("Next returned %v with a lease outstanding", err)
	case <-time.After(20 * time.Millisecond):
	}
	idle := make(chan error)
	go func() { idle <- f.WaitIdle(context.Background()) }()
	select {
	case err := <-idle:
		t.Fatalf("WaitIdle returned %v with a lease outstanding", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := f.Done(l, Result{}); err != nil {
		t.Fatal(err)
	}
	if err := <-idle; err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrEmpty) {
		t.Fatalf("Next on idle frontier: %v, want ErrEmpty", err)
	}
}

func TestRequeue(t *testing.T) {
	clock := NewManualClock(epoch)
	f := open(t, t.TempDir(), Options{Clock: clock, FailureBackoff: time.Second})
	defer f.Close()
	if err := f.Add(items("a", 2)...); err != nil {
		t.Fatal(err)
	}
	l, _, _ := f.TryNext()
	if err := f.Done(l, Result{Requeue: true, Failed: true}); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, f); len(got) != 0 {
		t.Fatalf("failed host not backed off: %v", got)
	}
	clock.Advance(time.Second)
	if got, want := fmt.Sprint(drain(t, f)), "[http://a/1 http://a/0]"; got != want {
		t.Fatalf("after requeue %s, want %s", got, want)
	}
}

// Close and reopen: queued URLs, leased-but-not-done URLs and the politeness
// state survive; AddBatch is idempotent across the restart.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(epoch)
	o := Options{Clock: clock, MaxDelay: time.Minute, BackQueues: 2}
	f := open(t, dir, o)
	batch := append(append(items("a", 3), items("b", 3)...), items("c", 3)...)
	if err := f.AddBatch("due", 7, batch); err != nil {
		t.Fatal(err)
	}
	l1, _, _ := f.TryNext()
	l2, _, _ := f.TryNext()
	if err := f.Done(l1, Result{Duration: time.Second}); err != nil { // rests 10s
		t.Fatal(err)
	}
	// l2 stays leased across the restart.
	_ = l2
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, o)
	defer f.Close()
	if err := f.Done(l2, Result{}); !errors.Is(err, ErrUnknownLease) {
		t.Fatalf("Done of a lease from before the restart: %v", err)
	}
	if err := f.AddBatch("due", 7, batch); err != nil {
		t.Fatal(err)
	}
	if err := f.AddBatch("due", 3, batch); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Queued != 8 || s.IgnoredBatches != 2 {
		t.Fatalf("after reopen: %+v, want 8 queued, 2 ignored batches", s)
	}
	got := map[string]bool{}
	for _, u := range drain(t, f) {
		got[u] = true
	}
	if got[l1.URL] || !got[l2.URL] || len(got) != 6 {
		t.Fatalf("drained %v: want 6 URLs with %s, none of %s", got, l2.URL, l1.Host)
	}
	// l1's host rests until 10s after its fetch, even across the restart.
	clock.Advance(10 * time.Second)
	if rest := drain(t, f); len(rest) != 2 || rest[0][:8] != l1.URL[:8] {
		t.Fatalf("after the delay: %v, want the two other URLs of %s", rest, l1.Host)
	}
	if !f.Idle() {
		t.Fatal("not idle")
	}
}

// Concurrent workers: every URL exactly once, never two leases on a host.
func TestConcurrentWorkers(t *testing.T) {
	f := open(t, t.TempDir(), Options{Workers: 8, ExitWhenIdle: true, Clock: realClock{}})
	defer f.Close()
	const hosts, per = 50, 40
	for h := range hosts {
		if err := f.AddBatch("seed", uint64(h+1), items(fmt.Sprintf("h%d", h), per)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	busy := map[string]bool{}
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				l, err := f.Next(context.Background())
				if errors.Is(err, ErrEmpty) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if busy[l.Host] {
					t.Errorf("two leases on %s", l.Host)
				}
				busy[l.Host] = true
				seen[l.URL]++
				mu.Unlock()
				mu.Lock()
				busy[l.Host] = false
				mu.Unlock()
				if err := f.Done(l, Result{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != hosts*per {
		t.Fatalf("%d distinct URLs, want %d", len(seen), hosts*per)
	}
	for u, n := range seen {
		if n != 1 {
			t.Fatalf("%s leased %d times", u, n)
		}
	}
}
