package frontier

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// affineOpts: every host rests exactly rest after each fetch.
func affineOpts(workers int, dispatch string, rest time.Duration) Options {
	return Options{Workers: workers, Dispatch: dispatch, Factor: 0, FactorSet: true,
		MinDelay: rest, MaxDelay: rest, MaxBackQueues: 1000}
}

// ownedHosts returns per hosts host names owned by each of w workers.
func ownedHosts(t *testing.T, f *Frontier, w, per int) [][]string {
	t.Helper()
	out := make([][]string, w)
	for i := 0; ; i++ {
		h := fmt.Sprintf("h%d.example", i)
		if o := f.mu.sched.ownerOf(h); len(out[o]) < per {
			out[o] = append(out[o], h)
		}
		full := true
		for _, hs := range out {
			full = full && len(hs) == per
		}
		if full {
			return out
		}
	}
}

func mustTryNextFor(t *testing.T, f *Frontier, w int) (Lease, bool) {
	t.Helper()
	l, ok, err := f.TryNextFor(w)
	if err != nil {
		t.Fatal(err)
	}
	return l, ok
}

// Every worker is handed only its own hosts while one of them is ready.
func TestAffineBinding(t *testing.T) {
	const W = 4
	clock := NewManualClock(epoch)
	o := affineOpts(W, DispatchHostAffine, time.Second)
	o.Clock = clock
	f := open(t, t.TempDir(), o)
	defer f.Close()
	owned := ownedHosts(t, f, W, 3)
	for _, hs := range owned {
		for _, h := range hs {
			if err := f.Add(items(h, 5)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	fetched := 0
	for round := 0; fetched < W*3*5; round++ {
		for w := range W {
			l, ok := mustTryNextFor(t, f, w)
			if !ok {
				t.Fatalf("round %d: worker %d got nothing", round, w)
			}
			if !slices.Contains(owned[w], l.Host) {
				t.Fatalf("round %d: worker %d leased %s, not one of its hosts %v", round, w, l.Host, owned[w])
			}
			if err := f.Done(l, Result{}); err != nil {
				t.Fatal(err)
			}
			fetched++
		}
		clock.Advance(time.Second)
	}
	if s := f.Stats(); s.Steals != 0 || s.Queued != 0 {
		t.Errorf("steals %d, queued %d: want 0, 0", s.Steals, s.Queued)
	}
}

// A worker steals another's ready host only when its own are all waiting;
// under DispatchAny the same frontier hands out the oldest host instead.
func TestAffineStealsOnlyWhenOwnWait(t *testing.T) {
	for _, d := range []string{DispatchAny, DispatchHostAffine} {
		t.Run(d, func(t *testing.T) {
			clock := NewManualClock(epoch)
			o := affineOpts(2, d, time.Second)
			o.Clock = clock
			f := open(t, t.TempDir(), o)
			defer f.Close()
			owned := ownedHosts(t, f, 2, 2)
			a, b, c := owned[0][0], owned[1][0], owned[1][1]
			// b and c first: they are the oldest hosts, which DispatchAny prefers.
			for _, h := range []string{b, c, a} {
				if err := f.Add(items(h, 2)...); err != nil {
					t.Fatal(err)
				}
			}
			l, _ := mustTryNextFor(t, f, 0)
			if want := map[string]string{DispatchAny: b, DispatchHostAffine: a}[d]; l.Host != want {
				t.Fatalf("worker 0 leased %s, want %s", l.Host, want)
			}
			if d == DispatchAny {
				return
			}
			if err := f.Done(l, Result{}); err != nil { // a rests 1 s
				t.Fatal(err)
			}
			if s := f.Stats(); s.Steals != 0 {
				t.Fatalf("steals %d before any steal", s.Steals)
			}
			l0, _ := mustTryNextFor(t, f, 0) // own a waits: steal the oldest ready, b
			l1, _ := mustTryNextFor(t, f, 1) // its own c
			if l0.Host != b || l1.Host != c {
				t.Fatalf("leased %s and %s, want %s (stolen) and %s", l0.Host, l1.Host, b, c)
			}
			if _, ok := mustTryNextFor(t, f, 1); ok {
				t.Fatal("worker 1 leased a host while a waits and b, c are in flight")
			}
			if s := f.Stats(); s.Steals != 1 {
				t.Fatalf("steals %d, want 1", s.Steals)
			}
		})
	}
}

// NextFor blocks while the worker's only host waits out its delay (no host
// to steal) and counts the wait as idle time.
func TestAffineNextWait(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		o := affineOpts(2, DispatchHostAffine, time.Second)
		f, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		a := ownedHosts(t, f, 2, 1)[0][0]
		if err := f.Add(items(a, 2)...); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range 2 {
			l, err := f.NextFor(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Done(l, Result{}); err != nil {
				t.Fatal(err)
			}
			if s := f.Stats(); s.NextWait != time.Duration(i)*time.Second {
				t.Errorf("after lease %d: NextWait %v, want %v", i, s.NextWait, time.Duration(i)*time.Second)
			}
		}
	})
}

// affineRun drives a frontier with a random (seeded) sequence of adds,
// leases by random workers, completions (some requeued) and clock steps,
// checking every lease against a model: one fetch per host at a time, never
// before the host's delay is over, and — host-affine — a steal only when
// none of the worker's own hosts was ready; a worker finding nothing means
// no host at all was ready. It returns the URLs fetched (completed without
// requeue), in any order, each checked to be fetched once.
func affineRun(t *testing.T, seed uint64, dispatch string) []string {
	const W, rest = 4, 100 * time.Millisecond
	rng := rand.New(rand.NewPCG(seed, 7))
	// ops draws the operations and the URLs added, independently of the
	// frontier's answers: both dispatch modes get the same adds.
	ops := rand.New(rand.NewPCG(seed, 8))
	clock := NewManualClock(epoch)
	o := affineOpts(W, dispatch, rest)
	o.Clock = clock
	o.BackQueues = 1 + int(seed%4)
	f := open(t, t.TempDir(), o)
	defer f.Close()
	type mhost struct {
		queued int
		leased bool
		next   time.Time
	}
	hosts := map[string]*mhost{}
	var leases []Lease
	fetched := map[string]bool{}
	nURL := 0
	readyFor := func(w int) (own, any bool) {
		for name, h := range hosts {
			if h.queued > 0 && !h.leased && !h.next.After(clock.Now()) {
				any = true
				own = own || f.mu.sched.ownerOf(name) == w
			}
		}
		return own, any
	}
	lease := func(step int) {
		w := rng.IntN(W)
		own, any := readyFor(w)
		l, ok := mustTryNextFor(t, f, w)
		if !ok {
			if any {
				t.Fatalf("step %d: worker %d got nothing while a host was ready", step, w)
			}
			return
		}
		h := hosts[l.Host]
		switch {
		case h.leased:
			t.Fatalf("step %d: %s leased twice", step, l.Host)
		case h.next.After(clock.Now()):
			t.Fatalf("step %d: %s leased %v before its delay ends", step, l.Host, h.next.Sub(clock.Now()))
		case dispatch == DispatchHostAffine && f.mu.sched.ownerOf(l.Host) != w && own:
			t.Fatalf("step %d: worker %d stole %s while one of its own hosts was ready", step, w, l.Host)
		}
		h.leased = true
		h.queued--
		leases = append(leases, l)
	}
	done := func(step int) {
		i := rng.IntN(len(leases))
		l := leases[i]
		leases = slices.Delete(leases, i, i+1)
		requeue := rng.IntN(10) == 0
		if err := f.Done(l, Result{Requeue: requeue}); err != nil {
			t.Fatal(err)
		}
		h := hosts[l.Host]
		h.leased, h.next = false, clock.Now().Add(rest)
		if requeue {
			h.queued++
			return
		}
		if fetched[l.URL] {
			t.Fatalf("step %d: %s fetched twice", step, l.URL)
		}
		fetched[l.URL] = true
	}
	for step := range 600 {
		op, hostN, n := ops.IntN(100), ops.IntN(12), 1+ops.IntN(4)
		switch {
		case op < 15 && step < 400:
			host := fmt.Sprintf("h%d", hostN)
			if hosts[host] == nil {
				hosts[host] = &mhost{}
			}
			var it []Item
			for range n {
				it = append(it, Item{URL: fmt.Sprintf("http://%s/%d", host, nURL), Host: host})
				nURL++
			}
			if err := f.Add(it...); err != nil {
				t.Fatal(err)
			}
			hosts[host].queued += len(it)
		case op < 60:
			lease(step)
		case op < 85 && len(leases) > 0:
			done(step)
		default:
			clock.Advance(time.Duration(rng.IntN(60)) * time.Millisecond)
		}
	}
	for len(fetched) < nURL { // drain
		for len(leases) > 0 {
			done(-1)
		}
		clock.Advance(rest)
		for range W {
			lease(-1)
		}
	}
	if s := f.Stats(); s.Queued != 0 || s.InFlight != 0 {
		t.Fatalf("after the drain: %d queued, %d in flight", s.Queued, s.InFlight)
	}
	if dispatch == DispatchAny && f.Stats().Steals != 0 {
		t.Fatalf("%d steals under DispatchAny", f.Stats().Steals)
	}
	out := make([]string, 0, len(fetched))
	for u := range fetched {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Host-affine dispatch fetches exactly what DispatchAny fetches on the same
// random sequence: every URL added, once — and both stay polite.
func TestAffineMatchesAny(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			anyURLs := affineRun(t, seed, DispatchAny)
			aff := affineRun(t, seed, DispatchHostAffine)
			if !slices.Equal(anyURLs, aff) {
				t.Fatalf("fetched sets differ: any %d URLs, host-affine %d", len(anyURLs), len(aff))
			}
		})
	}
}
