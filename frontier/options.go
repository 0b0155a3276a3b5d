package frontier

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/sextant-crawler/sextant/internal/logging"
)

// Options configures a Frontier. The zero value is usable: EnsureDefaults
// fills every field whose zero value is meaningless. DefaultOptions returns
// the preset for a real crawl on the open web.
type Options struct {
	// Workers is the number of fetch workers the caller runs. It sizes the
	// set of active back queues (hosts) to BackQueues = 3 × Workers. Default 1.
	Workers int
	// BackQueues is the number of hosts that may have a back queue at once
	// (Mercator: about three per worker thread). Default 3 × Workers.
	BackQueues int
	// MaxBackQueues bounds the active hosts when more are needed to keep
	// workers busy: when no active host may be fetched now but front queues
	// hold URLs, one more host is activated, up to MaxBackQueues. With a
	// delay of Factor × fetch time a worker needs about Factor+1 hosts, more
	// than Mercator's 3. Default 16 × Workers (at least BackQueues).
	MaxBackQueues int
	// Factor multiplies the duration of the last fetch of a host to give the
	// delay before the next one (Mercator: 10). Default 10: EnsureDefaults
	// replaces a zero Factor by 10 unless FactorSet is true.
	Factor float64
	// FactorSet says that Factor was given, so that 0 means 0 (no delay
	// proportional to the fetch time, only MinDelay) rather than "use the
	// default". A zero-value Options stays polite; DefaultOptions sets it,
	// so options built from DefaultOptions (the CLI's --factor, the node
	// config's politeness.factor) take an explicit 0 at its word.
	FactorSet bool
	// MinDelay and MaxDelay clamp Factor × duration. MinDelay 0 is allowed
	// (tests, demo); DefaultOptions sets 1 s. MaxDelay defaults to 60 s.
	MinDelay, MaxDelay time.Duration
	// MaxCrawlDelay caps a robots.txt Crawl-delay. Default 300 s.
	MaxCrawlDelay time.Duration
	// FailureBackoff is the delay after the first consecutive failure of a
	// host; each further consecutive failure doubles it, up to
	// MaxFailureBackoff. A success resets the count. Defaults 10 s and 1 h.
	FailureBackoff, MaxFailureBackoff time.Duration
	// BorrowHold is how long a host's slot is kept free for a borrower
	// (Frontier.Borrow) it was promised to, before its own queued URLs may
	// take it again. Default 5 s.
	BorrowHold time.Duration
	// BorrowPoll is when a borrower refused because the host has a fetch
	// in flight is told to ask again. Default 100 ms.
	BorrowPoll time.Duration
	// CacheSize is pebble's block cache, in bytes (outside the Go heap).
	// Default 64 MiB.
	CacheSize int64
	// MemTableSize is pebble's memtable size in bytes; 0 is pebble's
	// default (4 MiB). Tests set it small so that a small crawl writes
	// sstables as well as its log.
	MemTableSize uint64
	// NoSyncAdd makes Add and AddBatch return before their write is synced
	// to disk. By default they return once it is durable (fsync), which is
	// what makes the AddBatch hand-off exactly-once: pebble buffers unsynced
	// writes in the process, so even a killed process (not only a machine
	// crash) may lose the last of them. The fsync is waited for outside the
	// frontier's lock, so concurrent callers share syncs. Set it only where a
	// lost batch does not matter (benchmarks) or is re-delivered anyway.
	NoSyncAdd bool
	// SyncDone makes Done wait until its write is durable. By default it
	// does not: a Done lost in a crash only means the URL is handed out
	// again (at-least-once).
	SyncDone bool
	// MaxLeases, if positive, bounds the leases outstanding (leased, not
	// yet Done): Next waits for a Done rather than lease one more. A
	// caller whose workers lease ahead (one fetching a host's next URL
	// while it finishes the page before) sets it to its worker count, so
	// that a crash still repeats at most one fetch per worker.
	MaxLeases int
	// ExitWhenIdle makes Next return ErrEmpty as soon as the frontier is idle
	// (no URL queued, no lease outstanding). By default Next blocks instead,
	// since a Done may still lead to new URLs; use Idle to detect the end.
	ExitWhenIdle bool
	// HostBudget bounds the URLs admitted per site over the crawl (trap
	// defence, persisted); see Budget. The zero value admits everything.
	HostBudget Budget
	// Dispatch is how Next hands hosts to workers: DispatchAny (default:
	// any free worker takes the ready host that waited longest) or
	// DispatchHostAffine (Mercator's binding of a back queue to one thread;
	// see affine.go and NextFor). Workers numbers the owners.
	Dispatch string
	// OnStarve, if set, is called (without the frontier's lock) when Next
	// is about to wait with no host ready or waiting out a delay: every
	// queued URL is leased, or none is queued. The caller uses it to hand
	// over new URLs sooner (the node kicks its DUE). It must not block.
	OnStarve func()
	// Clock gives the time; default the real clock. Tests use ManualClock.
	Clock Clock
	// Logger receives rare events (open, recovery, errors). Default:
	// discard (see internal/logging).
	Logger *slog.Logger
}

