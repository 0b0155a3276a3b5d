package frontier

// Bounded durability (SyncDone with MaxLeases): a Done does not wait for
// its fsync. Instead the frontier counts the Dones not yet durable and
// treats each as a lease still outstanding — after a crash its URL is
// handed out again, as a lease's is — so that leases plus such Dones never
// exceed MaxLeases. A syncer goroutine makes them durable in groups
// (one fsync for many Dones), started when ¾ of the budget is used and
// whenever Next finds the budget spent (earlier syncs cost a one-host
// crawl more than the stalls they save: docs/bench/onehost.md). A crash
// therefore repeats at most MaxLeases fetches, as with a Done that waits
// for its own fsync, at a fraction of the fsyncs: a narrow crawl, where
// Dones come one at a time, no longer pays one per page.

// boundedSync reports whether Dones are made durable by the syncer.
func (f *Frontier) boundedSync() bool { return f.opts.SyncDone && f.opts.MaxLeases > 0 }

// doneWaits reports whether Done waits for its own group's fsync.
func (f *Frontier) doneWaits() bool { return f.opts.SyncDone && !f.boundedSync() }

// undurableLocked is the number of Dones not known to be durable.
func (f *Frontier) undurableLocked() int { return int(f.mu.doneSeq - f.mu.durableDones) }

// wantSyncLocked asks the syncer for a sync if Dones wait for one and
// enough of the budget is used (or all, with force).
func (f *Frontier) wantSyncLocked(force bool) {
	u := f.undurableLocked()
	if u == 0 || !force && 4*(len(f.mu.leases)+u) < 3*f.opts.MaxLeases {
		return
	}
	select {
	case f.syncReq <- struct{}{}:
	default:
	}
}

// syncer makes Dones durable on request until Close.
func (f *Frontier) syncer() {
	defer f.syncerDone.Done()
	for {
		select {
		case <-f.closed:
			return
		case <-f.syncReq:
		}
		f.mu.Lock()
		gen := f.mu.group.gen
		if f.mu.group.n == 0 {
			gen = f.mu.committedGen
		}
		f.mu.Unlock()
		if err := f.waitDurable(gen); err != nil {
			// broken or closed: Next and Done report it
			return
		}
	}
}
