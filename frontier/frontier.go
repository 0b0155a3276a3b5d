package frontier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// Errors.
var (
	// ErrClosed is returned by every method called after (or during) Close.
	ErrClosed = errors.New("frontier: closed")
	// ErrEmpty is returned by Next when Options.ExitWhenIdle is set and the
	// frontier is idle: nothing queued and no lease outstanding.
	ErrEmpty = errors.New("frontier: empty")
	// ErrUnknownLease is returned by Done for a lease this Frontier did not
	// hand out or that is already done.
	ErrUnknownLease = errors.New("frontier: unknown lease")
	// ErrInvalidItem is returned for an Item without URL or Host, or whose
	// Host contains a NUL byte.
	ErrInvalidItem = errors.New("frontier: invalid item")
	// ErrInvalidOptions wraps the problems found by Options.Validate.
	ErrInvalidOptions = errors.New("frontier: invalid options")
)

// Item is a URL to crawl.
type Item struct {
	URL string
	// Host is the politeness key: at most one fetch per Host is in flight.
	// Use the host name, or the IP address or registered domain for a
	// coarser politeness. It must be non-empty and contain no NUL byte.
	Host string
	// Priority selects the front queue: queue 0 is drained first, then 1,
	// and so on; within a priority URLs leave in the order they came (FIFO,
	// hence breadth-first when Depth grows with each hop).
	Priority uint8
	// Depth is the URL's link depth (seeds 0), stored with it and handed
	// back in its Lease.
	Depth uint16
	// Site is the key of Options.HostBudget: the URLs admitted per Site are
	// counted; empty means Host. Use the host name when Host is an IP
	// address (per-IP politeness). Used only when the item is added; not
	// stored.
	Site string
	// Revisit marks a URL queued again by continuous crawling (package
	// revisit): it was admitted once already, so HostBudget neither counts
	// nor drops it. Not stored.
	Revisit bool
}

// Lease is a URL handed out by Next; it must be passed back to Done exactly
// once. Until then no other URL of its Host is handed out.
type Lease struct {
	Item
	f  *Frontier
	id uint64
}

// Result is the outcome of a leased fetch, given to Done.
type Result struct {
	// Duration is how long the fetch took; the host rests Factor × Duration
	// (clamped to [MinDelay, MaxDelay]) before its next fetch.
	Duration time.Duration
	// CrawlDelay is the host's robots.txt Crawl-delay, 0 if none. The next
	// fetch waits at least min(CrawlDelay, MaxCrawlDelay).
	CrawlDelay time.Duration
	// Failed counts a failure of the host (network error, 5xx…): consecutive
	// failures back the host off exponentially.
	Failed bool
	// Requeue puts the URL back at the tail of its host's queue instead of
	// removing it (e.g. robots.txt temporarily unavailable).
	Requeue bool
}

// Stats is a snapshot of the frontier's state and counters since Open.
type Stats struct {
	Queued       int64 // URLs waiting (front + back queues), leases excluded
	FrontQueued  int64 // URLs in front queues
	BackQueued   int64 // URLs in back queues, leases excluded
	InFlight     int   // leases outstanding
	ActiveHosts  int   // hosts with a back queue or a lease
	ReadyHosts   int   // hosts with URLs that may be fetched now
	WaitingHosts int   // hosts with URLs waiting for their politeness delay

	Added           uint64 // URLs accepted by Add/AddBatch
	IgnoredBatches  uint64 // AddBatch calls ignored as already applied
	Leased          uint64 // leases handed out
	Completed       uint64 // leases done and removed
	DoneCommits     uint64 // pebble batches that carried Done writes (group commit)
	DoneSyncs       uint64 // fsyncs made for Done writes (SyncDone)
	Requeued        uint64 // leases done with Requeue
	Failures        uint64 // leases done with Failed
	Moves           uint64 // URLs moved from a front queue to a back queue
	PolitenessWaits uint64 // times Next waited although URLs were queued
	Borrowed        uint64 // slots taken by Borrow
	BorrowWaits     uint64 // Borrow calls refused (retry later)
	BudgetDropped   uint64 // URLs not queued: their site's hard budget was spent
	BudgetLowered   uint64 // URLs queued at Options.HostBudget.LowPriority (over the soft budget)
	// Steals counts leases of a host owned by another worker (host-affine
	// dispatch only: taken when none of the caller's own hosts was ready).
	Steals uint64
	// NextWait is the time NextFor callers spent waiting before they got a
	// lease, summed over callers: the workers' idle time.
	NextWait time.Duration
	// Wakeups counts waiting NextFor callers woken to try again (by a
	// change, or passed on by a caller that leased).
	Wakeups uint64
}

