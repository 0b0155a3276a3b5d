package frontier

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestDoneGroupCommit: concurrent Dones share pebble batches, and what
// the groups wrote is exactly the in-memory state (reopen: nothing queued).
func TestDoneGroupCommit(t *testing.T) {
	for _, syncDone := range []bool{false, true} {
		t.Run(fmt.Sprint("SyncDone=", syncDone), func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Workers: 8, SyncDone: syncDone}
			f := open(t, dir, o)
			const hosts, per = 64, 40
			for h := range hosts {
				if err := f.AddBatch("seed", uint64(h+1), items(fmt.Sprintf("h%d", h), per)); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			var mu sync.Mutex
			seen := map[string]int{}
			for range 8 {
				wg.Go(func() {
					for {
						mu.Lock()
						done := len(seen) == hosts*per
						mu.Unlock()
						if done {
							return
						}
						l, ok, err := f.TryNext()
						if err != nil {
							t.Error(err)
							return
						}
						if !ok {
							time.Sleep(50 * time.Microsecond)
							continue
						}
						mu.Lock()
						seen[l.URL]++
						mu.Unlock()
						if err := f.Done(l, Result{}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if ctx.Err() != nil {
				t.Fatal("timeout")
			}
			for u, n := range seen {
				if n != 1 {
					t.Fatalf("%s leased %d times", u, n)
				}
			}
			st := f.Stats()
			t.Logf("%d Dones in %d pebble batches", st.Completed, st.DoneCommits)
			if st.Completed != hosts*per || st.DoneCommits == 0 || st.DoneCommits >= st.Completed {
				t.Fatalf("%d Dones, %d Done batches: no grouping", st.Completed, st.DoneCommits)
			}
			if !f.Idle() {
				t.Fatal("not idle")
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			f = open(t, dir, o)
			defer f.Close()
			if f.Len() != 0 || !f.Idle() {
				t.Fatalf("reopened: Len %d", f.Len())
			}
		})
	}
}

// TestDoneGroupRequeueOverflow: requeued URLs that overflow the in-memory
// head are written to back-queue keys by a Done still in the open group; the
// back queue's next read from pebble must see them (the group is committed
// first), and every URL is completed exactly once.
func TestDoneGroupRequeueOverflow(t *testing.T) {
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	if err := f.AddBatch("s", 1, items("a", 100)); err != nil {
		t.Fatal(err)
	}
	if err := f.AddBatch("s", 2, items("b", 1)); err != nil {
		t.Fatal(err)
	}
	// Hold b's lease all along so that leases never drop to 0 (which would
	// commit the group after each Done).
	var hold Lease
	var held bool
	requeued := map[string]bool{}
	completed := map[string]int{}
	for step := 0; step < 1000 && len(completed) < 100; step++ {
		l, ok, err := f.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("step %d: nothing ready, %d completed, Len %d", step, len(completed), f.Len())
		}
		if l.Host == "b" {
			if held {
				t.Fatal("b leased twice")
			}
			hold, held = l, true
			continue
		}
		if !requeued[l.URL] {
			requeued[l.URL] = true
			if err := f.Done(l, Result{Requeue: true}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		completed[l.URL]++
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(completed) != 100 {
		t.Fatalf("completed %d of 100", len(completed))
	}
	for u, n := range completed {
		if n != 1 {
			t.Fatalf("%s completed %d times", u, n)
		}
	}
	if !held {
		t.Fatal("b never leased")
	}
	if err := f.Done(hold, Result{}); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); !f.Idle() || st.DoneCommits >= st.Completed+st.Requeued {
		t.Fatalf("idle %v, %+v", f.Idle(), st)
	}
}
