package frontier

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"time"
)

// Dispatch modes (Options.Dispatch).
const (
	// DispatchAny lets any free worker take the ready host that has waited
	// longest: the workers share every back queue.
	DispatchAny = "any"
	// DispatchHostAffine binds each host to one worker, as Mercator binds
	// each back queue to one thread: host → worker by a hash of the host
	// (Item.Host) modulo Options.Workers. NextFor(w) leases w's own ready
	// hosts first; only when every one of them is waiting out its
	// politeness delay (or w has none) and no more hosts can be activated
	// does it take — steal — another worker's ready host (Stats.Steals).
	// The point of the binding is locality: each host's links are seen by
	// one worker, hence by one per-worker front cache.
	DispatchHostAffine = "host-affine"
)

// AnyWorker is the worker number of Next and TryNext: a caller bound to no
// worker, which takes any ready host whatever the dispatch.
const AnyWorker = -1

func validateDispatch(d string) error {
	if d != DispatchAny && d != DispatchHostAffine {
		return fmt.Errorf("Dispatch %q: want %q or %q", d, DispatchAny, DispatchHostAffine)
	}
	return nil
}

// HostWorker is the worker of workers bound to host under host-affine
// dispatch: FNV-1a of the host modulo workers, fixed so that the binding
// survives restarts (and the study's simulator binds hosts alike).
func HostWorker(host string, workers int) int {
	if workers <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(host))
	return int(h.Sum32() % uint32(workers))
}

// ownerOf is the worker bound to host under host-affine dispatch.
func (s *scheduler) ownerOf(host string) int { return HostWorker(host, s.opts.Workers) }

// affine reports whether worker is bound to its own hosts.
func (f *Frontier) affine(worker int) bool {
	return f.opts.Dispatch == DispatchHostAffine && worker >= 0 && f.opts.Workers > 1
}

// popLocked leases the host that NextFor(worker) should fetch now, if any,
// and otherwise says when to look again. Without steal, an affine worker
// gets only one of its own hosts; with steal, any ready host (the caller
// asks for a steal only once its own hosts are all waiting and no host can
// be activated). Unbound callers always pop the global heap.
func (f *Frontier) popLocked(now time.Time, worker int, steal bool) (*hostState, time.Time) {
	s := f.mu.sched
	if steal || !f.affine(worker) {
		return s.pop(now)
	}
	var best *hostState
	for _, h := range s.heap { // O(hosts in the heap): a few per worker
		if h.owner != worker || h.next.After(now) {
			continue
		}
		if best == nil || s.heap.lessHost(h, best) {
			best = h
		}
	}
	if best == nil {
		// Wake at the earliest host's time: a steal may be possible then.
		return nil, s.peek()
	}
	heap.Remove(&s.heap, best.idx)
	best.leased = true
	best.hold = time.Time{} // as in pop: the borrower did not come in time
	s.leased++
	return best, time.Time{}
}

// stealLocked reports whether leasing h to worker is a steal.
func (f *Frontier) stealLocked(h *hostState, worker int) bool {
	return f.affine(worker) && h.owner != worker
}

// lessHost is the heap's order on two hosts.
func (hostHeap) lessHost(a, b *hostState) bool {
	if !a.next.Equal(b.next) {
		return a.next.Before(b.next)
	}
	return a.order < b.order
}