// Frontier is the URL frontier. It is safe for concurrent use and must be
// Closed.
type Frontier struct {
	opts   Options
	db     *pebble.DB
	closed chan struct{}
	// syncReq asks the syncer goroutine (boundsync.go) for a sync; Close
	// waits for it on syncerDone.
	syncReq    chan struct{}
	syncerDone sync.WaitGroup
	syncs      sync.WaitGroup // writes waiting for their fsync outside the lock

	corrupt atomic.Pointer[error] // a damaged file pebble reported

	mu struct {
		sync.Mutex
		closed  bool
		broken  error         // a failed write: the in-memory state is no longer trusted
		changed chan struct{} // closed and replaced on a change, if armed
		armed   bool          // someone may be waiting on changed
		waiters waitQueue     // Next callers waiting for a change (wait.go)

		sched   *scheduler
		front   [256]headQueue
		minPrio int // no front queue below minPrio has entries

		count        int64 // URLs stored (queued + leased)
		frontKeys    int64 // URLs stored under front-queue keys
		undispatched int64 // URLs in front queues not yet given to a back queue
		nextSeq      uint64
		applied      map[string]uint64

		// idle caches the politeness state of recently deactivated hosts
		// (as persisted) so reactivating them needs no pebble read; at most
		// idleCacheSize entries.
		idle map[string]idleState
		// admitted caches the persisted budget counts of recent sites; at
		// most admittedCacheSize entries.
		admitted map[string]uint64

		// group is the open group of Done writes (done.go); groups up to
		// committedGen are applied to pebble, up to durableGen synced.
		group                    doneGroup
		committedGen, durableGen uint64
		// doneSeq counts Dones, durableDones those known durable
		// (boundsync.go).
		doneSeq, durableDones uint64
		syncing               chan struct{} // closed when the leading Done's fsync ends
		// budgetSpent says a Next found MaxLeases spent by leases and
		// undurable Dones since the last sync ended: that sync's end must
		// wake the waiters (and only then: boundsync.go).
		budgetSpent bool

		leases  map[uint64]leaseRec
		borrows map[uint64]*hostState // slots taken by Borrow (ids from leaseID)
		leaseID uint64
		stats   Stats
	}
}

// idleCacheSize bounds Frontier.mu.idle (≈ 100 bytes per entry).
const idleCacheSize = 1 << 16

type idleState struct {
	next     time.Time
	failures int
}

type leaseRec struct {
	host     *hostState
	e        entry
	released bool // Release scheduled the host's next fetch already
}

// Open opens (creating if needed) the frontier stored in dir. A frontier that
// was not closed cleanly resumes: its leases are handed out again.
func Open(dir string, opts Options) (*Frontier, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	po := &pebble.Options{Logger: pebbleLogger{opts.Logger}, Cache: pebble.NewCache(opts.CacheSize), MemTableSize: opts.MemTableSize}
	defer po.Cache.Unref()
	// Bloom filters: activating a host looks up its politeness state, which
	// most new hosts do not have.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// pebble's default reaction to a damaged file found in the background
	// (a compaction reading a bad block) is Logger.Fatalf, which would
	// crash the process: record it instead; every later call fails with it.
	f := &Frontier{opts: opts, closed: make(chan struct{})}
	po.EventListener = &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		opts.Logger.Error("frontier: store damaged", "dir", dir, "info", info.String())
		err := fmt.Errorf("frontier: store %s damaged: %s", dir, info)
		f.corrupt.CompareAndSwap(nil, &err)
	}}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("frontier: open %s: %w", dir, err)
	}
	f.db = db
	f.mu.sched = newScheduler(&f.opts)
	f.mu.changed = make(chan struct{})
	f.mu.applied = make(map[string]uint64)
	f.mu.leases = make(map[uint64]leaseRec)
	f.mu.borrows = make(map[uint64]*hostState)
	f.mu.idle = make(map[string]idleState)
	f.mu.admitted = make(map[string]uint64)
	f.mu.group = doneGroup{states: make(map[string][]byte), gen: 1}
	if err := f.recover(); err != nil {
		db.Close()
		return nil, fmt.Errorf("frontier: recover %s: %w", dir, err)
	}
	if f.boundedSync() {
		f.syncReq = make(chan struct{}, 1)
		f.syncerDone.Add(1)
		go f.syncer()
	}
	return f, nil
}

