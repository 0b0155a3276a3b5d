package frontier

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Stage moves exactly the chosen hosts' queued URLs (front and back
// queues) to the staging area in order, the rest stays queued and
// fetchable; Staged/Unstage page through it; all of it survives a reopen.
func TestStageHandoff(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(epoch)
	f := open(t, dir, Options{Clock: clock})
	var all []Item
	for i := range 300 {
		h := fmt.Sprintf("h%d.test", i%7)
		all = append(all, Item{URL: fmt.Sprintf("http://%s/p%03d", h, i), Host: h})
	}
	if err := f.Add(all...); err != nil {
		t.Fatal(err)
	}
	// Dispatch some URLs to back queues, then return the leases.
	for range 5 {
		clock.Advance(time.Second)
		l, ok, err := f.TryNext()
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := f.Done(l, Result{Requeue: true}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Second)
	l, ok, err := f.TryNext()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := f.Stage(func(string) bool { return true }); err == nil {
		t.Fatal("Stage with a lease outstanding succeeded")
	}
	if err := f.Done(l, Result{Requeue: true}); err != nil {
		t.Fatal(err)
	}
	moved := func(h string) bool { return h == "h1.test" || h == "h4.test" }
	n, err := f.Stage(moved)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, it := range all {
		if moved(it.Host) {
			want = append(want, it.URL)
		}
	}
	if n != len(want) || f.Len() != len(all)-len(want) {
		t.Fatalf("staged %d (want %d), %d left queued (want %d)", n, len(want), f.Len(), len(all)-len(want))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, Options{Clock: clock})
	defer f.Close()
	var got []string
	var mark uint64
	for {
		st, err := f.Staged(mark, 17)
		if err != nil {
			t.Fatal(err)
		}
		if len(st) == 0 {
			break
		}
		for _, s := range st {
			got = append(got, s.URL)
		}
		mark = st[len(st)-1].Seq
		if err := f.Unstage(mark); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("staged URLs differ: got %d, want %d", len(got), len(want))
	}
	if st, _ := f.Staged(0, 10); len(st) != 0 {
		t.Fatalf("%d staged URLs left after Unstage", len(st))
	}
	// Everything else is still fetched, none of the moved hosts.
	var rest []string
	for f.Len() > 0 {
		clock.Advance(time.Second)
		l, ok, err := f.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("nothing ready with %d queued", f.Len())
		}
		if moved(l.Host) {
			t.Fatalf("moved host's URL %s handed out", l.URL)
		}
		rest = append(rest, l.URL)
		if err := f.Done(l, Result{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(rest) != len(all)-len(want) {
		t.Fatalf("fetched %d, want %d", len(rest), len(all)-len(want))
	}
	for _, u := range rest {
		if strings.Contains(u, "h1.test") || strings.Contains(u, "h4.test") {
			t.Fatal(u)
		}
	}
}

// AddAdmitted counts a hand-off's already fetched URLs under the budget
// exactly once per (source, seq), in AddBatch's sequence, across a reopen.
func TestAddAdmitted(t *testing.T) {
	dir := t.TempDir()
	o := Options{HostBudget: Budget{Hard: 5}}
	f := open(t, dir, o)
	if err := f.AddAdmitted("hs/a/1", 1, map[string]int{"trap": 3, "ok": 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.AddAdmitted("hs/a/1", 1, map[string]int{"trap": 3}); err != nil { // re-delivered: ignored
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, o)
	t.Cleanup(func() { f.Close() }) // the last one opened
	for site, want := range map[string]int{"trap": 3, "ok": 1, "none": 0} {
		if n, err := f.Admitted(site); err != nil || n != want {
			t.Fatalf("Admitted(%s) = %d, %v; want %d", site, n, err, want)
		}
	}
	// Batch 1 was applied: AddBatch seq 1 of the same source is ignored;
	// seq 2 is admitted up to the budget (2 of 4).
	if err := f.AddBatch("hs/a/1", 1, items("trap", 4)); err != nil {
		t.Fatal(err)
	}
	if n := f.Len(); n != 0 {
		t.Fatalf("re-delivered seq queued %d URLs", n)
	}
	if err := f.AddBatch("hs/a/1", 2, items("trap", 4)); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Admitted("trap"); n != 5 || f.Len() != 2 {
		t.Fatalf("after AddBatch: admitted %d, queued %d; want 5, 2", n, f.Len())
	}
	if err := f.AddAdmitted("hs/a/1", 2, map[string]int{"trap": 1}); err != nil { // not after seq 2
		t.Fatal(err)
	}
	if n, _ := f.Admitted("trap"); n != 5 {
		t.Fatalf("stale AddAdmitted counted: %d", n)
	}
	if err := f.AddAdmitted("", 3, nil); err == nil {
		t.Error("AddAdmitted with an empty source succeeded")
	}
	// Handed over: the count is forgotten, for good.
	if n, err := f.ForgetAdmitted(func(site string) bool { return site == "trap" }); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if n, _ := f.Admitted("trap"); n != 0 {
		t.Fatalf("after ForgetAdmitted: %d", n)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = open(t, dir, o)
	if n, _ := f.Admitted("trap"); n != 0 {
		t.Fatalf("after ForgetAdmitted and a reopen: %d", n)
	}
	if n, _ := f.Admitted("ok"); n != 1 {
		t.Fatalf("ForgetAdmitted(trap) changed ok's count: %d", n)
	}
}
