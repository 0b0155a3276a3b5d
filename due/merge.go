package due

import (
	"bufio"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// mergeFrozen merges the frozen buffer into the disk set. Called with
// mergeMu held. Steps, each of which a crash may interrupt:
//
//  1. sort the buffered fingerprints; probe every run (blocks whose range
//     holds no buffered key are not read); the rest are new;
//  2. write a new run: the new fingerprints merged with the newest runs
//     chosen by the tiering rule; fsync;
//  3. read the frozen logs in order and write the URLs of new entries
//     (except seen-only ones), in arrival order, as batch file with the
//     next seq; fsync;
//  4. fsync the directory, then replace the MANIFEST (new runs, log floor
//     past the frozen logs, batch pending) — the commit point;
//  5. delete the replaced runs and the frozen logs.
//
// Before step 4 completes, recovery deletes the new files and replays the
// logs; after it, recovery finds the batch pending and delivers it.
func (d *DUE) mergeFrozen() error {
	start := d.opts.Now()
	d.mu.Lock()
	fb, logs, hi := d.mu.frozen, d.mu.frozenLogs, d.mu.frozenHi
	d.mu.Unlock()

	fresh, dups, err := d.freshFingerprints(fb.fps)
	if err != nil {
		return err
	}
	m := d.man.clone()
	var created []string
	cleanup := func() {
		for _, p := range created {
			_ = d.fs.Remove(p)
		}
	}
	k, newRun, written, err := d.writeMergedRun(&m, fresh, &created)
	if err != nil {
		cleanup()
		return err
	}
	closeNew := func() {
		if newRun != nil {
			newRun.f.Close()
		}
		cleanup()
	}
	var urls []Entry
	var seenOnly int
	if len(fresh) > 0 {
		var err error
		urls, seenOnly, err = d.collectURLs(fb, fresh, logs)
		if err != nil {
			closeNew()
			return err
		}
	}
	if len(urls) > 0 {
		num := d.nextFile.Add(1) - 1
		p := d.path(num, "batch")
		created = append(created, p)
		if err := writeFileSynced(d.fs, p, encodeBatch(m.nextSeq, urls)); err != nil {
			closeNew()
			return err
		}
		m.pending = append(m.pending, batchMeta{seq: m.nextSeq, num: num, count: uint64(len(urls))})
		d.batchURLs[m.nextSeq] = urls
		m.nextSeq++
	}
	m.logFloor = hi
	m.nextFile = d.nextFile.Load()
	err = syncDir(d.fs, d.dir)
	if err == nil {
		err = writeFileAtomic(d.fs, d.dir, manifestName, m.encode())
	}
	if err != nil {
		// The rename may or may not have happened: only a reopen can tell.
		closeNew()
		return err
	}
	// Committed.
	old := slices.Clone(d.runs[k:])
	d.runs = d.runs[:k:k]
	if newRun != nil {
		d.runs = append(d.runs, newRun)
	}
	d.man = m
	for _, r := range old {
		r.f.Close()
		_ = d.fs.Remove(d.path(r.num, "run"))
	}
	for _, n := range logs {
		_ = d.fs.Remove(d.path(n, "log"))
	}
	dur := d.opts.Now().Sub(start)

	d.mu.Lock()
	s := &d.mu.stats
	s.DroppedOnDisk += dups
	s.Emitted += uint64(len(urls))
	s.SeenOnly += uint64(seenOnly)
	s.Merges++
	s.MergeTime += dur
	s.LastMerge = dur
	s.MaxMerge = max(s.MaxMerge, dur)
	s.BytesWritten += written
	d.setDiskStatsLocked()
	d.mu.frozen = nil
	d.mu.cond.Broadcast()
	d.mu.Unlock()

	// Emptied outside d.mu (clearing a full table takes a while), then
	// kept for the next freeze.
	fb.reset()
	d.mu.Lock()
	d.mu.spareBuf = fb
	d.mu.Unlock()
	return nil
}

// freshFingerprints sorts a copy of fps and drops those already in a run;
// dups counts the dropped ones.
func (d *DUE) freshFingerprints(fps []uint64) (fresh []uint64, dups uint64, err error) {
	q := slices.Clone(fps)
	sortU64(q)
	found := make([]bool, len(q))
	var br blockReader
	for _, r := range d.runs {
		if err := r.markFound(&br, q, found); err != nil {
			return nil, 0, err
		}
	}
	fresh = q[:0]
	for i, v := range q {
		if !found[i] {
			fresh = append(fresh, v)
		}
	}
	return fresh, uint64(len(q) - len(fresh)), nil
}

// writeMergedRun writes fresh merged with the runs from k on (the runs
// RunRatio and MaxRuns fold into it) as a new run, opens it and records it
// in m. With no fresh value it writes nothing and k is len(d.runs). The
// new file's path is appended to *created, for the caller to remove on
// failure.
func (d *DUE) writeMergedRun(m *manifest, fresh []uint64, created *[]string) (k int, newRun *run, written int64, err error) {
	k = len(d.runs)
	if len(fresh) == 0 {
		return k, nil, 0, nil
	}
	acc := uint64(len(fresh))
	for k > 0 && (d.runs[k-1].count <= uint64(d.opts.RunRatio)*acc || k+1 > d.opts.MaxRuns) {
		k--
		acc += d.runs[k].count
	}
	num := d.nextFile.Add(1) - 1
	p := d.path(num, "run")
	*created = append(*created, p)
	size, count, err := d.writeRun(p, fresh, d.runs[k:])
	if err != nil {
		return 0, nil, 0, err
	}
	if count != acc {
		return 0, nil, 0, fmt.Errorf("due: merge wrote %d values, want %d", count, acc)
	}
	if newRun, err = openRun(d.fs, p, num, count, size); err != nil {
		return 0, nil, 0, err
	}
	m.runs = append(m.runs[:k], runMeta{num: num, count: count, size: size})
	return k, newRun, size, nil
}

// setDiskStatsLocked refreshes the gauges derived from the runs and the
// manifest. Called with mergeMu and mu held.
func (d *DUE) setDiskStatsLocked() {
	s := &d.mu.stats
	s.EntriesOnDisk, s.BytesOnDisk, s.Runs = 0, 0, len(d.runs)
	var idx int64
	for _, r := range d.runs {
		s.EntriesOnDisk += r.count
		s.BytesOnDisk += r.size
		idx += int64(cap(r.blocks)) * 24
	}
	s.MemBytes = idx
	s.PendingBatches = len(d.man.pending)
	s.LastDelivered = d.man.delivered
}

// writeRun writes the union of fresh and the runs (all disjoint) to path.
func (d *DUE) writeRun(path string, fresh []uint64, runs []*run) (int64, uint64, error) {
	// A 1 MiB buffer per merge was a fresh allocation to zero, many times a
	// second when a narrow crawl's frontier kicks small merges.
	if d.runBuf == nil {
		d.runBuf = bufio.NewWriterSize(nil, runBufSize)
	}
	w, err := createRun(d.fs, path, d.opts.BlockEntries, d.runBuf)
	if err != nil {
		return 0, 0, err
	}
	defer d.runBuf.Reset(nil)
	type head struct {
		it  *runIter
		v   uint64
		ok  bool
		err error
	}
	heads := make([]*head, len(runs))
	for i, r := range runs {
		h := &head{it: &runIter{r: r}}
		h.v, h.ok, h.err = h.it.next()
		if h.err != nil {
			w.abort()
			return 0, 0, h.err
		}
		heads[i] = h
	}
	j := 0
	for {
		var best *head
		for _, h := range heads {
			if h.ok && (best == nil || h.v < best.v) {
				best = h
			}
		}
		var v uint64
		switch {
		case best == nil && j == len(fresh):
			size, err := w.finish()
			return size, w.count, err
		case best == nil || (j < len(fresh) && fresh[j] < best.v):
			v = fresh[j]
			j++
		default:
			v = best.v
			best.v, best.ok, best.err = best.it.next()
			if best.err != nil {
				w.abort()
				return 0, 0, best.err
			}
		}
		if err := w.add(v); err != nil {
			w.abort()
			return 0, 0, err
		}
	}
}

// collectURLs reads the frozen logs and returns the entries of the fresh
// fingerprints in arrival order, without the seen-only ones (counted).
func (d *DUE) collectURLs(fb *buffer, fresh []uint64, logs []uint64) ([]Entry, int, error) {
	isNew := make([]bool, fb.len())
	for _, fp := range fresh {
		i := fb.lookup(fp)
		if i < 0 {
			return nil, 0, fmt.Errorf("due: fingerprint %#x missing from buffer", fp)
		}
		isNew[i] = true
	}
	urls := make([]Entry, 0, len(fresh))
	rec, seenOnly := 0, 0
	for _, n := range logs {
		_, torn, err := readLog(d.fs, d.path(n, "log"), func(r *record) error {
			i := rec
			if i >= len(fb.fps) || fb.fps[i] != r.fp {
				i = fb.lookup(r.fp)
			}
			rec++
			if i >= 0 && isNew[i] {
				isNew[i] = false
				if r.seenOnly {
					seenOnly++
				} else {
					urls = append(urls, Entry{FP: r.fp, URL: string(r.url), Depth: r.depth})
				}
			}
			return nil
		})
		if err == nil && torn {
			err = fmt.Errorf("%w: log %06d ends in a torn chunk", ErrCorrupt, n)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if len(urls)+seenOnly != len(fresh) {
		return nil, 0, fmt.Errorf("%w: logs %v hold %d of %d new URLs", ErrCorrupt, logs, len(urls)+seenOnly, len(fresh))
	}
	return urls, seenOnly, nil
}

// deliverPending hands committed batches to the Sink in seq order and
// records each success durably. Called with mergeMu held.
func (d *DUE) deliverPending() error {
	for len(d.man.pending) > 0 {
		p := d.man.pending[0]
		urls, ok := d.batchURLs[p.seq]
		if !ok {
			b, err := readFile(d.fs, d.path(p.num, "batch"))
			if err != nil {
				return d.fail(fmt.Errorf("due: batch %d: %w", p.seq, err))
			}
			if urls, err = decodeBatch(b, p.seq, p.count); err != nil {
				return d.fail(err)
			}
		}
		if err := d.opts.Sink.Deliver(p.seq, urls); err != nil {
			d.mu.Lock()
			d.mu.stats.DeliverErrors++
			d.mu.Unlock()
			// While the Sink is down, pending batches live in their files
			// only, so RAM does not grow with the backlog.
			clear(d.batchURLs)
			return fmt.Errorf("due: deliver batch %d: %w", p.seq, err)
		}
		m := d.man.clone()
		m.pending = m.pending[1:]
		m.delivered = p.seq
		m.nextFile = d.nextFile.Load()
		if err := writeFileAtomic(d.fs, d.dir, manifestName, m.encode()); err != nil {
			return d.fail(err)
		}
		d.man = m
		delete(d.batchURLs, p.seq)
		_ = d.fs.Remove(d.path(p.num, "batch"))
		d.mu.Lock()
		d.mu.stats.Batches++
		d.setDiskStatsLocked()
		d.mu.Unlock()
	}
	return nil
}

func writeFileSynced(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