// recover loads the counters and re-activates the hosts that had back queues.
func (f *Frontier) recover() error {
	var err error
	if f.mu.count, err = f.getCounter(keyCount, 0); err != nil {
		return err
	}
	if f.mu.frontKeys, err = f.getCounter(keyFrontCount, 0); err != nil {
		return err
	}
	f.mu.undispatched = f.mu.frontKeys
	ns, err := f.getCounter(keyNextSeq, 1)
	if err != nil {
		return err
	}
	f.mu.nextSeq = uint64(ns)
	for p := range f.mu.front {
		f.mu.front[p].more = f.mu.frontKeys > 0
		f.mu.front[p].front = true
	}
	// One seek per host that had a back queue.
	it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixHost}, UpperBound: []byte{prefixHost + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		k := it.Key()
		i := strings.IndexByte(string(k), 0)
		if i < 1 {
			return errCorrupt
		}
		host := string(k[1:i])
		h, err := f.activateLocked(host)
		if err != nil {
			return err
		}
		h.back.more = true
		f.mu.sched.setQueued(h, true)
		ok = it.SeekGE(prefixEnd(hostPrefix(host)))
	}
	if n := len(f.mu.sched.hosts); n > 0 || f.mu.count > 0 {
		f.opts.Logger.Info("frontier: resumed", "urls", f.mu.count, "front_queued", f.mu.frontKeys, "active_hosts", n)
	}
	return it.Error()
}

func (f *Frontier) getCounter(key []byte, def int64) (int64, error) {
	v, c, err := f.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return def, nil
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	x, err := decodeU64(v)
	return int64(x), err
}

// activateLocked makes host active with its persisted politeness state.
func (f *Frontier) activateLocked(host string) (*hostState, error) {
	if st, ok := f.mu.idle[host]; ok {
		delete(f.mu.idle, host)
		return f.mu.sched.activate(host, st.next, st.failures), nil
	}
	if v, ok := f.mu.group.states[host]; ok { // written by a Done not yet committed
		next, failures, err := decodeState(v)
		if err != nil {
			return nil, err
		}
		return f.mu.sched.activate(host, next, failures), nil
	}
	var next time.Time
	failures := 0
	v, c, err := f.db.Get(stateKey(host))
	switch {
	case err == nil:
		next, failures, err = decodeState(v)
		c.Close()
		if err != nil {
			return nil, err
		}
	case !errors.Is(err, pebble.ErrNotFound):
		return nil, err
	}
	return f.mu.sched.activate(host, next, failures), nil
}

// Idle reports whether nothing is queued and no lease is outstanding.
func (f *Frontier) Idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idleLocked()
}

func (f *Frontier) idleLocked() bool {
	return f.mu.count == 0 && len(f.mu.leases) == 0 && len(f.mu.borrows) == 0
}

// WaitIdle blocks until the frontier is idle (see Idle). It returns
// ctx.Err() when ctx ends and ErrClosed once Close is called.
func (f *Frontier) WaitIdle(ctx context.Context) error {
	for {
		f.mu.Lock()
		err, idle, changed := f.usableLocked(), f.idleLocked(), f.mu.changed
		f.mu.armed = true
		f.mu.Unlock()
		if err != nil || idle {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.closed:
			return ErrClosed
		case <-changed:
		}
	}
}

// Len is the number of URLs queued, leases excluded.
func (f *Frontier) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(f.mu.count) - len(f.mu.leases)
}

// InFlight is the number of leases outstanding.
func (f *Frontier) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.leases)
}

// Stats returns a snapshot of the frontier's figures.
func (f *Frontier) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.mu.stats
	s.InFlight = len(f.mu.leases)
	s.Queued = f.mu.count - int64(s.InFlight)
	s.FrontQueued = f.mu.undispatched
	s.BackQueued = s.Queued - s.FrontQueued
	s.ActiveHosts = len(f.mu.sched.hosts)
	s.ReadyHosts, s.WaitingHosts = f.mu.sched.ready(f.opts.Clock.Now())
	return s
}

// Close releases the store. Blocked Next calls return ErrClosed; leases not
// yet done are handed out again by the next Open.
func (f *Frontier) Close() error {
	f.mu.Lock()
	if f.mu.closed {
		f.mu.Unlock()
		return ErrClosed
	}
	err := f.flushDoneLocked()
	f.mu.closed = true
	close(f.closed)
	f.mu.Unlock()
	f.syncs.Wait() // no write starts once closed is set
	f.syncerDone.Wait()
	if cerr := f.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// pebbleLogger adapts slog to pebble's logger. pebble's Infof reports every
// flush and compaction: debug level, or a node's log would be mostly pebble.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error("pebble: fatal: " + fmt.Sprintf(format, args...))
	panic(fmt.Sprintf("pebble: "+format, args...))
}