// Clock is the source of time. It must be safe for concurrent use.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// DefaultOptions is the preset for a polite crawl of real web servers.
func DefaultOptions() Options {
	o := Options{MinDelay: time.Second, Factor: 10, FactorSet: true}
	o.EnsureDefaults()
	return o
}

// EnsureDefaults sets the defaults documented on each field.
func (o *Options) EnsureDefaults() {
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.BackQueues == 0 {
		o.BackQueues = 3 * o.Workers
	}
	if o.MaxBackQueues == 0 {
		o.MaxBackQueues = max(16*o.Workers, o.BackQueues)
	}
	if o.Factor == 0 && !o.FactorSet {
		o.Factor = 10
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = 60 * time.Second
	}
	if o.MaxCrawlDelay == 0 {
		o.MaxCrawlDelay = 300 * time.Second
	}
	if o.FailureBackoff == 0 {
		o.FailureBackoff = 10 * time.Second
	}
	if o.MaxFailureBackoff == 0 {
		o.MaxFailureBackoff = time.Hour
	}
	if o.BorrowHold == 0 {
		o.BorrowHold = 5 * time.Second
	}
	if o.BorrowPoll == 0 {
		o.BorrowPoll = 100 * time.Millisecond
	}
	if o.CacheSize == 0 {
		o.CacheSize = 64 << 20
	}
	if o.HostBudget.LowPriority == 0 {
		o.HostBudget.LowPriority = 1
	}
	if o.Dispatch == "" {
		o.Dispatch = DispatchAny
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	o.Logger = logging.OrDiscard(o.Logger)
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("Workers %d < 0", o.Workers))
	}
	if o.MaxLeases < 0 {
		errs = append(errs, fmt.Errorf("MaxLeases %d < 0", o.MaxLeases))
	}
	if o.BackQueues < 0 {
		errs = append(errs, fmt.Errorf("BackQueues %d < 0", o.BackQueues))
	}
	if o.MaxBackQueues < o.BackQueues {
		errs = append(errs, fmt.Errorf("MaxBackQueues %d < BackQueues %d", o.MaxBackQueues, o.BackQueues))
	}
	// NaN passes every comparison and ±Inf overflows Factor × duration:
	// either would make the delays meaningless, so only finite factors.
	if !(o.Factor >= 0) || math.IsInf(o.Factor, 1) {
		errs = append(errs, fmt.Errorf("Factor %g: want a finite number ≥ 0", o.Factor))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"MinDelay", o.MinDelay}, {"MaxDelay", o.MaxDelay}, {"MaxCrawlDelay", o.MaxCrawlDelay},
		{"FailureBackoff", o.FailureBackoff}, {"MaxFailureBackoff", o.MaxFailureBackoff},
		{"BorrowHold", o.BorrowHold}, {"BorrowPoll", o.BorrowPoll},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v < 0", d.name, d.v))
		}
	}
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("CacheSize %d < 0", o.CacheSize))
	}
	if o.MaxDelay > 0 && o.MinDelay > o.MaxDelay {
		errs = append(errs, fmt.Errorf("MinDelay %v > MaxDelay %v", o.MinDelay, o.MaxDelay))
	}
	if o.FailureBackoff >= 0 && o.MaxFailureBackoff > 0 && o.MaxFailureBackoff < o.FailureBackoff {
		errs = append(errs, fmt.Errorf("FailureBackoff %v > MaxFailureBackoff %v", o.FailureBackoff, o.MaxFailureBackoff))
	}
	if err := validateDispatch(o.Dispatch); err != nil {
		errs = append(errs, err)
	}
	if err := o.HostBudget.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
