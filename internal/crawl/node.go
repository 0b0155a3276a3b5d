package crawl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/revisit"
)

// DefaultContentSeenSize is Options.ContentSeenSize's default: about 9 MiB.
const DefaultContentSeenSize = 1 << 20

// contentSeenShards is the lock striping of a content-seen set of k
// entries: 64 shards, fewer for a small set so that each shard holds at
// least 1024 entries (a shard holds ⌈k/shards⌉; a tiny set is one shard).
func contentSeenShards(k int) int { return min(64, max(1, k/1024)) }

// Politeness keys (Options.PolitenessKey).
const (
	PolitenessHost = "host"
	PolitenessIP   = "ip"
)

// Sentinel errors.
var (
	ErrInvalidOptions = errors.New("crawl: invalid options")
	ErrClosed         = errors.New("crawl: node closed")
)

// Node is one crawling process. Open it, Seed it, Run it, Close it. It is
// safe for concurrent use.
type Node struct {
	opts Options
	fr   *frontier.Frontier
	due  *due.DUE
	ft   *fetcher.Fetcher
	log  *CrawlLog
	own  bool // log opened by the node

	shared cache.Cache // the front cache every worker uses when Options.CacheShared

	contentSeen *cache.Shared // content-seen test's fingerprints; nil if disabled

	busy    atomic.Int64 // workers holding a lease
	limit   fetchLimit   // Options.MaxFetches
	metrics Metrics
	sm      sitemapState
	started time.Time
	fence   func() (bool, string) // set by a Member with a Control (fence.go); nil: always held
	// claim and unclaim are set by a Member (elastic_claim.go): a worker
	// processes a leased URL only once claim said yes; nil: always.
	claim   func() bool
	unclaim func()
	warcOwn *warc.Writer   // opened by the node (Options.WARCArchive)
	rv      *revisit.Store // Options.Revisit's schedule (revisit.go); nil: off
	tails   tails          // ends of archived page fetches (warctail.go)
	retry   fetchRetry     // URLs to fetch again after a timeout (fetchretry.go)
}

