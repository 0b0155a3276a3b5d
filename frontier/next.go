package frontier

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Next blocks until a host may be fetched and leases its next URL. It
// returns ErrClosed once Close is called, ctx.Err() when ctx ends, and — only
// with Options.ExitWhenIdle — ErrEmpty when the frontier is idle. Without
// ExitWhenIdle it blocks on an idle frontier (a Done may yet lead to new
// URLs); callers detect the end of a crawl with Idle.
func (f *Frontier) Next(ctx context.Context) (Lease, error) {
	return f.NextFor(ctx, AnyWorker)
}

// NextFor is Next for worker number worker (0 ≤ worker < Options.Workers):
// under host-affine dispatch it leases the worker's own hosts first (see
// affine.go). With DispatchAny, or worker AnyWorker, it is Next.
func (f *Frontier) NextFor(ctx context.Context, worker int) (Lease, error) {
	waited := false
	var since time.Time // when this call first waited
	var w *waiter       // once this caller has waited (wait.go)
	for {
		f.mu.Lock()
		if w != nil {
			f.runningLocked(w)
		}
		if err := ctx.Err(); err != nil {
			// A caller that stopped takes no lease: it would only fetch
			// into a cancelled context and requeue the URL.
			if w != nil {
				f.leaveLocked(w) // pass on a wake-up it may have taken
			}
			f.mu.Unlock()
			return Lease{}, err
		}
		now := f.opts.Clock.Now()
		l, ok, wake, again, err := f.tryNextLocked(now, worker)
		if ok && !since.IsZero() {
			f.mu.stats.NextWait += now.Sub(since)
		}
		idle := f.idleLocked()
		gated := f.gatedLocked()
		// Starving: at most one URL queued (not leased) per worker. A host
		// busy with a backlog is not starving the crawl: new URLs would
		// only queue behind it (a narrow crawl), so no merge is asked for.
		starving := f.mu.count-int64(len(f.mu.leases)) <= int64(f.opts.Workers)
		wait, timed := false, false
		if !ok && err == nil && !again {
			// About to wait: commit pending Done writes rather than let
			// them sit while nothing happens (with bounded durability the
			// syncer commits them).
			if !f.boundedSync() {
				err = f.flushDoneLocked()
			}
			if since.IsZero() {
				since = now
			}
			if !wake.IsZero() && !waited {
				f.mu.stats.PolitenessWaits++
				waited = true
			}
			if err == nil && !(idle && f.opts.ExitWhenIdle) {
				if w == nil {
					w = newWaiter()
				}
				wait, timed = true, f.enqueueLocked(w, wake)
			}
		}
		if !wait && !again && w != nil {
			f.signalOneLocked() // pass on the wake-up (see waitQueue)
		}
		f.mu.Unlock()
		switch {
		case err != nil:
			return Lease{}, err
		case ok:
			return l, nil
		case again:
			continue
		case idle && f.opts.ExitWhenIdle:
			return Lease{}, ErrEmpty
		}
		var timer <-chan time.Time
		if timed {
			timer = f.opts.Clock.After(wake.Sub(now))
		} else if wake.IsZero() && !gated && starving && f.opts.OnStarve != nil {
			f.opts.OnStarve()
		}
		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.leaveLocked(w)
			f.mu.Unlock()
			return Lease{}, ctx.Err()
		case <-f.closed:
			return Lease{}, ErrClosed
		case <-w.ch:
		case <-timer:
		}
	}
}

// TryNext is Next without blocking: ok is false when no host may be fetched
// at the clock's current time.
func (f *Frontier) TryNext() (l Lease, ok bool, err error) {
	return f.TryNextFor(AnyWorker)
}

// TryNextFor is NextFor without blocking.
func (f *Frontier) TryNextFor(worker int) (l Lease, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tryNextForLocked(worker)
}

// tryNextForLocked is TryNextFor with f.mu held.
func (f *Frontier) tryNextForLocked(worker int) (Lease, bool, error) {
	for {
		l, ok, _, again, err := f.tryNextLocked(f.opts.Clock.Now(), worker)
		if ok || err != nil || !again {
			return l, ok, err
		}
	}
}

// gatedLocked reports whether Options.MaxLeases leases are outstanding,
// counting Dones not yet durable with bounded durability: each may be
// handed out again after a crash.
func (f *Frontier) gatedLocked() bool {
	if f.opts.MaxLeases <= 0 {
		return false
	}
	n := len(f.mu.leases)
	if f.boundedSync() {
		n += f.undurableLocked()
	}
	return n >= f.opts.MaxLeases
}

// maxMovesPerStep bounds the front-to-back moves done under the lock at once.
const maxMovesPerStep = 4096

