package frontier

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestMaxLeases: with MaxLeases set, no lease is handed out while that many
// are outstanding, released ones included (they are still re-fetched after a
// crash), and a Done lets the next one out, waking a waiting Next without
// reporting starvation.
func TestMaxLeases(t *testing.T) {
	var starved atomic.Int32
	f := open(t, t.TempDir(), Options{MaxLeases: 2, Factor: 0, FactorSet: true, OnStarve: func() { starved.Add(1) }})
	defer f.Close()
	if err := f.Add(append(items("a", 3), items("b", 3)...)...); err != nil {
		t.Fatal(err)
	}
	a, ok, err := f.TryNext()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := f.Release(a, Result{}); err != nil { // a's host may be leased again
		t.Fatal(err)
	}
	_, ok, err = f.TryNext() // b's first URL (a's host is leased again: a third)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := f.TryNext(); err != nil || ok {
		t.Fatalf("a third lease with MaxLeases 2: ok %v, err %v", ok, err)
	}
	got := make(chan Lease, 1)
	go func() {
		l, err := f.Next(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case l := <-got:
		t.Fatalf("Next leased %q past MaxLeases", l.URL)
	case <-time.After(50 * time.Millisecond):
	}
	if err := f.Done(a, Result{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("Next not woken by a Done below MaxLeases")
	}
	if starved.Load() != 0 {
		t.Errorf("OnStarve called %d times while URLs were queued behind MaxLeases", starved.Load())
	}
	if err := (&Options{MaxLeases: -1}).Validate(); err == nil {
		t.Error("MaxLeases -1 accepted")
	}
}