// Open opens (or resumes) a node in opts.DataDir.
func Open(opts Options) (*Node, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	// Check the directory before its stores are opened (see check.go).
	var writeID bool
	if opts.Identity.Kind != "" {
		opts.Identity.Node = opts.ID
		var err error
		if writeID, err = compareIdentity(opts.DataDir, &opts.Identity, opts.ForceIdentity, opts.Logger); err != nil {
			return nil, err
		}
	}
	ds, err := inspectDir(opts.DataDir)
	if err == nil && !opts.rebuilding {
		err = checkMissing(opts.DataDir, ds)
	}
	if err != nil {
		return nil, err
	}
	n := &Node{opts: opts, started: time.Now()}
	if opts.MaxFetches > 0 {
		n.limit.reached = make(chan struct{})
	}
	if opts.ContentSeenSize > 0 {
		if n.contentSeen, err = cache.NewShared(cache.AlgoClock, opts.ContentSeenSize, contentSeenShards(opts.ContentSeenSize)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	if opts.CacheShared && opts.CacheAlgo != "none" && opts.CachePerWorker > 0 {
		if n.shared, err = cache.NewShared(opts.CacheAlgo, opts.CachePerWorker*opts.Workers, 0); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
		}
	}
	if n.fr, err = frontier.Open(filepath.Join(opts.DataDir, frontierDir), n.frontierOptions()); err != nil {
		return nil, fmt.Errorf("crawl: frontier %s: %w (if it is damaged, 'crawler fsck --data %s --repair' rebuilds it)", filepath.Join(opts.DataDir, frontierDir), err, opts.DataDir)
	}
	if err := checkSeqs(opts.DataDir, n.fr, ds.due, !opts.SkipOpenCheck); err != nil {
		n.fr.Close()
		return nil, err
	}
	n.due, err = due.Open(filepath.Join(opts.DataDir, dueDir), due.Options{
		BufferEntries: opts.DUEBuffer,
		FlushInterval: opts.DUEFlushInterval,
		Sync:          dueSyncMode(opts.DUEFsync),
		FS:            opts.DUEFS,
		Sink:          (*dueSink)(n),
		Logger:        opts.Logger,
	})
	if err != nil {
		n.fr.Close()
		return nil, fmt.Errorf("crawl: DUE %s: %w (if it is damaged, 'crawler fsck --data %s --repair' rebuilds it)", filepath.Join(opts.DataDir, dueDir), err, opts.DataDir)
	}
	if err := n.openWARC(); err != nil {
		n.due.Close()
		n.fr.Close()
		return nil, err
	}
	fo := n.opts.Fetcher
	if fo.Logger == nil {
		fo.Logger = n.opts.Logger
	}
	if n.opts.WARC != nil {
		fo.KeepWire = true
		fo.OnRobotsResponse = n.archiveRobots
	}
	if fo.RobotsHostGate == nil && !fo.RobotsCrossHostRedirects {
		// robots.txt redirects to another host wait for its slot.
		fo.RobotsHostGate = (*robotsGate)(n)
	}
	if n.ft, err = fetcher.New(fo); err != nil {
		n.closeWARC()
		n.due.Close()
		n.fr.Close()
		return nil, fmt.Errorf("crawl: fetcher: %w", err)
	}
	n.loadRobots()
	if n.log = opts.CrawlLog; n.log == nil {
		if n.log, err = OpenCrawlLog(filepath.Join(opts.DataDir, crawlLogFile), opts.Logger); err != nil {
			n.closeWARC()
			n.due.Close()
			n.fr.Close()
			return nil, err
		}
		n.own = true
	}
	n.log.fitFilter(opts.Filter) // log every URL the crawl may fetch whole
	if writeID {
		if err := writeIdentity(filepath.Join(opts.DataDir, IdentityFile), opts.Identity); err != nil {
			n.Close()
			return nil, err
		}
	}
	if err := n.openRevisit(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// frontierOptions are opts.Frontier with OnStarve also kicking the DUE: when
// every queued URL is leased, the URLs the workers found since the last merge
// are the only work left, so waiting for the next timed merge would idle the
// workers (a narrow crawl would be latency-bound by DUEFlushInterval).
func (n *Node) frontierOptions() frontier.Options {
	fo := n.opts.Frontier
	if fo.Logger == nil {
		fo.Logger = n.opts.Logger
	}
	user := fo.OnStarve
	fo.OnStarve = func() {
		if user != nil {
			user()
		}
		if n.due != nil {
			n.due.Kick()
		}
	}
	return fo
}

// Close stops the node's parts; call it after Run has returned. It flushes
// nothing that is not durable already: a restarted node resumes.
func (n *Node) Close() error {
	// Merge the DUE's buffer into the frontier first: at rest the DUE's
	// log then holds nothing that damage to it could lose unnoticed (a
	// torn log tail is indistinguishable from a crash mid-write).
	if err := n.due.Flush(); err != nil {
		n.opts.Logger.Warn("crawl: DUE flush on close failed", "err", err)
	}
	var errs []error
	if err := n.saveRobots(); err != nil {
		n.opts.Logger.Warn("crawl: robots cache not saved", "err", err) // costs robots.txt re-fetches after a restart, not URLs
	}
	errs = append(errs, n.due.Close(), n.fr.Close(), n.closeWARC(), n.closeRevisit())
	if n.own {
		errs = append(errs, n.log.Close())
	}
	return errors.Join(errs...)
}

// Seed submits seed URLs. Seeds this node does not own are routed to their
// owner; seeds seen before (after a restart) are dropped by the DUE.
func (n *Node) Seed(ctx context.Context, seeds []string) error {
	var canon []*urlnorm.URL
	for _, s := range seeds {
		c, err := urlnorm.Parse(s)
		if err != nil {
			return fmt.Errorf("crawl: seed %q: %w", s, err)
		}
		canon = append(canon, c)
	}
	w := n.newWorker(-1)
	return w.route(ctx, canon, 0)
}

// Deliver takes URLs that this node owns (received from a peer): they go
// through the DUE. It returns once they are durably logged, so the sender
// may be acknowledged.
func (n *Node) Deliver(ctx context.Context, urls []string) error {
	es := make([]due.Entry, 0, len(urls))
	for _, u := range urls {
		es = append(es, due.Entry{FP: urlFP(u), URL: u, Depth: receivedDepth(u)}) // a sitemap's mark is not part of its fingerprint
	}
	n.metrics.Received.Add(uint64(len(urls)))
	return n.due.AddBatch(es)
}

// Idle reports whether this node has nothing to do: no queued URL, no fetch
// in flight and nothing buffered or being merged in the DUE. Call Flush first
// to turn buffered candidates into frontier URLs. The parts are read one after
// another, so Idle also compares their activity counters before and after:
// any URL that moved between them in the meantime makes it false.
func (n *Node) Idle() bool {
	if n.revisitScheduled() { // a continuous crawl never ends by itself
		return false
	}
	before := n.activity()
	if n.busy.Load() != 0 || !n.fr.Idle() {
		return false
	}
	st := n.due.Stats()
	if st.BufferEntries != 0 || st.MergingEntries != 0 || st.PendingBatches != 0 {
		return false
	}
	return n.busy.Load() == 0 && n.fr.Idle() && n.activity() == before
}

// activity is a sum of monotonic counters that grows whenever a URL enters
// or leaves the DUE or the frontier.
func (n *Node) activity() uint64 {
	fs, ds := n.fr.Stats(), n.due.Stats()
	return fs.Added + fs.Leased + fs.Completed + fs.Requeued + ds.Added + ds.Emitted + ds.Batches + n.metrics.Received.Load()
}

// Flush merges the DUE buffer now and hands new URLs to the frontier.
func (n *Node) Flush() error { return n.due.Flush() }

// FrontierLen is the number of queued URLs.
func (n *Node) FrontierLen() int { return n.fr.Len() }

// Run starts the workers and blocks until ctx is cancelled or, if
// stopWhenIdle is set, until the node is idle (a single-node crawl's end).
// In-flight fetches finish before Run returns.
func (n *Node) Run(ctx context.Context, stopWhenIdle bool) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, n.opts.Workers+2) // workers, the revisit loop and the tails' first error
	n.tails.start(n.opts.Workers, errc)
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.saveRobotsEvery(wctx)
	}()
	if n.rv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.runRevisit(wctx); err != nil {
				errc <- err
			}
		}()
	}
	for i := 0; i < n.opts.Workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			pprof.Do(wctx, pprof.Labels("worker", strconv.Itoa(i)), func(ctx context.Context) {
				if err := n.newWorker(i).loop(ctx); err != nil {
					errc <- err
				}
			})
		}(i)
	}
	var runErr error
	if stopWhenIdle {
		runErr = n.waitIdle(wctx, errc)
	} else {
		select {
		case <-wctx.Done():
		case <-n.limit.reached:
		case runErr = <-errc:
		}
	}
	cancel()
	wg.Wait()
	n.tails.wait()
	if runErr == nil {
		select {
		case runErr = <-errc:
		default:
		}
	}
	return runErr
}