// tryNextLocked refills the back queues by one bounded step, then leases the
// URL of the ready host that has waited longest. again means the refill
// has more to do and the caller should call again; wake is when the earliest
// waiting host becomes ready. Under host-affine dispatch the host is one of
// worker's own if one is ready, else (all its own hosts waiting, and no
// more hosts to activate) another worker's: a steal.
func (f *Frontier) tryNextLocked(now time.Time, worker int) (l Lease, ok bool, wake time.Time, again bool, err error) {
	if err := f.usableLocked(); err != nil {
		return l, false, wake, false, err
	}
	if f.mu.sched.rules.PausedAll() {
		return l, false, wake, false, nil // the whole crawl is paused (hostrules.go)
	}
	if f.gatedLocked() {
		if f.boundedSync() {
			f.mu.budgetSpent = true
			f.wantSyncLocked(true) // the syncer's end wakes the caller
		}
		return l, false, wake, false, nil // else a Done does
	}
	again, err = f.refillLocked(maxMovesPerStep, f.opts.BackQueues)
	if err != nil {
		return l, false, wake, false, err
	}
	for {
		h, w := f.popLocked(now, worker, false)
		if h == nil && !again && f.mu.undispatched > 0 && f.mu.sched.active() < f.opts.MaxBackQueues {
			// No active host may be fetched now: activate one more.
			n := f.mu.sched.active()
			if again, err = f.refillLocked(maxMovesPerStep, n+1); err != nil {
				return l, false, wake, false, err
			}
			if f.mu.sched.active() > n || again {
				continue
			}
			h, w = f.popLocked(now, worker, false)
		}
		if h == nil && !again {
			h, w = f.popLocked(now, worker, true)
		}
		if h == nil {
			return l, false, w, again, nil
		}
		if len(h.back.buf) == 0 && h.back.more {
			if err := f.flushDoneLocked(); err != nil { // the store must hold requeued URLs
				return l, false, wake, false, err
			}
		}
		if err := h.back.fill(f.db, hostPrefix(h.name), hostChunk); err != nil {
			f.mu.broken = fmt.Errorf("frontier: read failed: %w", err)
			return l, false, wake, false, f.mu.broken
		}
		if len(h.back.buf) == 0 {
			// The back queue turned out empty (after a restart only the
			// host is known): drop the host.
			f.mu.sched.drop(h)
			again = true
			continue
		}
		e := h.back.pop()
		h.queued = !h.back.empty()
		f.mu.leaseID++
		f.mu.leases[f.mu.leaseID] = leaseRec{host: h, e: e}
		f.mu.stats.Leased++
		if f.stealLocked(h, worker) {
			f.mu.stats.Steals++
		}
		return Lease{Item: e.item, f: f, id: f.mu.leaseID}, true, time.Time{}, false, nil
	}
}

// refillLocked is Mercator's back-queue refill: while fewer than target
// hosts are active it takes URLs from the front queues in priority order;
// a URL whose host is active joins that host's back queue, and the first URL
// of an inactive host activates it. A URL that fits in the in-memory head of
// its back queue stays under its front-queue key on disk (no write); only
// the overflow is moved to back-queue keys. It dispatches at most max URLs
// and reports whether there may be more to do.
func (f *Frontier) refillLocked(max, target int) (more bool, err error) {
	s := f.mu.sched
	if s.active() >= target || f.mu.undispatched == 0 {
		return false, nil
	}
	var b *pebble.Batch
	var touched []*hostState
	n, moved := 0, 0
	seq := f.mu.nextSeq
	for n < max && s.active() < target {
		p, ok, err := f.frontHeadLocked()
		if err != nil {
			f.mu.broken = fmt.Errorf("frontier: read failed: %w", err)
			return false, f.mu.broken
		}
		if !ok {
			break
		}
		e := f.mu.front[p].pop()
		f.mu.undispatched--
		n++
		h := s.hosts[e.item.Host]
		if h == nil {
			if h, err = f.activateLocked(e.item.Host); err != nil {
				f.mu.broken = fmt.Errorf("frontier: read failed: %w", err)
				return false, f.mu.broken
			}
		}
		if !h.queued {
			touched = append(touched, h)
			h.queued = true // set for real below
		}
		moved += f.appendBackLocked(&b, h, e, &seq)
	}
	if b != nil {
		if _, err := f.commitLocked(b, false, f.mu.count, f.mu.frontKeys-int64(moved), seq); err != nil {
			return false, err
		}
	}
	for _, h := range touched {
		s.setQueued(h, true)
	}
	f.mu.stats.Moves += uint64(moved)
	return n == max && s.active() < target, nil
}

// appendBackLocked puts e at the tail of h's back queue. If it fits in the
// in-memory head it stays under its current key; otherwise it is moved to a
// back-queue key (seq, which is then incremented) in batch *b, created if
// nil. The first overflow moves the whole head to back-queue keys too, so
// that after a restart the back-queue keys alone hold the host's order. It
// returns the number of front-queue keys removed.
func (f *Frontier) appendBackLocked(b **pebble.Batch, h *hostState, e entry, seq *uint64) (frontRemoved int) {
	if h.back.fits(hostChunk) {
		h.back.appended(e, hostChunk)
		return 0
	}
	if *b == nil {
		*b = f.db.NewBatch()
	}
	var buf []byte
	move := func(m *entry) {
		if m.front {
			frontRemoved++
		}
		(*b).Delete(m.key(), nil)
		buf = encodeEntry(buf[:0], &m.item)
		(*b).Set(hostKey(m.item.Host, *seq), buf, nil)
		m.seq, m.front = *seq, false
		*seq++
	}
	if !h.back.more {
		for i := range h.back.buf {
			move(&h.back.buf[i])
			h.back.cursor = h.back.buf[i].seq
		}
	}
	move(&e)
	h.back.appended(e, hostChunk)
	return frontRemoved
}

// frontHeadLocked returns the highest-priority front queue with an entry in
// memory, reading a chunk from disk when needed.
func (f *Frontier) frontHeadLocked() (int, bool, error) {
	for ; f.mu.minPrio < len(f.mu.front); f.mu.minPrio++ {
		q := &f.mu.front[f.mu.minPrio]
		if len(q.buf) == 0 && q.more {
			if err := f.flushDoneLocked(); err != nil {
				return 0, false, err
			}
		}
		if err := q.fill(f.db, frontPrefix(uint8(f.mu.minPrio)), frontChunk); err != nil {
			return 0, false, err
		}
		if len(q.buf) > 0 {
			return f.mu.minPrio, true, nil
		}
	}
	return 0, false, nil
}
