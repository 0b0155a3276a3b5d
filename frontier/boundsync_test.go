package frontier

import (
	"fmt"
	"testing"
)

// TestBoundedSync: with SyncDone and MaxLeases, leases plus Dones not yet
// durable never exceed MaxLeases (what a crash can hand out again), a
// narrow crawl's one-at-a-time Dones share fsyncs, and Close leaves every
// completion durable.
func TestBoundedSync(t *testing.T) {
	const max = 8
	dir := t.TempDir()
	f := open(t, dir, Options{SyncDone: true, MaxLeases: max, Factor: 0, FactorSet: true})
	var all []Item
	for h := range 3 {
		all = append(all, items(fmt.Sprintf("h%d", h), 40)...)
	}
	if err := f.Add(all...); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		f.mu.Lock()
		n, u := len(f.mu.leases), f.undurableLocked()
		f.mu.Unlock()
		if n+u > max {
			t.Fatalf("%s: %d leases + %d Dones not durable > MaxLeases %d", when, n, u, max)
		}
	}
	done := 0
	for done < len(all) {
		var held []Lease
		for {
			l, ok, err := f.TryNext()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			held = append(held, l)
			check("after a lease")
		}
		if len(held) == 0 {
			// Gated by Dones not yet durable: the syncer was asked.
			l, err := f.Next(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, l)
		}
		for _, l := range held {
			if err := f.Done(l, Result{}); err != nil {
				t.Fatal(err)
			}
			done++
			check("after a Done")
		}
	}
	st := f.Stats()
	t.Logf("%d Dones, %d fsyncs for them, %d commits", done, st.DoneSyncs, st.DoneCommits)
	if st.DoneSyncs == 0 || st.DoneSyncs > uint64(done)/2 {
		t.Errorf("%d fsyncs for %d Dones: want some, at most one per two Dones", st.DoneSyncs, done)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, Options{})
	defer f.Close()
	if got := drain(t, f); len(got) != 0 {
		t.Errorf("after Close and reopen %d completed URLs handed out again, e.g. %v", len(got), got[:min(3, len(got))])
	}
}

// TestSyncDoneUnbounded: without MaxLeases every SyncDone Done waits for
// its own group's fsync, as before.
func TestSyncDoneUnbounded(t *testing.T) {
	f := open(t, t.TempDir(), Options{SyncDone: true, Factor: 0, FactorSet: true})
	defer f.Close()
	if err := f.Add(items("h", 5)...); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		l, ok, err := f.TryNext()
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		u := f.undurableLocked()
		f.mu.Unlock()
		if u != 0 {
			t.Fatalf("Done %d returned with %d Dones not durable", i, u)
		}
	}
	if st := f.Stats(); st.DoneSyncs != 5 {
		t.Errorf("%d fsyncs for 5 one-at-a-time Dones, want 5", st.DoneSyncs)
	}
}