// fetchLimit enforces Options.MaxFetches: begun counts fetches begun,
// ended those that ended (completed or cut short); reached is closed when
// all MaxFetches began and ended. nil reached: no limit.
type fetchLimit struct {
	begun, ended atomic.Uint64
	reached      chan struct{}
}

// errFetchLimit tells a worker that MaxFetches fetches have begun: it
// requeues its URL for the next run and stops.
var errFetchLimit = errors.New("crawl: fetch limit reached")

// beginFetch reserves one of MaxFetches fetches, reporting false once all
// have begun.
func (n *Node) beginFetch() bool {
	return n.limit.reached == nil || n.limit.begun.Add(1) <= n.opts.MaxFetches
}

// endFetch records the end of a fetch beginFetch allowed.
func (n *Node) endFetch() {
	if n.limit.reached != nil && n.limit.ended.Add(1) == n.opts.MaxFetches {
		close(n.limit.reached)
	}
}

// FetchLimitReached reports whether Options.MaxFetches fetches have begun
// and ended (Run then returns).
func (n *Node) FetchLimitReached() bool {
	if n.limit.reached == nil {
		return false
	}
	select {
	case <-n.limit.reached:
		return true
	default:
		return false
	}
}

// waitIdle polls until the node stays idle across a DUE flush.
func (n *Node) waitIdle(ctx context.Context, errc <-chan error) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.limit.reached:
			return nil
		case err := <-errc:
			return err
		case <-t.C:
		}
		if !n.fr.Idle() || n.busy.Load() != 0 {
			continue
		}
		if err := n.due.Flush(); err != nil {
			return fmt.Errorf("crawl: due flush: %w", err)
		}
		if n.Idle() {
			return nil
		}
	}
}

// dueSink hands the DUE's new URLs to the frontier, exactly once per seq.
type dueSink Node

func (s *dueSink) Deliver(seq uint64, batch []due.Entry) error {
	n := (*Node)(s)
	items := make([]frontier.Item, 0, len(batch))
	for _, e := range batch {
		items = append(items, frontier.Item{URL: e.URL, Host: hostOf(e.URL), Depth: e.Depth})
	}
	if n.opts.PolitenessKey == PolitenessIP {
		n.keyByIP(items)
	}
	n.metrics.NewURLs.Add(uint64(len(items)))
	return n.fr.AddBatch("due", seq, items)
}

// hostOf returns the host[:port] of a canonical absolute URL.
func hostOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if k := strings.LastIndexByte(rest, '@'); k >= 0 {
		rest = rest[k+1:]
	}
	return rest
}

// dueSyncMode is the DUE's log durability for Options.DUEFsync.
func dueSyncMode(fsync bool) due.SyncMode {
	if fsync {
		return due.SyncAlways
	}
	return due.SyncWrite
}
