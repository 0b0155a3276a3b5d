package frontier

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// TestModel runs random operation sequences against a Frontier and a
// simple in-memory model, checking after every step: no URL is lost or
// invented, never two leases on one host, no lease before the host's
// politeness delay (computed independently by the model), per-host FIFO
// within a priority, AddBatch idempotence, and liveness — when TryNext finds
// nothing, no host with queued URLs is free and ready. Restarts are part of
// the sequence: leased URLs come back after one.
func TestModel(t *testing.T) {
	seeds, ops := 20, 400
	if os.Getenv("SEXTANT_LONG") != "" {
		seeds, ops = 200, 1000
	}
	if os.Getenv("MSEED") != "" {
		var sd int
		fmt.Sscan(os.Getenv("MSEED"), &sd)
		runModel(t, uint64(sd), 2000)
		return
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, uint64(seed), ops) })
	}
}

type modelHost struct {
	next     time.Time
	failures int
	leased   bool
}

type modelURL struct {
	item     Item
	order    int  // addition order, for the FIFO check
	unorderd bool // requeued or restarted: excluded from the FIFO check
}

func runModel(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 42))
	dir := t.TempDir()
	clock := NewManualClock(epoch)
	o := Options{
		Clock:             clock,
		BackQueues:        1 + rng.IntN(3),
		MaxBackQueues:     1000,
		Factor:            10,
		MinDelay:          time.Duration(rng.IntN(2)) * 5 * time.Millisecond,
		MaxDelay:          200 * time.Millisecond,
		MaxCrawlDelay:     100 * time.Millisecond,
		FailureBackoff:    50 * time.Millisecond,
		MaxFailureBackoff: 400 * time.Millisecond,
	}
	f, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { f.Close() }()

	hosts := map[string]*modelHost{}
	queued := map[string]*modelURL{} // by URL (URLs are unique)
	leases := map[string]Lease{}     // by URL
	lastOrder := map[string]int{}    // host/prio → order of the last ordered lease
	nURL, batchSeq := 0, uint64(0)
	var batches [][]Item

	delay := func(h *modelHost, r Result) time.Duration {
		d := max(time.Duration(10*float64(r.Duration)), o.MinDelay)
		d = min(d, o.MaxDelay)
		d = max(d, min(r.CrawlDelay, o.MaxCrawlDelay))
		if h.failures > 0 {
			b := o.FailureBackoff
			for i := 1; i < h.failures; i++ {
				b = min(2*b, o.MaxFailureBackoff)
			}
			d = max(d, b)
		}
		return d
	}
	check := func(step int, what string) {
		t.Helper()
		if got, want := f.Len(), len(queued); got != want {
			t.Fatalf("step %d (%s): Len %d, model %d", step, what, got, want)
		}
		if got, want := f.InFlight(), len(leases); got != want {
			t.Fatalf("step %d (%s): InFlight %d, model %d", step, what, got, want)
		}
	}
	lease := func(step int, l Lease) {
		t.Helper()
		now := clock.Now()
		u, ok := queued[l.URL]
		if !ok {
			t.Fatalf("step %d: leased %s, which is not queued", step, l.URL)
		}
		h := hosts[l.Host]
		if h.leased {
			t.Fatalf("step %d: second lease on %s", step, l.Host)
		}
		if now.Before(h.next) {
			t.Fatalf("step %d: %s leased at %v, before %v", step, l.Host, now.Sub(epoch), h.next.Sub(epoch))
		}
		if u.item != l.Item {
			t.Fatalf("step %d: lease item %+v, added %+v", step, l.Item, u.item)
		}
		key := fmt.Sprint(l.Host, "/", l.Priority)
		if !u.unorderd {
			if u.order < lastOrder[key] {
				t.Fatalf("step %d: %s leased after a later URL of its host and priority", step, l.URL)
			}
			lastOrder[key] = u.order
		}
		h.leased = true
		if os.Getenv("MSEED") != "" && l.Host == os.Getenv("MHOST") {
			t.Logf("step %d lease %s p%d order %d unordered %v", step, l.URL, l.Priority, u.order, u.unorderd)
		}
		delete(queued, l.URL)
		leases[l.URL] = l
	}
	for step := range ops {
		switch op := rng.IntN(100); {
		case op < 25: // add a batch (sometimes re-deliver an old one)
			if len(batches) > 0 && rng.IntN(5) == 0 {
				old := uint64(1 + rng.IntN(len(batches)))
				if err := f.AddBatch("due", old, batches[old-1]); err != nil {
					t.Fatal(err)
				}
				check(step, "replay")
				continue
			}
			var b []Item
			for range 1 + rng.IntN(5) {
				host := fmt.Sprintf("h%d", rng.IntN(6))
				nURL++
				it := Item{URL: fmt.Sprintf("http://%s/%d", host, nURL), Host: host,
					Priority: uint8(rng.IntN(3)), Depth: uint16(rng.IntN(5))}
				b = append(b, it)
				queued[it.URL] = &modelURL{item: it, order: nURL}
				if os.Getenv("MSEED") != "" && host == os.Getenv("MHOST") {
					t.Logf("step %d add %s p%d", step, it.URL, it.Priority)
				}
				if hosts[host] == nil {
					hosts[host] = &modelHost{}
				}
			}
			batchSeq++
			batches = append(batches, b)
			if err := f.AddBatch("due", batchSeq, b); err != nil {
				t.Fatal(err)
			}
		case op < 60: // next
			l, ok, err := f.TryNext()
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				lease(step, l)
				break
			}
			now := clock.Now()
			for _, u := range queued {
				h := hosts[u.item.Host]
				if !h.leased && !now.Before(h.next) {
					t.Fatalf("step %d: TryNext found nothing but %s is free and ready with %s queued",
						step, u.item.Host, u.item.URL)
				}
			}
		case op < 85: // done
			urls := slices.Sorted(maps.Keys(leases))
			for _, url := range urls[min(len(urls), rng.IntN(4)):] {
				l := leases[url]
				r := Result{Duration: time.Duration(rng.IntN(30)) * time.Millisecond}
				if rng.IntN(5) == 0 {
					r.CrawlDelay = time.Duration(rng.IntN(300)) * time.Millisecond
				}
				r.Failed = rng.IntN(5) == 0
				r.Requeue = rng.IntN(10) == 0
				if err := f.Done(l, r); err != nil {
					t.Fatal(err)
				}
				h := hosts[l.Host]
				h.leased = false
				if r.Failed {
					h.failures++
				} else {
					h.failures = 0
				}
				h.next = clock.Now().Add(delay(h, r))
				delete(leases, url)
				if r.Requeue {
					queued[url] = &modelURL{item: l.Item, unorderd: true}
				}
				break
			}
		case op < 99:
			clock.Advance(time.Duration(rng.IntN(100)) * time.Millisecond)
		default: // restart: leases come back
			if os.Getenv("MSEED") != "" {
				t.Logf("step %d restart", step)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if f, err = Open(dir, o); err != nil {
				t.Fatal(err)
			}
			for _, url := range slices.Sorted(maps.Keys(leases)) {
				l := leases[url]
				queued[url] = &modelURL{item: l.Item, unorderd: true}
				hosts[l.Host].leased = false
				delete(leases, url)
			}
		}
		check(step, "op")
	}
	// Drain: everything queued comes out exactly once.
	for _, url := range slices.Sorted(maps.Keys(leases)) {
		l := leases[url]
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
		hosts[l.Host].leased = false
		delete(leases, url)
	}
	for range 10000 {
		if len(queued) == 0 {
			break
		}
		clock.Advance(time.Second)
		for {
			l, ok, err := f.TryNext()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if _, ok := queued[l.URL]; !ok {
				t.Fatalf("drain: %s not queued", l.URL)
			}
			delete(queued, l.URL)
			if err := f.Done(l, Result{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(queued) != 0 || !f.Idle() {
		t.Fatalf("after drain: %d URLs left in the model, frontier idle %v", len(queued), f.Idle())
	}
}
