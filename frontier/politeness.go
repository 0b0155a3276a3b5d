package frontier

import (
	"container/heap"
	"fmt"
	"time"
)

// This file is the deterministic core of the frontier: the politeness
// scheduler. It knows hosts, their next allowed fetch time, whether they have
// URLs queued and whether a fetch is in flight; it knows nothing of URLs,
// storage, goroutines or the clock — time comes in as an argument. It is not
// safe for concurrent use; the Frontier shell guards it with its mutex.

// hostState is one active host: a host with a back queue or a lease.
type hostState struct {
	name     string
	next     time.Time // earliest time of the next fetch
	failures int       // consecutive failed fetches
	leased   bool      // a fetch is in flight (a lease or a borrow)
	queued   bool      // its back queue is non-empty
	// hold is set while a borrower (Frontier.Borrow) is promised the host's
	// slot: from hold on the borrower gets it although next, pushed back by
	// Options.BorrowHold, keeps the back queue waiting. Zero otherwise.
	hold   time.Time
	wanted bool // a borrower asked during a fetch: promise it the next slot
	// released counts the host's leases that Release ended (the host may
	// be leased again) but Done has not: their URLs are still the host's.
	released int
	parked   bool   // a host rule (hostrules.go) keeps it out of the heap
	idx      int    // index in the heap, -1 when absent
	order    uint64 // activation order: breaks ties in the heap
	owner    int    // the worker bound to the host under host-affine dispatch (affine.go)

	back headQueue // the back queue's in-memory head (owned by the shell)
}

// scheduler keeps the active hosts and a heap of those that have URLs and no
// fetch in flight, keyed by their next allowed fetch time.
type scheduler struct {
	opts   *Options
	hosts  map[string]*hostState
	heap   hostHeap
	order  uint64
	leased int
	rules  *HostRules // run-time pauses, blocks, overrides (hostrules.go)
	parked int        // active hosts that are parked
}

func newScheduler(o *Options) *scheduler {
	return &scheduler{opts: o, hosts: make(map[string]*hostState)}
}

// activate makes name an active host with the given politeness state (as
// persisted when it was last active). It has no URLs yet.
func (s *scheduler) activate(name string, next time.Time, failures int) *hostState {
	if _, ok := s.hosts[name]; ok {
		panic(fmt.Sprintf("frontier: host %q activated twice", name))
	}
	s.order++
	h := &hostState{name: name, next: next, failures: failures, idx: -1, order: s.order, owner: s.ownerOf(name)}
	s.hosts[name] = h
	s.park(h)
	return h
}

// deactivate forgets an idle host (no URLs, no lease).
func (s *scheduler) deactivate(h *hostState) {
	if h.leased || h.queued || h.idx >= 0 || h.released > 0 {
		panic(fmt.Sprintf("frontier: deactivating busy host %q", h.name))
	}
	delete(s.hosts, h.name)
	if h.parked {
		s.parked--
	}
}

// setQueued records whether h's back queue has URLs.
func (s *scheduler) setQueued(h *hostState, queued bool) {
	h.queued = queued
	s.fix(h)
}

// fix puts h in the heap iff it has URLs and no lease.
func (s *scheduler) fix(h *hostState) {
	want := h.queued && !h.leased && !h.parked
	switch {
	case want && h.idx < 0:
		heap.Push(&s.heap, h)
	case !want && h.idx >= 0:
		heap.Remove(&s.heap, h.idx)
	case want:
		heap.Fix(&s.heap, h.idx)
	}
}

// pop leases the host that has waited longest past its next allowed time,
// if one is ready at now. Otherwise it returns the time the earliest host
// becomes ready (zero if no host has URLs without a lease).
func (s *scheduler) pop(now time.Time) (h *hostState, wake time.Time) {
	if len(s.heap) == 0 {
		return nil, time.Time{}
	}
	top := s.heap[0]
	if top.next.After(now) {
		return nil, top.next
	}
	heap.Pop(&s.heap)
	top.leased = true
	top.hold = time.Time{} // the borrower did not come in time
	s.leased++
	return top, time.Time{}
}

