package due

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Entry is one candidate URL with its fingerprint
// (internal/fingerprint.URL of the normalised URL).
type Entry struct {
	FP  uint64
	URL string
	// Depth is the URL's link depth (seeds 0), stored with the URL in the
	// log and delivered with it; the DUE does not interpret it. When the
	// same URL is offered at several depths, the first offer wins.
	Depth uint16
	// SeenOnly marks a fingerprint to be recorded in the seen-set (durably,
	// like any entry) but never delivered to the Sink: a later entry with
	// the same fingerprint is then a duplicate. Use it to hand over URLs
	// that were already fetched elsewhere. The first offer of a fingerprint
	// decides: a normal entry buffered before a seen-only one is delivered.
	SeenOnly bool
}

// DUE is a disk-based duplicate URL eliminator. All methods are safe for
// concurrent use. A DUE must be Closed.
type DUE struct {
	opts Options
	dir  string
	fs   vfs.FS
	lock io.Closer

	nextFile atomic.Uint64 // file number allocator
	durable  atomic.Uint64 // records durable in the log (LSN)

	// mergeMu serialises merges, deliveries and manifest writes; man, runs
	// and batchURLs are guarded by it.
	mergeMu   sync.Mutex
	man       manifest
	runs      []*run
	batchURLs map[uint64][]Entry
	runBuf    *bufio.Writer // the run writer's buffer, reused by every merge

	// syncMu is held by the log writer that leads a group commit, and by
	// log rotation. Lock order: mergeMu, syncMu, mu.
	syncMu sync.Mutex
	spare  chunk

	mu struct {
		sync.Mutex
		cond       *sync.Cond
		active     *buffer
		activeLogs []uint64 // logs holding the active buffer, oldest first
		frozen     *buffer
		frozenLogs []uint64 // logs holding the frozen buffer
		frozenHi   uint64   // log floor once the frozen buffer is merged
		spareBuf   *buffer  // the last merged buffer, emptied: the next active one
		log        *logFile
		pend       chunk
		appended   uint64 // records appended to the log (LSN)
		closed     bool
		failed     error
		stats      Stats
	}

	mergeCh chan struct{}
	kickCh  chan struct{}
	closeCh chan struct{}
	wg      sync.WaitGroup

	// lastMergeEnd and lastMergeDur (loop-owned) pace Kick's merges.
	lastMergeEnd time.Time
	lastMergeDur time.Duration
}

// Stats are counters and gauges of a DUE.
type Stats struct {
	Added           uint64 // candidates offered
	DroppedByCache  uint64 // front-cache hits
	DroppedInBuffer uint64 // duplicates of a buffered candidate
	DroppedOnDisk   uint64 // buffered candidates found in the disk set at merge
	Emitted         uint64 // new URLs put into batches
	SeenOnly        uint64 // seen-only entries new to the disk set (recorded, not delivered)
	Batches         uint64 // batches delivered (Deliver returned nil)
	PendingBatches  int    // batches committed but not yet delivered
	DeliverErrors   uint64
	LastDelivered   uint64 // seq of the last delivered batch

	BufferEntries  int // candidates in the active buffer
	MergingEntries int // candidates in the buffer being merged
	EntriesOnDisk  uint64
	BytesOnDisk    int64 // run files
	Runs           int
	LogBytes       int64 // current log file
	MemBytes       int64 // buffers, merge scratch, log chunk and run indexes in RAM

	Merges       uint64
	MergeTime    time.Duration // total
	LastMerge    time.Duration
	MaxMerge     time.Duration
	BytesWritten int64 // run bytes written by merges (write amplification)
}

const chunkWriteSize = 64 << 10

// Open opens or creates the DUE in dir, recovering from any crash: an
// interrupted merge is discarded (its buffer is still in the log and is
// merged again), the log is replayed, and committed batches not yet
// delivered are delivered again before Open returns (a delivery error is
// logged and retried later, not returned).
func Open(dir string, opts Options) (*DUE, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	d := &DUE{
		opts:      opts,
		dir:       dir,
		fs:        opts.FS,
		batchURLs: map[uint64][]Entry{},
		mergeCh:   make(chan struct{}, 1),
		kickCh:    make(chan struct{}, 1),
		closeCh:   make(chan struct{}),
	}
	d.mu.cond = sync.NewCond(&d.mu)
	if err := d.recover(); err != nil {
		d.closeFiles()
		return nil, err
	}
	if err := d.deliverPending(); errors.Is(err, ErrFailed) {
		d.closeFiles()
		return nil, err
	} else if err != nil {
		opts.Logger.Warn("due: delivery after recovery failed", "err", err)
	}
	d.wg.Add(1)
	go pprof.Do(context.Background(), pprof.Labels("due", "merger"), func(context.Context) { d.loop() })
	return d, nil
}

func (d *DUE) path(num uint64, ext string) string {
	return d.fs.PathJoin(d.dir, fmt.Sprintf("%06d.%s", num, ext))
}

// usableLocked returns why the DUE cannot accept work, if it cannot.
func (d *DUE) usableLocked() error {
	if d.mu.closed {
		return ErrClosed
	}
	return d.mu.failed
}

// failLocked makes the DUE refuse further work.
func (d *DUE) failLocked(err error) error {
	if d.mu.failed == nil {
		d.mu.failed = fmt.Errorf("%w: %w", ErrFailed, err)
		d.mu.cond.Broadcast()
	}
	return d.mu.failed
}

func (d *DUE) fail(err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failLocked(err)
}

