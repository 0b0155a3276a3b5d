package frontier

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Add queues seeds or other URLs. It is not idempotent: for seeds that must
// be queued once across restarts use AddBatch("seeds", 1, items).
func (f *Frontier) Add(items ...Item) error { return f.add("", 0, items) }

// Both apply Options.HostBudget (items over it are dropped or lowered in
// priority; the counts are written in the same batch).
//
// AddBatch queues items as one atomic write, exactly once per (source, seq):
// it durably records seq as the last batch applied from source in the same
// pebble batch, and ignores (returning nil) any batch whose seq is not above
// the last one applied. A producer that re-delivers after a crash therefore
// adds nothing twice. source must be non-empty.
func (f *Frontier) AddBatch(source string, seq uint64, items []Item) error {
	if source == "" {
		return fmt.Errorf("frontier: AddBatch with empty source")
	}
	return f.add(source, seq, items)
}

func (f *Frontier) add(source string, seq uint64, items []Item) error {
	for i := range items {
		if items[i].URL == "" || items[i].Host == "" || strings.IndexByte(items[i].Host, 0) >= 0 {
			return fmt.Errorf("%w: %q on host %q", ErrInvalidItem, items[i].URL, items[i].Host)
		}
	}
	b, err := f.addLocked(source, seq, items)
	if b == nil || err != nil {
		return err
	}
	return f.syncWait(b)
}

// addLocked applies the batch and returns it if its fsync is still to be
// waited for.
func (f *Frontier) addLocked(source string, seq uint64, items []Item) (*pebble.Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usableLocked(); err != nil {
		return nil, err
	}
	if source != "" {
		last, err := f.appliedLocked(source)
		if err != nil {
			return nil, err
		}
		if seq <= last {
			f.mu.stats.IgnoredBatches++
			return nil, nil
		}
	}
	b := f.db.NewBatch()
	items, counts, err := f.budgetLocked(b, items)
	if err != nil {
		b.Close()
		f.mu.broken = fmt.Errorf("frontier: read failed: %w", err)
		return nil, f.mu.broken
	}
	var buf []byte
	first := f.mu.nextSeq
	for i := range items {
		buf = encodeEntry(buf[:0], &items[i])
		b.Set(frontKey(items[i].Priority, first+uint64(i)), buf, nil)
	}
	if source != "" {
		b.Set(applyKey(source), encodeU64(seq), nil)
	}
	n := int64(len(items))
	wait, err := f.commitLocked(b, !f.opts.NoSyncAdd, f.mu.count+n, f.mu.frontKeys+n, first+uint64(len(items)))
	if err != nil {
		return nil, err
	}
	f.cacheAdmittedLocked(counts)
	f.mu.undispatched += n
	for i := range items {
		p := items[i].Priority
		f.mu.front[p].appended(entry{seq: first + uint64(i), item: items[i], front: true}, frontChunk)
		f.mu.minPrio = min(f.mu.minPrio, int(p))
	}
	if source != "" {
		f.mu.applied[source] = seq
	}
	f.mu.stats.Added += uint64(len(items))
	f.notifyLocked()
	if wait {
		return b, nil
	}
	return nil, nil
}

// syncWait waits, without the lock, for the fsync of a batch applied by
// commitLocked(sync=true), then releases the batch.
func (f *Frontier) syncWait(b *pebble.Batch) error {
	defer f.syncs.Done()
	err := b.SyncWait()
	b.Close()
	if err != nil {
		f.mu.Lock()
		f.mu.broken = fmt.Errorf("frontier: sync failed: %w", err)
		f.mu.Unlock()
	}
	return err
}

// commitLocked writes the counters into b and applies it, after the open
// group of Done writes (which b's counters include). With sync it does not
// wait for the fsync: wait is then true and the caller must call
// syncWait(b) after releasing the lock; otherwise b is closed. A failed
// write breaks the frontier: every later call returns the error.
func (f *Frontier) commitLocked(b *pebble.Batch, sync bool, count, frontKeys int64, nextSeq uint64) (wait bool, err error) {
	if err := f.flushDoneLocked(); err != nil {
		b.Close()
		return false, err
	}
	f.mu.count, f.mu.frontKeys, f.mu.nextSeq = count, frontKeys, nextSeq
	return f.commitRawLocked(b, sync)
}

// commitRawLocked writes the in-memory counters into b and applies it.
func (f *Frontier) commitRawLocked(b *pebble.Batch, sync bool) (wait bool, err error) {
	b.Set(keyCount, encodeU64(uint64(f.mu.count)), nil)
	b.Set(keyFrontCount, encodeU64(uint64(f.mu.frontKeys)), nil)
	b.Set(keyNextSeq, encodeU64(f.mu.nextSeq), nil)
	if sync {
		err = f.db.ApplyNoSyncWait(b, pebble.Sync)
		if err == nil {
			f.syncs.Add(1)
		} else {
			b.Close()
		}
	} else {
		err = b.Commit(pebble.NoSync)
		b.Close()
	}
	if err != nil {
		f.mu.broken = fmt.Errorf("frontier: write failed: %w", err)
		return false, f.mu.broken
	}
	return sync, nil
}

func (f *Frontier) appliedLocked(source string) (uint64, error) {
	if s, ok := f.mu.applied[source]; ok {
		return s, nil
	}
	v, c, err := f.db.Get(applyKey(source))
	if errors.Is(err, pebble.ErrNotFound) {
		f.mu.applied[source] = 0
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	s, err := decodeU64(v)
	if err == nil {
		f.mu.applied[source] = s
	}
	return s, err
}

func (f *Frontier) usableLocked() error {
	if f.mu.closed {
		return ErrClosed
	}
	if err := f.corrupt.Load(); err != nil && f.mu.broken == nil {
		f.mu.broken = *err
	}
	return f.mu.broken
}

// notifyLocked wakes the callers waiting for a change, if any took the
// current channel since the last notification.
func (f *Frontier) notifyLocked() {
	f.signalAllLocked()
	f.changedLocked()
}

// changedLocked wakes WaitIdle (and other watchers of a change), not the
// callers waiting in Next.
func (f *Frontier) changedLocked() {
	if !f.mu.armed {
		return
	}
	close(f.mu.changed)
	f.mu.changed = make(chan struct{})
	f.mu.armed = false
}
