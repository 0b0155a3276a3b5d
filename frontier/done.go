package frontier

import (
	"github.com/cockroachdb/pebble/v2"
)

// Done completes a lease: the URL is removed (or, with r.Requeue, put back at
// the tail of its host's queue) and the host's next fetch is scheduled.
func (f *Frontier) Done(l Lease, r Result) error {
	b, err := f.doneLocked(l, r)
	if b == nil || err != nil {
		return err
	}
	return f.syncWait(b)
}

func (f *Frontier) doneLocked(l Lease, r Result) (*pebble.Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return nil, err
	}
	rec, ok := f.mu.leases[l.id]
	if !ok || l.f != f {
		return nil, ErrUnknownLease
	}
	h := rec.host
	now := f.opts.Clock.Now()
	b := f.db.NewBatch()
	b.Set(stateKey(h.name), encodeState(f.mu.sched.after(h, now, r)), nil)
	count, seq, frontKeys := f.mu.count, f.mu.nextSeq, f.mu.frontKeys
	if r.Requeue {
		frontKeys -= int64(f.appendBackLocked(&b, h, rec.e, &seq))
		h.queued = true
	} else {
		b.Delete(rec.e.key(), nil)
		count--
		if rec.e.front {
			frontKeys--
		}
	}
	wait, err := f.commitLocked(b, f.opts.SyncDone, count, frontKeys, seq)
	if err != nil {
		return nil, err
	}
	delete(f.mu.leases, l.id)
	if r.Requeue {
		f.mu.stats.Requeued++
	} else {
		f.mu.stats.Completed++
	}
	if r.Failed {
		f.mu.stats.Failures++
	}
	f.mu.sched.complete(h, now, r)
	if !h.queued {
		f.mu.sched.deactivate(h)
		if len(f.mu.idle) >= idleCacheSize {
			for k := range f.mu.idle { // evict an arbitrary entry
				delete(f.mu.idle, k)
				break
			}
		}
		f.mu.idle[h.name] = idleState{h.next, h.failures}
	}
	f.notifyLocked()
	if wait {
		return b, nil
	}
	return nil, nil
}
