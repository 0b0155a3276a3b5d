package frontier

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Done writes are group-committed: a Done changes the frontier in memory at
// once and adds its writes (delete the URL or move it back, the host's
// politeness state) to the open group, a pebble batch shared by consecutive
// Done calls. The group is committed, with the counters and each host's
// latest state written once, when it holds doneGroupMax Dones; when no lease
// is outstanding; before any other write or any read of queue keys from
// pebble (so the store and the in-memory queues never disagree); when Next
// is about to wait; and on Close. With SyncDone a Done returns only once its
// group is durable: the first waiter commits the group with an fsync and
// Dones arriving meanwhile join the next group (classic group commit).
// Without SyncDone a crash may lose the open group and the unsynced tail of
// pebble's log: those URLs are handed out again (at-least-once), never lost.
const doneGroupMax = 256

// doneGroup is the open group of Done writes.
type doneGroup struct {
	b      *pebble.Batch     // nil while empty
	n      int               // Dones in the group
	states map[string][]byte // host → latest encoded politeness state
	gen    uint64            // this group's generation, from 1 (groups commit in order)
}

// Done completes a lease: the URL is removed (or, with r.Requeue, put back at
// the tail of its host's queue) and the host's next fetch is scheduled.
func (f *Frontier) Done(l Lease, r Result) error {
	gen, err := f.doneLocked(l, r)
	if err != nil || !f.doneWaits() {
		return err
	}
	return f.waitDurable(gen)
}

func (f *Frontier) doneLocked(l Lease, r Result) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return 0, err
	}
	rec, ok := f.mu.leases[l.id]
	if !ok || l.f != f {
		return 0, ErrUnknownLease
	}
	h := rec.host
	now := f.opts.Clock.Now()
	g := &f.mu.group
	if g.b == nil {
		g.b = f.db.NewBatch()
	}
	if rec.released {
		// Release scheduled the host already: only the URL's fate and
		// the host's current state are left to write.
		g.states[h.name] = encodeState(h.next, h.failures)
		h.released--
	} else {
		g.states[h.name] = encodeState(f.mu.sched.after(h, now, r))
	}
	if r.Requeue {
		seq := f.mu.nextSeq
		f.mu.frontKeys -= int64(f.appendBackLocked(&g.b, h, rec.e, &seq))
		f.mu.nextSeq = seq
		h.queued = true
		f.mu.stats.Requeued++
	} else {
		g.b.Delete(rec.e.key(), nil)
		f.mu.count--
		if rec.e.front {
			f.mu.frontKeys--
		}
		f.mu.stats.Completed++
	}
	g.n++
	f.mu.doneSeq++
	delete(f.mu.leases, l.id)
	if rec.released {
		f.mu.sched.fix(h) // a requeued URL may make the host ready
	} else {
		if r.Failed {
			f.mu.stats.Failures++
		}
		f.mu.sched.complete(h, now, r)
	}
	// A released lease's Done that only removes its URL changes nothing a
	// waiting Next could lease: Release scheduled the host, and with
	// bounded durability the Done counts against MaxLeases as the lease
	// did. Waking every waiter for it was a one-host crawl's herd.
	quiet := rec.released && !r.Requeue && f.boundedSync()
	if !h.queued && !h.leased && h.released == 0 {
		f.retireLocked(h) // a back-queue slot for another host
		quiet = false
	}
	gen := g.gen
	// Without SyncDone, commit a full group, and commit at once when no
	// lease is outstanding, so that once every Done has returned with no
	// lease left nothing is pending (Stage and other readers of the store
	// rely on it). With SyncDone every Done returns only after its group
	// is committed (waitDurable), which gives the same guarantee.
	if !f.doneWaits() && (g.n >= doneGroupMax || len(f.mu.leases) == 0 && len(f.mu.borrows) == 0) {
		if err := f.flushDoneLocked(); err != nil {
			return 0, err
		}
	}
	if f.boundedSync() {
		f.wantSyncLocked(false)
	}
	if quiet && !f.idleLocked() {
		f.changedLocked()
	} else {
		f.notifyLocked()
	}
	return gen, nil
}

