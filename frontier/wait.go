package frontier

import "time"

// waitQueue holds the Next callers that found nothing to lease. Only one
// of them holds a timer, for the earliest wake it has seen (a waiter that
// sees an earlier wake takes the role over): when every waiter set a timer
// for the same earliest wake, a politeness-bound crawl with 64 workers woke
// all 64 at once for one ready host (simweb crawl: 175,577 timer wake-ups
// for 10,716 leases). A caller that leaves Next after waiting (lease, error,
// idle) wakes the next waiter, so that hosts that became ready together at
// the holder's wake are leased one after the other. A change (Add, Done)
// still wakes every waiter: waking only one (tried) left the one-host crawl
// waiting for that one goroutine to be scheduled on a loaded machine
// (docs/bench/onehost.md, branch h-cpu).
type waitQueue struct {
	q       []*waiter
	holder  *waiter   // the waiter whose timer is for timerAt
	timerAt time.Time // when the holder's timer fires
}

type waiter struct {
	ch     chan struct{} // buffered(1): a wake-up is never lost
	queued bool
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

// enqueueLocked registers w as waiting; it reports whether w should wait
// with a timer for wake (zero wake: no timer).
func (f *Frontier) enqueueLocked(w *waiter, wake time.Time) bool {
	wq := &f.mu.waiters
	if !w.queued {
		w.queued = true
		wq.q = append(wq.q, w)
	}
	if wake.IsZero() {
		return false
	}
	if wq.holder == nil || wq.holder == w || wake.Before(wq.timerAt) {
		wq.holder, wq.timerAt = w, wake
		return true
	}
	return false
}

// signalAllLocked wakes every queued waiter.
func (f *Frontier) signalAllLocked() {
	for len(f.mu.waiters.q) > 0 {
		f.signalOneLocked()
	}
}

// signalOneLocked wakes the longest-waiting queued waiter, if any.
func (f *Frontier) signalOneLocked() {
	wq := &f.mu.waiters
	if len(wq.q) == 0 {
		return
	}
	w := wq.q[0]
	wq.q[0] = nil
	wq.q = wq.q[1:]
	if len(wq.q) == 0 {
		wq.q = nil // do not keep a drifting backing array
	}
	w.queued = false
	f.mu.stats.Wakeups++
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// runningLocked is called by a waiter that has woken (by a wake-up, a timer
// or neither, after again): it is no longer queued, a wake-up sent to it is
// consumed by the attempt it is about to make, and it gives up the timer
// role, which its next enqueue re-takes if it still has the earliest wake.
func (f *Frontier) runningLocked(w *waiter) {
	f.unqueueLocked(w)
	select {
	case <-w.ch:
	default:
	}
	if f.mu.waiters.holder == w {
		f.mu.waiters.holder = nil
	}
}

func (f *Frontier) unqueueLocked(w *waiter) {
	if !w.queued {
		return
	}
	wq := &f.mu.waiters
	for i, x := range wq.q {
		if x == w {
			wq.q = append(wq.q[:i], wq.q[i+1:]...)
			break
		}
	}
	w.queued = false
}

// leaveLocked is called by a waiter leaving Next without a new attempt
// (its context ended): a wake-up it received goes to the next waiter.
func (f *Frontier) leaveLocked(w *waiter) {
	f.runningLocked(w)
	f.signalOneLocked()
}
