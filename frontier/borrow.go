package frontier

import (
	"errors"
	"time"
)

// ErrUnknownBorrow is returned by Return for a Borrowed this Frontier did not
// hand out or that was already returned.
var ErrUnknownBorrow = errors.New("frontier: unknown borrow")

// Borrowed is a host's politeness slot taken by Borrow; it must be passed
// to Return exactly once.
type Borrowed struct {
	Host string
	f    *Frontier
	id   uint64
}

// Borrow takes the politeness slot of host (a politeness key, like
// Item.Host) for one request that is not one of its queued URLs: a
// robots.txt redirect from another host to this one (RFC 9309 §2.3.1.2),
// which must not bypass this host's one-request-at-a-time and delay rule.
// It never blocks: ok is false when the host has a fetch in flight or may
// not be fetched yet, and retry is when to ask again. A refused borrower is
// promised the slot (Options.BorrowHold), so a busy host's own URLs cannot
// win every race for it. The host need not have URLs queued (or be known at
// all). When ok, the caller sends its request and calls Return with its
// Result: the host then rests as after a fetch.
func (f *Frontier) Borrow(host string) (b Borrowed, ok bool, retry time.Time, err error) {
	if host == "" {
		return b, false, retry, ErrInvalidItem
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return b, false, retry, err
	}
	now := f.opts.Clock.Now()
	h, active := f.mu.sched.hosts[host]
	if !active {
		if h, err = f.activateLocked(host); err != nil {
			return b, false, retry, err
		}
	}
	ok, retry = f.mu.sched.borrow(h, now)
	if !ok {
		f.mu.stats.BorrowWaits++
		if !active {
			f.retireLocked(h) // inactive again, as before
		}
		return b, false, retry, nil
	}
	f.mu.leaseID++
	f.mu.borrows[f.mu.leaseID] = h
	f.mu.stats.Borrowed++
	return Borrowed{Host: host, f: f, id: f.mu.leaseID}, true, time.Time{}, nil
}

// Return gives back a slot taken by Borrow with the outcome of the request
// (Duration, Failed, CrawlDelay as for Done; Requeue is ignored): the host
// rests before its next fetch as if one of its URLs had been fetched.
func (f *Frontier) Return(b Borrowed, r Result) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return err
	}
	h, ok := f.mu.borrows[b.id]
	if !ok || b.f != f {
		return ErrUnknownBorrow
	}
	delete(f.mu.borrows, b.id)
	now := f.opts.Clock.Now()
	g := &f.mu.group
	if g.b == nil {
		g.b = f.db.NewBatch()
	}
	// The new politeness state joins the open group like a Done's (g.n
	// counts it so the group is committed).
	g.states[h.name] = encodeState(f.mu.sched.after(h, now, r))
	g.n++
	f.mu.sched.complete(h, now, r)
	if !h.queued && h.released == 0 {
		f.retireLocked(h)
	}
	if g.n >= doneGroupMax || len(f.mu.leases) == 0 && len(f.mu.borrows) == 0 {
		if err := f.flushDoneLocked(); err != nil {
			return err
		}
	}
	f.notifyLocked()
	return nil
}

// retireLocked deactivates h, which has no URLs and no fetch in flight,
// keeping its politeness state in the idle cache.
func (f *Frontier) retireLocked(h *hostState) {
	f.mu.sched.deactivate(h)
	if len(f.mu.idle) >= idleCacheSize {
		for k := range f.mu.idle { // evict an arbitrary entry
			delete(f.mu.idle, k)
			break
		}
	}
	f.mu.idle[h.name] = idleState{h.next, h.failures}
}
