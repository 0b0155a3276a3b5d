package frontier

import (
	"context"
	"testing"
	"time"
)

// TestMostDelayed: after fetches of different durations the hosts wait
// Factor × duration; MostDelayed lists the queued, unleased hosts longest
// wait first and leaves out a host whose fetch is in flight.
func TestMostDelayed(t *testing.T) {
	clock := NewManualClock(epoch)
	f := open(t, t.TempDir(), Options{Clock: clock, Factor: 10, MinDelay: 0, MaxDelay: time.Hour})
	defer f.Close()
	ctx := context.Background()
	for _, h := range []string{"a.test", "b.test", "c.test", "d.test"} {
		if err := f.Add(items(h, 3)...); err != nil {
			t.Fatal(err)
		}
	}
	took := map[string]time.Duration{"a.test": 100 * time.Millisecond, "b.test": 300 * time.Millisecond, "c.test": 200 * time.Millisecond}
	var dLease Lease
	for range 4 {
		l, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := took[l.Host]
		if !ok {
			dLease = l // d.test stays leased
			continue
		}
		if err := f.Done(l, Result{Duration: d}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(500 * time.Millisecond)
	got := f.MostDelayed(10)
	want := []struct {
		host string
		wait time.Duration
	}{{"b.test", 2500 * time.Millisecond}, {"c.test", 1500 * time.Millisecond}, {"a.test", 500 * time.Millisecond}}
	if len(got) != len(want) {
		t.Fatalf("MostDelayed = %+v, want %d hosts", got, len(want))
	}
	for i, w := range want {
		if got[i].Host != w.host || got[i].Wait != w.wait || got[i].Leased || !got[i].Queued {
			t.Errorf("MostDelayed[%d] = %+v, want %s waiting %v", i, got[i], w.host, w.wait)
		}
	}
	if top := f.MostDelayed(1); len(top) != 1 || top[0].Host != "b.test" {
		t.Errorf("MostDelayed(1) = %+v", top)
	}
	if err := f.Done(dLease, Result{}); err != nil {
		t.Fatal(err)
	}
}
