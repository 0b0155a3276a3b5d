package frontier

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// OnStarve is called when Next is about to wait with no host ready or waiting
// out a delay, and not when a host is only waiting for its delay.
func TestOnStarve(t *testing.T) {
	clock := NewManualClock(epoch)
	var starved atomic.Int64
	f := open(t, t.TempDir(), Options{Clock: clock, MaxDelay: time.Second, OnStarve: func() { starved.Add(1) }})
	defer f.Close()
	if err := f.Add(items("a", 2)...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The only host is leased: a second Next starves.
	ctx2, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.Next(ctx2)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for starved.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Next waited on a leased host without calling OnStarve")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	// Done with a delay: the host waits out its delay; that is not starving.
	if err := f.Done(l, Result{Duration: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	before := starved.Load()
	got := make(chan Lease, 1)
	go func() {
		l, err := f.Next(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(20 * time.Millisecond)
	clock.Advance(time.Second)
	l = <-got
	if n := starved.Load() - before; n != 0 {
		t.Errorf("OnStarve called %d times while the host waited out its delay", n)
	}
	if err := f.Done(l, Result{}); err != nil {
		t.Fatal(err)
	}
}