// borrow gives h's slot to one request that is not from its back queue (a
// robots.txt redirect hop from another host) if no fetch of h is in flight
// and h may be fetched at now, or a borrower was promised the slot from now
// on. Otherwise it returns when to ask again and, so that the back queue
// cannot win every race for the slot, promises the slot to the next
// borrower: a host with URLs waiting keeps its slot free for
// Options.BorrowHold after its next allowed time; a host whose fetch is in
// flight does so after that fetch's delay (complete).
func (s *scheduler) borrow(h *hostState, now time.Time) (ok bool, retry time.Time) {
	switch {
	case h.parked:
		return false, now.Add(s.opts.BorrowPoll)
	case h.leased:
		h.wanted = true
		return false, now.Add(s.opts.BorrowPoll)
	case !now.Before(h.next) || !h.hold.IsZero() && !now.Before(h.hold):
		h.leased, h.hold, h.wanted = true, time.Time{}, false
		s.leased++
		s.fix(h)
		return true, time.Time{}
	case !h.hold.IsZero():
		return false, h.hold
	case h.queued:
		h.hold, h.next = h.next, h.next.Add(s.opts.BorrowHold)
		s.fix(h)
		return false, h.hold
	}
	return false, h.next
}

// peek returns the next allowed time of the host that pop would lease
// first, or the zero time if no host has URLs without a lease.
func (s *scheduler) peek() time.Time {
	if len(s.heap) == 0 {
		return time.Time{}
	}
	return s.heap[0].next
}

// complete ends h's lease at now with result r and sets its next allowed
// fetch time.
func (s *scheduler) complete(h *hostState, now time.Time, r Result) {
	if !h.leased {
		panic(fmt.Sprintf("frontier: completing host %q without a lease", h.name))
	}
	h.leased = false
	s.leased--
	h.next, h.failures = s.after(h, now, r)
	if h.wanted {
		// A borrower asked during the fetch. Only the back queue competes
		// for the slot: without URLs queued, nothing to hold it against.
		h.wanted = false
		if h.queued {
			h.hold, h.next = h.next, h.next.Add(s.opts.BorrowHold)
		}
	}
	s.fix(h)
}

// after is the politeness state h would have after completing a fetch at now
// with result r: its next allowed fetch time and consecutive failures.
func (s *scheduler) after(h *hostState, now time.Time, r Result) (time.Time, int) {
	failures := 0
	if r.Failed {
		failures = h.failures + 1
	}
	return now.Add(politeDelay(s.rules.optionsFor(h.name, s.opts), r, failures)), failures
}

// drop ends h's lease without a fetch and forgets h: its back queue turned
// out to be empty.
func (s *scheduler) drop(h *hostState) {
	h.leased, h.queued = false, false
	s.leased--
	if h.released == 0 { // else the last released lease's Done retires it
		s.deactivate(h)
	}
}

// ready counts the hosts that could be leased at now.
func (s *scheduler) ready(now time.Time) (ready, waiting int) {
	for _, h := range s.heap {
		if h.next.After(now) {
			waiting++
		} else {
			ready++
		}
	}
	return ready, waiting
}

// politeDelay is the wait after a fetch that took r.Duration before the host
// may be fetched again: Factor × duration clamped to [MinDelay, MaxDelay],
// never less than the (capped) Crawl-delay, and after failures never less
// than the exponential back-off.
func politeDelay(o *Options, r Result, failures int) time.Duration {
	d := time.Duration(o.Factor * float64(r.Duration))
	d = max(d, o.MinDelay)
	d = min(d, o.MaxDelay)
	d = max(d, min(r.CrawlDelay, o.MaxCrawlDelay))
	if failures > 0 {
		d = max(d, backoff(o, failures))
	}
	return d
}

// backoff is FailureBackoff × 2^(failures-1), capped at MaxFailureBackoff.
func backoff(o *Options, failures int) time.Duration {
	b := o.FailureBackoff
	for i := 1; i < failures && b < o.MaxFailureBackoff; i++ {
		b *= 2
	}
	return min(b, o.MaxFailureBackoff)
}

// hostHeap orders hosts by next allowed time, then by activation order.
type hostHeap []*hostState

func (q hostHeap) Len() int { return len(q) }
func (q hostHeap) Less(i, j int) bool {
	if !q[i].next.Equal(q[j].next) {
		return q[i].next.Before(q[j].next)
	}
	return q[i].order < q[j].order
}
func (q hostHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx = i
	q[j].idx = j
}
func (q *hostHeap) Push(x any) {
	h := x.(*hostState)
	h.idx = len(*q)
	*q = append(*q, h)
}
func (q *hostHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.idx = -1
	*q = old[:len(old)-1]
	return h
}
