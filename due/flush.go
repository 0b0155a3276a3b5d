package due

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// kick asks the merger goroutine to merge.
func (d *DUE) kick() {
	select {
	case d.mergeCh <- struct{}{}:
	default:
	}
}

// Flush merges the buffer now and delivers every pending batch. It returns
// the first error, including a Sink error (the batch stays pending and is
// retried at the next merge, tick or Flush).
func (d *DUE) Flush() error {
	d.mu.Lock()
	err := d.usableLocked()
	d.mu.Unlock()
	if err != nil {
		return err
	}
	return d.mergeOnce(true)
}

// mergeOnce freezes the active buffer (if force or full) and merges it,
// then delivers pending batches.
func (d *DUE) mergeOnce(force bool) error {
	d.mergeMu.Lock()
	defer d.mergeMu.Unlock()
	for {
		d.mu.Lock()
		n := d.mu.active.len()
		err := d.usableLocked()
		d.mu.Unlock()
		if err != nil {
			return err
		}
		if n == 0 || (!force && n < d.opts.BufferEntries) {
			break
		}
		if err := d.freeze(); err != nil {
			return err
		}
		if err := d.mergeFrozen(); err != nil {
			return d.fail(err)
		}
		force = false // one forced merge; loop again only if full
	}
	return d.deliverPending()
}

// freeze turns the active buffer into the frozen one and starts a new log.
func (d *DUE) freeze() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked(); err != nil {
		return err
	}
	lf := d.mu.log
	err := lf.write(&d.mu.pend)
	d.mu.pend.reset()
	if err == nil {
		err = lf.f.Sync()
	}
	if err != nil {
		return d.failLocked(err)
	}
	d.durable.Store(d.mu.appended)
	nl, err := d.newLog()
	if err != nil {
		return d.failLocked(err)
	}
	if err := lf.f.Close(); err != nil {
		nl.f.Close()
		return d.failLocked(err)
	}
	d.mu.frozen, d.mu.frozenLogs, d.mu.frozenHi = d.mu.active, d.mu.activeLogs, nl.num
	if d.mu.active = d.mu.spareBuf; d.mu.active == nil {
		d.mu.active = newBuffer(d.opts.BufferEntries)
	}
	d.mu.spareBuf = nil
	d.mu.activeLogs = []uint64{nl.num}
	d.mu.log = nl
	d.mu.cond.Broadcast()
	return nil
}

// newLog creates the next log file and makes its name durable.
func (d *DUE) newLog() (*logFile, error) {
	num := d.nextFile.Add(1) - 1
	f, err := d.fs.Create(d.path(num, "log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	if err := syncDir(d.fs, d.dir); err != nil {
		f.Close()
		return nil, err
	}
	return &logFile{num: num, f: f}, nil
}

// Kick asks for a merge soon because the consumer has run out of work (the
// frontier starves while new URLs sit in the buffer). It never blocks; kicks
// are coalesced and paced by kickDuty. Without it a narrow crawl (one host,
// no delay) waits up to FlushInterval for every new URL.
func (d *DUE) Kick() {
	select {
	case d.kickCh <- struct{}{}:
	default:
	}
}

func (d *DUE) loop() {
	defer d.wg.Done()
	var tick <-chan time.Time
	if d.opts.FlushInterval > 0 {
		t := time.NewTicker(d.opts.FlushInterval)
		defer t.Stop()
		tick = t.C
	}
	var kickT *time.Timer
	var kickC <-chan time.Time
	defer func() {
		if kickT != nil {
			kickT.Stop()
		}
	}()
	for {
		var err error
		merge := false
		select {
		case <-d.closeCh:
			return
		case <-d.mergeCh:
			err = d.timedMerge(false)
		case <-tick:
			err = d.timedMerge(true)
		case <-d.kickCh:
			if kickC != nil {
				break // a paced kick is already due
			}
			d.mu.Lock()
			empty := d.mu.active.len() == 0
			d.mu.Unlock()
			if empty {
				break
			}
			wait := d.lastMergeEnd.Add(kickDuty * d.lastMergeDur).Sub(d.opts.Now())
			if wait <= 0 {
				merge = true
				break
			}
			kickT = time.NewTimer(wait)
			kickC = kickT.C
		case <-kickC:
			kickT, kickC = nil, nil
			merge = true
		}
		if merge {
			err = d.timedMerge(true)
		}
		if err != nil {
			d.opts.Logger.Warn("due: flush or merge failed", "err", err)
		}
	}
}

// timedMerge runs mergeOnce and records its duration for Kick's pacing.
// A merge of an empty buffer is not recorded: it says nothing of the cost.
func (d *DUE) timedMerge(force bool) error {
	d.mu.Lock()
	empty := d.mu.active.len() == 0
	d.mu.Unlock()
	start := d.opts.Now()
	err := d.mergeOnce(force)
	if !empty {
		d.lastMergeEnd = d.opts.Now()
		d.lastMergeDur = d.lastMergeEnd.Sub(start)
	}
	return err
}