// Add offers one candidate. It returns nil once the candidate is dropped as
// seen or logged with the durability of Options.Sync; from then on a crash
// cannot lose it. Add blocks while the buffer is full and the previous
// buffer is still being merged (back-pressure).
func (d *DUE) Add(fp uint64, url string) error {
	e := [1]Entry{{FP: fp, URL: url}}
	return d.AddBatch(e[:])
}

// AddBatch offers many candidates with one lock acquisition and (with
// SyncAlways) one fsync. Entries are taken in slice order.
func (d *DUE) AddBatch(es []Entry) error {
	d.mu.Lock()
	for i := range es {
		if err := d.addLocked(&es[i]); err != nil {
			d.mu.Unlock()
			return err
		}
	}
	lsn := d.mu.appended
	d.mu.Unlock()
	if d.opts.Sync == SyncNone {
		return nil
	}
	return d.commit(lsn)
}

func (d *DUE) addLocked(e *Entry) error {
	fp := e.FP
	if err := d.usableLocked(); err != nil {
		return err
	}
	s := &d.mu.stats
	s.Added++
	if d.opts.FrontCache != nil && d.opts.FrontCache.Seen(fp) {
		s.DroppedByCache++
		return nil
	}
	if d.mu.active.len() >= d.opts.BufferEntries {
		if d.mu.active.lookup(fp) >= 0 {
			s.DroppedInBuffer++
			return nil
		}
		for d.mu.active.len() >= d.opts.BufferEntries {
			d.kick()
			d.mu.cond.Wait()
			if err := d.usableLocked(); err != nil {
				return err
			}
		}
	}
	if !d.mu.active.insert(fp) { // one probe: look up and insert
		s.DroppedInBuffer++
		return nil
	}
	d.mu.pend.add(e)
	d.mu.appended++
	if d.mu.active.len() >= d.opts.BufferEntries {
		d.kick()
	}
	if d.opts.Sync == SyncNone && d.mu.pend.len() >= chunkWriteSize {
		err := d.mu.log.write(&d.mu.pend)
		d.mu.pend.reset()
		if err != nil {
			return d.failLocked(err)
		}
		d.durable.Store(d.mu.appended)
	}
	return nil
}

// commit returns once the first lsn log records are written (SyncWrite) or
// fsynced (SyncAlways). Callers arriving while a leader writes join the next
// group.
func (d *DUE) commit(lsn uint64) error {
	if d.durable.Load() >= lsn {
		return nil
	}
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	if d.durable.Load() >= lsn {
		return nil
	}
	d.mu.Lock()
	if err := d.usableLocked(); err != nil {
		d.mu.Unlock()
		return err
	}
	c, lf, target := d.mu.pend, d.mu.log, d.mu.appended
	d.spare.reset()
	d.mu.pend, d.spare = d.spare, chunk{}
	d.mu.Unlock()

	err := lf.write(&c)
	if err == nil && d.opts.Sync == SyncAlways {
		err = lf.f.Sync()
	}
	c.reset()
	d.spare = c
	if err != nil {
		return d.fail(err)
	}
	d.durable.Store(target)
	return nil
}

// kickDuty bounds the merges that Kick starts: after a merge that took t,
// the next kicked merge waits until kickDuty·t has passed, so starvation
// merges take at most 1/(kickDuty+1) of the merger's time however often the
// consumer starves.
const kickDuty = 4

// Verify reads every block of every run and checks its checksum and order;
// it returns an error wrapping ErrCorrupt if one fails. Open checks only the
// run footers and indexes; blocks are otherwise checked when a merge reads
// them.
func (d *DUE) Verify() error {
	d.mergeMu.Lock()
	defer d.mergeMu.Unlock()
	for _, r := range d.runs {
		if err := r.verify(); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns a snapshot of the counters.
func (d *DUE) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.mu.stats
	s.BufferEntries = d.mu.active.len()
	s.MemBytes += d.mu.active.memBytes() + int64(cap(d.mu.pend.buf))
	if d.mu.frozen != nil {
		s.MergingEntries = d.mu.frozen.len()
		// Plus the merge's scratch: sorted copy and radix buffer (8+8
		// bytes) and two flags per entry.
		s.MemBytes += d.mu.frozen.memBytes() + int64(d.mu.frozen.len())*18
	}
	if d.mu.spareBuf != nil {
		s.MemBytes += d.mu.spareBuf.memBytes()
	}
	if d.mu.log != nil {
		s.LogBytes = d.mu.log.size.Load()
	}
	return s
}

// Close stops the merger, writes and fsyncs the log tail and closes the
// files. It does not merge the buffer (it is in the log and is merged after
// the next Open); call Flush first for that.
func (d *DUE) Close() error {
	d.mu.Lock()
	if d.mu.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.mu.closed = true
	d.mu.cond.Broadcast()
	d.mu.Unlock()
	close(d.closeCh)
	d.wg.Wait()

	d.mergeMu.Lock()
	defer d.mergeMu.Unlock()
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	if d.mu.failed == nil && d.mu.log != nil {
		err = d.mu.log.write(&d.mu.pend)
		if err == nil {
			err = d.mu.log.f.Sync()
		}
	}
	if cerr := d.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (d *DUE) closeFiles() error {
	var err error
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	if d.mu.log != nil {
		keep(d.mu.log.f.Close())
		d.mu.log = nil
	}
	for _, r := range d.runs {
		keep(r.f.Close())
	}
	d.runs = nil
	if d.lock != nil {
		keep(d.lock.Close())
		d.lock = nil
	}
	return err
}
