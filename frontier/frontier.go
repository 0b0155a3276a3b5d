package frontier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	Depth    uint16
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
	Requeued        uint64 // leases done with Requeue
	Failures        uint64 // leases done with Failed
	Moves           uint64 // URLs moved from a front queue to a back queue
	PolitenessWaits uint64 // times Next waited although URLs were queued
}

// Frontier is the URL frontier. It is safe for concurrent use and must be
// Closed.
type Frontier struct {
	opts   Options
	db     *pebble.DB
	closed chan struct{}
	syncs  sync.WaitGroup // writes waiting for their fsync outside the lock

	mu struct {
		sync.Mutex
		closed  bool
		broken  error // a failed write: the in-memory state is no longer trusted
		changed chan struct{}

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

		leases  map[uint64]leaseRec
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
	host *hostState
	e    entry
}

// Open opens (creating if needed) the frontier stored in dir. A frontier that
// was not closed cleanly resumes: its leases are handed out again.
func Open(dir string, opts Options) (*Frontier, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	po := &pebble.Options{Logger: pebbleLogger{opts.Logger}, Cache: pebble.NewCache(opts.CacheSize)}
	defer po.Cache.Unref()
	// Bloom filters: activating a host looks up its politeness state, which
	// most new hosts do not have.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("frontier: open %s: %w", dir, err)
	}
	f := &Frontier{opts: opts, db: db, closed: make(chan struct{})}
	f.mu.sched = newScheduler(&f.opts)
	f.mu.changed = make(chan struct{})
	f.mu.applied = make(map[string]uint64)
	f.mu.leases = make(map[uint64]leaseRec)
	f.mu.idle = make(map[string]idleState)
	if err := f.recover(); err != nil {
		db.Close()
		return nil, fmt.Errorf("frontier: recover %s: %w", dir, err)
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
		f.opts.Logger.Infof("frontier: resumed %d URLs (%d in front queues), %d active hosts",
			f.mu.count, f.mu.frontKeys, n)
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

// Add queues seeds or other URLs. It is not idempotent: for seeds that must
// be queued once across restarts use AddBatch("seeds", 1, items).
func (f *Frontier) Add(items ...Item) error { return f.add("", 0, items) }

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

// commitLocked writes the counters into b and applies it. With sync it
// does not wait for the fsync: wait is then true and the caller must call
// syncWait(b) after releasing the lock; otherwise b is closed. A failed
// write breaks the frontier: every later call returns the error.
func (f *Frontier) commitLocked(b *pebble.Batch, sync bool, count, frontKeys int64, nextSeq uint64) (wait bool, err error) {
	b.Set(keyCount, encodeU64(uint64(count)), nil)
	b.Set(keyFrontCount, encodeU64(uint64(frontKeys)), nil)
	b.Set(keyNextSeq, encodeU64(nextSeq), nil)
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
	f.mu.count, f.mu.frontKeys, f.mu.nextSeq = count, frontKeys, nextSeq
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
	return f.mu.broken
}

func (f *Frontier) notifyLocked() {
	close(f.mu.changed)
	f.mu.changed = make(chan struct{})
}

// Next blocks until a host may be fetched and leases its next URL. It
// returns ErrClosed once Close is called, ctx.Err() when ctx ends, and — only
// with Options.ExitWhenIdle — ErrEmpty when the frontier is idle. Without
// ExitWhenIdle it blocks on an idle frontier (a Done may yet lead to new
// URLs); callers detect the end of a crawl with Idle.
func (f *Frontier) Next(ctx context.Context) (Lease, error) {
	waited := false
	for {
		f.mu.Lock()
		now := f.opts.Clock.Now()
		l, ok, wake, again, err := f.tryNextLocked(now)
		changed := f.mu.changed
		idle := f.idleLocked()
		if !ok && err == nil && !again && !wake.IsZero() && !waited {
			f.mu.stats.PolitenessWaits++
			waited = true
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
		if !wake.IsZero() {
			timer = f.opts.Clock.After(wake.Sub(now))
		}
		select {
		case <-ctx.Done():
			return Lease{}, ctx.Err()
		case <-f.closed:
			return Lease{}, ErrClosed
		case <-changed:
		case <-timer:
		}
	}
}

// TryNext is Next without blocking: ok is false when no host may be fetched
// at the clock's current time.
func (f *Frontier) TryNext() (l Lease, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		l, ok, _, again, err := f.tryNextLocked(f.opts.Clock.Now())
		if ok || err != nil || !again {
			return l, ok, err
		}
	}
}

// maxMovesPerStep bounds the front-to-back moves done under the lock at once.
const maxMovesPerStep = 4096

// tryNextLocked refills the back queues by one bounded step, then leases the
// URL of the ready host that has waited longest. again means the refill
// has more to do and the caller should call again; wake is when the earliest
// waiting host becomes ready.
func (f *Frontier) tryNextLocked(now time.Time) (l Lease, ok bool, wake time.Time, again bool, err error) {
	if err := f.usableLocked(); err != nil {
		return l, false, wake, false, err
	}
	again, err = f.refillLocked(maxMovesPerStep, f.opts.BackQueues)
	if err != nil {
		return l, false, wake, false, err
	}
	for {
		h, w := f.mu.sched.pop(now)
		if h == nil && !again && f.mu.undispatched > 0 && len(f.mu.sched.hosts) < f.opts.MaxBackQueues {
			// No active host may be fetched now: activate one more.
			n := len(f.mu.sched.hosts)
			if again, err = f.refillLocked(maxMovesPerStep, n+1); err != nil {
				return l, false, wake, false, err
			}
			if len(f.mu.sched.hosts) > n || again {
				continue
			}
			h, w = f.mu.sched.pop(now)
		}
		if h == nil {
			return l, false, w, again, nil
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
	if len(s.hosts) >= target || f.mu.undispatched == 0 {
		return false, nil
	}
	var b *pebble.Batch
	var touched []*hostState
	n, moved := 0, 0
	seq := f.mu.nextSeq
	for n < max && len(s.hosts) < target {
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
	return n == max && len(s.hosts) < target, nil
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
		if err := q.fill(f.db, frontPrefix(uint8(f.mu.minPrio)), frontChunk); err != nil {
			return 0, false, err
		}
		if len(q.buf) > 0 {
			return f.mu.minPrio, true, nil
		}
	}
	return 0, false, nil
}

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

// Idle reports whether nothing is queued and no lease is outstanding.
func (f *Frontier) Idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idleLocked()
}

func (f *Frontier) idleLocked() bool { return f.mu.count == 0 && len(f.mu.leases) == 0 }

// WaitIdle blocks until the frontier is idle (see Idle). It returns
// ctx.Err() when ctx ends and ErrClosed once Close is called.
func (f *Frontier) WaitIdle(ctx context.Context) error {
	for {
		f.mu.Lock()
		err, idle, changed := f.usableLocked(), f.idleLocked(), f.mu.changed
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
	f.mu.closed = true
	close(f.closed)
	f.mu.Unlock()
	f.syncs.Wait() // no write starts once closed is set
	return f.db.Close()
}

// pebbleLogger adapts Logger to pebble's logger.
type pebbleLogger struct{ l Logger }

func (p pebbleLogger) Infof(format string, args ...any)  { p.l.Infof("pebble: "+format, args...) }
func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Errorf("pebble: "+format, args...) }
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Errorf("pebble: fatal: "+format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}
