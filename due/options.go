package due

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sextant-crawler/sextant/internal/logging"
)

// Sentinel errors.
var (
	// ErrCorrupt marks a DUE file (manifest, run, log or batch) that fails
	// its checksum or structure checks. Test with errors.Is. A DUE never
	// treats a corrupt file as empty.
	ErrCorrupt = errors.New("due: corrupt file")
	// ErrClosed is returned by calls on a closed DUE.
	ErrClosed = errors.New("due: closed")
	// ErrFailed wraps the I/O error that stopped a DUE: after a failed merge
	// or log write the DUE refuses further work; Close it and Open again,
	// which recovers from the files (an interrupted merge is redone).
	ErrFailed = errors.New("due: failed")
)

// Cache is the front cache consulted before the buffer (see package cache).
// Seen reports whether fp was seen recently, and records it; a hit drops the
// candidate at once. It must be safe for concurrent use if the DUE is used
// concurrently; it is called with the DUE's buffer lock held.
type Cache interface {
	Seen(fp uint64) bool
}

// Sink receives the new URLs: the frontier hand-off. Deliver is called
// with batches in strictly increasing seq order, each batch in arrival order;
// an entry carries its URL, fingerprint and depth (SeenOnly is never set:
// seen-only entries are not delivered). The Sink may keep the slice.
// After a crash a batch is delivered again (same seq, same URLs) until a
// Deliver call returned nil and the DUE recorded that durably, so the Sink
// must ignore any seq ≤ the last one it applied, atomically with storing the
// URLs. Deliver is called from one goroutine at a time, with the DUE's merge
// lock held: it must not call back into the DUE.
type Sink interface {
	Deliver(seq uint64, batch []Entry) error
}

// SyncMode says how durable the buffer log is when Add returns.
type SyncMode int

const (
	// SyncAlways: the entry is written and fsynced (group commit: concurrent
	// callers share one fsync) before Add returns. Survives power loss.
	SyncAlways SyncMode = iota
	// SyncWrite: the entry is handed to the OS (write(2)) before Add returns;
	// survives a process kill, not an OS crash. The log is fsynced before
	// every merge.
	SyncWrite
	// SyncNone: entries are written in 64 KiB chunks; Add may return before
	// the entry reaches the OS, so a kill can lose the latest acknowledged
	// entries. Fastest; for benchmarks and callers that can re-fetch.
	SyncNone
)

func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncWrite:
		return "write"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// Options configure a DUE. The zero value plus a Sink is valid: Open copies
// the options and applies EnsureDefaults.
type Options struct {
	// BufferEntries is the number of distinct buffered candidates that
	// triggers a merge. Default 1<<20. RAM is about 16 bytes per entry (twice
	// that while a merge of the previous buffer runs); URLs stay in the log.
	BufferEntries int
	// FlushInterval merges a non-empty buffer at least this often, so a slow
	// crawl still makes progress, and retries failed deliveries. Default
	// 10s; negative disables the timer (the caller calls Flush).
	FlushInterval time.Duration
	// FrontCache is consulted first; nil means none.
	FrontCache Cache
	// Sink receives the batches of new URLs. Required.
	Sink Sink
	// Sync is the log's durability on return from Add. Default SyncAlways.
	Sync SyncMode
	// FS is the file system; default vfs.Default (the OS). Tests pass a
	// vfs.MemFS or an errorfs wrapper to inject faults.
	FS vfs.FS
	// BlockEntries is the number of fingerprints per on-disk block.
	// Default 2048.
	BlockEntries int
	// RunRatio controls tiering: a merge folds older runs into its new run
	// while an older run holds ≤ RunRatio × the fingerprints gathered so
	// far, so run sizes grow geometrically and a merge rewrites only a small
	// part of the set. 0 means the default 4; 1 would rewrite less, larger
	// values keep fewer runs. MaxRuns forces folding beyond it (default 16).
	RunRatio int
	MaxRuns  int
	// Logger receives rare events (recovery actions, delivery errors).
	// Default: discard (see internal/logging).
	Logger *slog.Logger
	// Now is the clock for merge durations; default time.Now.
	Now func() time.Time
}

// EnsureDefaults fills in zero fields.
func (o *Options) EnsureDefaults() {
	if o.BufferEntries == 0 {
		o.BufferEntries = 1 << 20
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 10 * time.Second
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.BlockEntries == 0 {
		o.BlockEntries = 2048
	}
	if o.RunRatio == 0 {
		o.RunRatio = 4
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = 16
	}
	o.Logger = logging.OrDiscard(o.Logger)
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports every problem with the options.
func (o *Options) Validate() error {
	var errs []error
	if o.BufferEntries < 1 || o.BufferEntries > 1<<30 {
		errs = append(errs, fmt.Errorf("due: BufferEntries %d out of [1, 2^30]", o.BufferEntries))
	}
	if o.Sink == nil {
		errs = append(errs, errors.New("due: Sink is required"))
	}
	if o.Sync < SyncAlways || o.Sync > SyncNone {
		errs = append(errs, fmt.Errorf("due: unknown Sync mode %d", int(o.Sync)))
	}
	if o.BlockEntries < 1 || o.BlockEntries > maxBlockEntries {
		errs = append(errs, fmt.Errorf("due: BlockEntries %d out of [1, %d]", o.BlockEntries, maxBlockEntries))
	}
	if o.RunRatio < 1 {
		errs = append(errs, fmt.Errorf("due: RunRatio %d < 1", o.RunRatio))
	}
	if o.MaxRuns < 1 {
		errs = append(errs, fmt.Errorf("due: MaxRuns %d < 1", o.MaxRuns))
	}
	return errors.Join(errs...)
}