// Release ends a lease's hold on its host before its Done: the host's next
// fetch is scheduled from r (Duration, CrawlDelay, Failed, as Done would)
// and another URL of the host may be leased from then on, while this
// lease stays outstanding — its URL stays in the store and is handed out
// again after a crash — until Done, which then only removes or requeues
// it (r's other fields are not used again). A worker calls it as soon as
// a response is read, so that the host's next fetch does not wait for the
// page's processing and durable completion (Mercator releases a host when
// its fetch ends). Release writes nothing; a second Release of a lease is
// a no-op.
func (f *Frontier) Release(l Lease, r Result) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, err := f.releaseLocked(l, r)
	if h != nil {
		f.notifyLocked()
	}
	return err
}

// ReleaseNext is Release followed by TryNextFor(worker), under one lock.
// When the new lease is of l's own host (a narrow crawl's next page), the
// release left nothing another caller could lease, so the callers waiting
// in Next are not woken: in a one-host crawl, Release followed by
// TryNextFor woke every idle worker at every page only for each to find
// the host leased again.
func (f *Frontier) ReleaseNext(l Lease, r Result, worker int) (next Lease, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, err := f.releaseLocked(l, r)
	if err != nil {
		return Lease{}, false, err
	}
	next, ok, err = f.tryNextForLocked(worker)
	if h != nil && !(ok && f.mu.leases[next.id].host == h) {
		f.notifyLocked()
	}
	return next, ok, err
}

// releaseLocked is Release's work; it returns l's host if the release
// changed it (nil if l was released before).
func (f *Frontier) releaseLocked(l Lease, r Result) (*hostState, error) {
	if err := f.usableLocked(); err != nil {
		return nil, err
	}
	rec, ok := f.mu.leases[l.id]
	if !ok || l.f != f {
		return nil, ErrUnknownLease
	}
	if rec.released {
		return nil, nil
	}
	rec.released = true
	f.mu.leases[l.id] = rec
	h := rec.host
	h.released++
	if r.Failed {
		f.mu.stats.Failures++
	}
	f.mu.sched.complete(h, f.opts.Clock.Now(), r)
	return h, nil
}

// flushDoneLocked commits the open group (without fsync) if it holds any
// Done. Every other write and every read of queue keys calls it first.
func (f *Frontier) flushDoneLocked() error {
	g := &f.mu.group
	if g.n == 0 {
		return nil
	}
	b := g.b
	for host, st := range g.states {
		b.Set(stateKey(host), st, nil)
	}
	clear(g.states)
	g.b, g.n = nil, 0
	f.mu.committedGen = g.gen
	g.gen++
	f.mu.stats.DoneCommits++
	_, err := f.commitRawLocked(b, false)
	return err
}

// waitDurable returns once the Done group gen is durable (SyncDone).
func (f *Frontier) waitDurable(gen uint64) error {
	for {
		f.mu.Lock()
		if err := f.mu.broken; err != nil {
			f.mu.Unlock()
			return err
		}
		if f.mu.durableGen >= gen {
			f.mu.Unlock()
			return nil
		}
		if ch := f.mu.syncing; ch != nil {
			f.mu.Unlock()
			<-ch // another Done leads; then check again
			continue
		}
		if f.mu.closed {
			f.mu.Unlock()
			return ErrClosed
		}
		// Lead: commit the open group (if gen is still in it) and sync the
		// log, which also makes every earlier commit durable.
		if err := f.flushDoneLocked(); err != nil {
			f.mu.Unlock()
			return err
		}
		target, targetDones := f.mu.committedGen, f.mu.doneSeq
		b := f.db.NewBatch()
		b.LogData(nil, nil) // pebble skips an empty batch, fsync included
		if err := f.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
			b.Close()
			f.mu.broken = fmt.Errorf("frontier: sync failed: %w", err)
			f.mu.Unlock()
			return f.mu.broken
		}
		f.syncs.Add(1)
		f.mu.stats.DoneSyncs++
		ch := make(chan struct{})
		f.mu.syncing = ch
		f.mu.Unlock()
		err := f.syncWait(b)
		f.mu.Lock()
		if err == nil {
			f.mu.durableGen = max(f.mu.durableGen, target)
			f.mu.durableDones = max(f.mu.durableDones, targetDones)
			if f.boundedSync() && f.mu.budgetSpent {
				// MaxLeases counts Dones not yet durable: a Next that
				// found it spent may lease now. Otherwise the sync
				// changed nothing a waiter could use (a one-host
				// crawl's idle workers were woken at every sync).
				f.mu.budgetSpent = false
				f.notifyLocked()
			}
		}
		f.mu.syncing = nil
		close(ch)
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
}
