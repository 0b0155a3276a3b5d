package crawl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
	"github.com/sextant-crawler/sextant/internal/warc"
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

// Splitter is the host splitter as a node needs it: it says which hosts this
// node owns and takes the URLs whose host another node owns. A nil Splitter
// means a cluster of one: every host is local.
type Splitter interface {
	IsLocal(host string) bool
	Route(ctx context.Context, urls []string) error
}

// WARCWriter archives fetched responses (internal/warc.Writer is one).
type WARCWriter interface {
	WriteFetch(f warc.Fetch) (warc.Location, error)
}

// LinkFilter decides whether a discovered URL may be crawled at all
// (scheme, length, scope, traps). A nil LinkFilter admits every URL that
// normalised.
type LinkFilter interface {
	Allow(u *urlnorm.URL) bool
}

// Options configure a Node.
type Options struct {
	// ID names the node in logs and reports. Defaults: DefaultOptions.
	ID string
	// DataDir holds the frontier, the DUE and the crawl log. Required.
	DataDir string
	// Workers is the number of fetching goroutines.
	Workers int
	// Fetcher, Frontier and Extract configure those parts. The node makes
	// frontier completions durable (Frontier.SyncDone) unless LazyDone is
	// set: then a kill -9 may re-fetch pages completed just before it.
	Fetcher  fetcher.Options
	Frontier frontier.Options
	Extract  extract.Options
	LazyDone bool
	// ReleaseEarly releases a host's politeness slot as soon as its
	// response is read (frontier.Release, as Mercator does) instead of
	// once the page is processed and its completion durable: the host's
	// next fetch need not wait for link extraction, the crawl log and the
	// fsync. The URL stays in the frontier until then (a kill -9
	// re-fetches it, as any fetch in flight), so durability is unchanged;
	// a host may then have two URLs leased, one of them past its fetch.
	// Off by default: on a loaded 2-core machine it did not speed up a
	// one-host crawl (docs/bench/onehost.md).
	ReleaseEarly bool
	// DUEBuffer is the number of buffered candidates that triggers a DUE
	// merge; DUEFlushInterval merges at least this often. Defaults 1<<18
	// and 500 ms (a crawl must not starve waiting for merges).
	DUEBuffer        int
	DUEFlushInterval time.Duration
	// DUEFsync makes every DUE AddBatch wait for an fsync of the buffer
	// log (due.SyncAlways): discovered URLs then survive a power failure
	// too. By default (false) AddBatch returns once the log records are
	// written to the OS (due.SyncWrite): they survive a kill -9 of the
	// process, and the log is fsynced before every merge. The fsync wait
	// was the largest share of a page's latency on a loaded machine
	// (docs/bench/crawl.md), so the default trades power-failure
	// durability of the last moments' links for throughput.
	DUEFsync bool
	// DUEFS is the DUE's file system; nil is the OS's. Tests inject faults
	// (a full disk) through it.
	DUEFS vfs.FS
	// CacheAlgo and CachePerWorker size each worker's front cache of URL
	// fingerprints (consulted before the DUE). Defaults: DefaultOptions (the
	// caching study recommends 100–500 entries per thread); 0 entries
	// with CacheAlgo "none" disables it.
	CacheAlgo      string
	CachePerWorker int
	// CacheShared replaces the per-worker caches by one cache of
	// CachePerWorker × Workers entries shared by every worker (sharded and
	// locked, see cache.NewShared): the same memory, one pool. Whether that
	// pays is the caching study's per-worker-vs-global question.
	CacheShared bool
	// ContentSeenSize bounds the content-seen test (Mercator: links are not
	// extracted from an HTML body byte-identical to one already processed):
	// the fingerprints (xxhash64) of the last bodies are kept in a CLOCK
	// set of this many entries, about 9 bytes each, in memory only. Default
	// 1<<20 (about 9 MiB); negative disables the test. A bounded set may
	// forget a body and extract a duplicate's links again (the URL-seen test
	// then drops them), but it never skips a body it has not seen (bar a
	// 64-bit fingerprint collision): no URL is lost. A restarted node starts
	// with an empty set.
	ContentSeenSize int
	// MaxPagesPerHost bounds the URLs admitted to the frontier per host
	// (trap defence; default 1000, -1 means no bound); later URLs are
	// dropped and counted (Stats.BudgetDropped). Beyond SoftPagesPerHost
	// (default half of MaxPagesPerHost, -1: none) a host's URLs are
	// admitted at low priority (Frontier.HostBudget.
	// LowPriority): fetched only once no URL of normal priority is queued,
	// so a trap host is slowed before it is cut off (IRLbot's BEAST;
	// Stats.Frontier.BudgetLowered counts them). They set Frontier.HostBudget,
	// whose counts are persisted with the frontier: the budget holds across
	// restarts and kill -9.
	MaxPagesPerHost  int
	SoftPagesPerHost int
	// PolitenessKey is what "one request at a time, then wait" applies to:
	// "host" (default: host name and port) or "ip" (the address the host
	// name resolves to, through the fetcher's resolver, Resolve override
	// and DNS cache, so that many names served by one machine share its
	// politeness slot). In "ip" mode names are resolved when the DUE hands
	// new URLs to the frontier (each batch's new names in parallel); a name
	// that does not resolve keeps its host name as key (its fetch will fail
	// and back off). The per-host budget stays per host name.
	PolitenessKey string
	// MaxDepth drops links more than MaxDepth hops from a seed (seeds are
	// depth 0; a redirect target is one hop from the redirecting URL); 0
	// means unlimited. Depth is the length of the path along which the
	// crawl first discovered a URL (it travels with the URL through the DUE
	// and the frontier), as in Heritrix's max-hops: it equals the shortest
	// distance when the crawl is breadth-first (one host, or FIFO order
	// across hosts), and may exceed it otherwise. URLs received from peers
	// take the depth their hop path implies (hopsDepth; 0 without one).
	MaxDepth int
	// NoFollow is NoFollowObey (default) or NoFollowIgnore: whether the
	// nofollow robots directives of pages (robots <meta>, X-Robots-Tag)
	// and links (rel=nofollow) are obeyed. Either way the directives are
	// recorded in crawl.log (LogEntry.Robots) and counted; noindex is only
	// recorded. The robots <meta> named after the crawler is the one named
	// Extract.RobotsToken, by default Fetcher's RobotsToken (so it follows
	// the User-Agent).
	NoFollow string
	// Filter and Splitter: see their types.
	Filter   LinkFilter
	Splitter Splitter
	// WARC, if set, receives every fetched response, robots.txt included
	// (request and response records); the node does not close it.
	WARC WARCWriter
	// WARCArchive, with a Dir, makes the node write WARC files itself
	// (warcarchive.go).
	WARCArchive WARCArchive
	// FrontObserverBatch, if set, is called once per page with the
	// fingerprints of the page's links looked up in the front caches, in
	// order (e.g. a live miss-ratio curve estimator; one call per page, so
	// an observer behind a mutex takes it once per page). RemoteObserverBatch,
	// if set, is called once per page with the fingerprints of the page's
	// links handed to the Splitter (bound for peers, before the per-peer
	// caches). Both are called from many workers at once and must not keep
	// the slice.
	FrontObserverBatch, RemoteObserverBatch func(fps []uint64)
	// FullTrace, if set, receives the fingerprint of every URL entering the
	// host splitter (every link that passed the filter), for `crawler
	// cachesim`. It is called from many workers at once.
	FullTrace func(fp uint64)
	// MaxFetches, if not 0, ends Run (with nil) once this many fetches
	// have been begun and have ended: a worker begins a fetch only while
	// fewer were begun, so exactly MaxFetches complete unless the crawl
	// ends first or some are cut short (see FetchLimitReached).
	MaxFetches uint64
	// OnFetch, if set, is called with each completed fetch's crawl log
	// line once it is written (robots.txt fetches excepted): the hook an
	// embedding program (package crawl at the module root) gets pages
	// through. It is called from many workers at once and holds up the
	// calling worker while it runs.
	OnFetch func(LogEntry)
	// CrawlLog receives one line per fetch attempt; nil writes
	// DataDir/crawl.log.
	CrawlLog *CrawlLog
	// Logf receives rare events. Default: discard.
	Logf func(format string, args ...any)
	// Identity, if its Kind is set, is compared with DataDir/IDENTITY
	// (written at the first Open; Node is set to ID): a directory made by
	// another kind of run, node or seeds is refused (ErrIdentityMismatch)
	// unless ForceIdentity, which rewrites it with a warning through Logf.
	Identity      Identity
	ForceIdentity bool
	// SkipOpenCheck skips the part of Open's cross-check that reads every
	// frontier key (and every entry of a member's spool): 0.2–0.5 s per
	// 10⁶ queued URLs, 4.9 s at 10⁷ (docs/bench/open-check.md). The cheap checks still
	// run (missing stores, the frontier's and the DUE's batch sequence
	// numbers, the spool's mark), but a frontier that lost an sstable or
	// holds a block failing its checksum is then found mid-crawl, or by
	// `crawler fsck`, instead of at Open: run fsck after anything worse
	// than a crash (a disk error, a restore from backup).
	SkipOpenCheck bool
	// Sitemaps is SitemapsOn (default: read robots.txt's Sitemap: lines,
	// probe /sitemap.xml and crawl what sitemaps list; see sitemaps.go) or
	// SitemapsOff.
	Sitemaps string

	rebuilding bool // Repair: the stores are empty on purpose
}

// EnsureDefaults fills zero fields with DefaultOptions' values.
func (o *Options) EnsureDefaults() {
	d := DefaultOptions()
	if o.ID == "" {
		o.ID = d.ID
	}
	if o.PolitenessKey == "" {
		o.PolitenessKey = d.PolitenessKey
	}
	if o.Sitemaps == "" {
		o.Sitemaps = d.Sitemaps
	}
	if o.Workers == 0 {
		o.Workers = d.Workers
	}
	if o.DUEBuffer == 0 {
		o.DUEBuffer = d.DUEBuffer
	}
	if o.DUEFlushInterval == 0 {
		o.DUEFlushInterval = d.DUEFlushInterval
	}
	if o.CacheAlgo == "" {
		o.CacheAlgo = d.CacheAlgo
	}
	if o.CachePerWorker == 0 && o.CacheAlgo != "none" {
		o.CachePerWorker = d.CachePerWorker
	}
	if o.ContentSeenSize == 0 {
		o.ContentSeenSize = d.ContentSeenSize
	}
	if o.NoFollow == "" {
		o.NoFollow = d.NoFollow
	}
	if !o.LazyDone {
		o.Frontier.SyncDone = true
	}
	if o.MaxPagesPerHost == 0 {
		o.MaxPagesPerHost = d.MaxPagesPerHost
	}
	if o.SoftPagesPerHost == 0 {
		o.SoftPagesPerHost = max(o.MaxPagesPerHost, 0) / 2
	}
	// Negative means none; the frontier's 0 does.
	o.Frontier.HostBudget.Soft, o.Frontier.HostBudget.Hard = max(o.SoftPagesPerHost, 0), max(o.MaxPagesPerHost, 0)
	if o.Frontier.Workers == 0 {
		o.Frontier.Workers = o.Workers
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, fmt.Errorf("%w: DataDir is required", ErrInvalidOptions))
	}
	if o.Workers < 1 || o.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("%w: Workers %d: want 1 to %d", ErrInvalidOptions, o.Workers, MaxWorkers))
	}
	if strings.ContainsAny(o.ID, " \n\t") || !termsafe.Printable(o.ID) {
		errs = append(errs, fmt.Errorf("%w: ID %q contains white space or control characters", ErrInvalidOptions, o.ID))
	}
	if o.DUEBuffer < 0 || o.DUEFlushInterval < 0 {
		errs = append(errs, fmt.Errorf("%w: DUEBuffer %d or DUEFlushInterval %v < 0", ErrInvalidOptions, o.DUEBuffer, o.DUEFlushInterval))
	}
	// The parts validate again when opened; checking copies here makes a
	// bad part option an ErrInvalidOptions before anything is created.
	fe, fr := o.Fetcher, o.Frontier
	if err := fe.EnsureDefaults().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidOptions, err))
	}
	fr.EnsureDefaults()
	if err := fr.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidOptions, err))
	}
	if o.CacheAlgo != "none" {
		if _, err := cache.New(o.CacheAlgo, max(o.CachePerWorker, 1)); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidOptions, err))
		}
	}
	if o.MaxPagesPerHost < -1 || o.SoftPagesPerHost < -1 {
		errs = append(errs, fmt.Errorf("%w: MaxPagesPerHost %d or SoftPagesPerHost %d < -1", ErrInvalidOptions, o.MaxPagesPerHost, o.SoftPagesPerHost))
	}
	if o.PolitenessKey != PolitenessHost && o.PolitenessKey != PolitenessIP {
		errs = append(errs, fmt.Errorf("%w: PolitenessKey %q: want %q or %q", ErrInvalidOptions, o.PolitenessKey, PolitenessHost, PolitenessIP))
	}
	if err := validateSitemaps(o.Sitemaps); err != nil {
		errs = append(errs, err)
	}
	if o.MaxDepth < 0 || o.MaxDepth >= math.MaxUint16 {
		errs = append(errs, fmt.Errorf("%w: MaxDepth %d out of [0, %d)", ErrInvalidOptions, o.MaxDepth, math.MaxUint16))
	}
	if o.MaxPagesPerHost > 0 && o.SoftPagesPerHost > o.MaxPagesPerHost {
		errs = append(errs, fmt.Errorf("%w: SoftPagesPerHost %d > MaxPagesPerHost %d", ErrInvalidOptions, o.SoftPagesPerHost, o.MaxPagesPerHost))
	}
	if err := validateNoFollow(o.NoFollow); err != nil {
		errs = append(errs, err)
	}
	if err := o.WARCArchive.validate(); err != nil {
		errs = append(errs, err)
	}
	eo := o.extractOptions()
	if err := eo.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidOptions, err))
	}
	return errors.Join(errs...)
}

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
	warcOwn *warc.Writer          // opened by the node (Options.WARCArchive)
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
		if writeID, err = compareIdentity(opts.DataDir, &opts.Identity, opts.ForceIdentity, opts.Logf); err != nil {
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
		Logf:          opts.Logf,
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
		if n.log, err = OpenCrawlLog(filepath.Join(opts.DataDir, crawlLogFile)); err != nil {
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
	return n, nil
}

// frontierOptions are opts.Frontier with OnStarve also kicking the DUE: when
// every queued URL is leased, the URLs the workers found since the last merge
// are the only work left, so waiting for the next timed merge would idle the
// workers (a narrow crawl would be latency-bound by DUEFlushInterval).
func (n *Node) frontierOptions() frontier.Options {
	fo := n.opts.Frontier
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
		n.opts.Logf("crawl: DUE flush on close: %v", err)
	}
	var errs []error
	if err := n.saveRobots(); err != nil {
		n.opts.Logf("%v", err) // costs robots.txt re-fetches after a restart, not URLs
	}
	errs = append(errs, n.due.Close(), n.fr.Close(), n.closeWARC())
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
	errc := make(chan error, n.opts.Workers)
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.saveRobotsEvery(wctx)
	}()
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

// Filter adapts an extract.Filter to a LinkFilter (scopes relative to a seed
// need NewSeedFilter).
type Filter struct{ F *extract.Filter }

// Allow implements LinkFilter.
func (f Filter) Allow(u *urlnorm.URL) bool {
	ok, _ := f.F.Allow(u, "")
	return ok
}

// Stats is a snapshot of a node's figures.
type Stats struct {
	ID      string
	Elapsed time.Duration

	Fetches, FetchOK, FetchRedirect, FetchHTTPErr, FetchErr uint64
	FetchesRequeued                                         uint64 // begun, cut short by the stop or a fatal error: not in Fetches, URL requeued
	RobotsDisallowed, RobotsFetches                         uint64
	Bytes                                                   uint64
	LinksFound, LinksFiltered, LinksLocal, LinksRemote      uint64
	LinksTooDeep                                            uint64 // dropped by MaxDepth (not in LinksFound)
	CacheHits, CacheMisses                                  uint64
	ContentDuplicates                                       uint64 // HTML bodies whose links were not extracted (content seen)
	ContentSeen                                             int    // fingerprints held by the content-seen set (≤ Options.ContentSeenSize)
	WARCRecords, WARCErrors                                 uint64
	NewURLs, BudgetDropped, Received                        uint64
	LookupFailures                                          uint64 // PolitenessKey "ip": names that did not resolve
	PrivateRefused                                          uint64 // URLs not fetched: their host is at a private address (guard on)
	FetchTime                                               time.Duration
	// PagesNoFollow and PagesNoIndex count 2xx pages with the directive
	// (robots <meta> or X-Robots-Tag); LinksNoFollow the links not
	// followed because of nofollow, page-level or rel=nofollow (not in
	// LinksFound; 0 under NoFollowIgnore).
	PagesNoFollow, PagesNoIndex, LinksNoFollow uint64

	Frontier frontier.Stats
	DUE      due.Stats
	Fetcher  fetcher.Stats
	Sitemap  SitemapStats
	// Fenced is "fenced: <why>" while the control plane keeps the node
	// from fetching (MemberOptions.Control), else empty.
	Fenced string
}

// CacheHitRate is the front caches' hit rate over local links, or 0.
func (s Stats) CacheHitRate() float64 {
	if t := s.CacheHits + s.CacheMisses; t > 0 {
		return float64(s.CacheHits) / float64(t)
	}
	return 0
}

// PagesPerSecond is fetches per second of elapsed time.
func (s Stats) PagesPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Fetches) / s.Elapsed.Seconds()
}

// Stats returns a snapshot of the node's figures.
func (n *Node) Stats() Stats {
	m := &n.metrics
	fs := n.fr.Stats()
	seen := 0
	if n.contentSeen != nil {
		seen = n.contentSeen.Len()
	}
	return Stats{ContentSeen: seen,
		PagesNoFollow: m.PagesNoFollow.Load(), PagesNoIndex: m.PagesNoIndex.Load(), LinksNoFollow: m.LinksNoFollow.Load(),
		ID: n.opts.ID, Elapsed: time.Since(n.started),
		Fetches: m.Fetches.Load(), FetchOK: m.FetchOK.Load(), FetchRedirect: m.FetchRedirect.Load(),
		FetchHTTPErr: m.FetchHTTPErr.Load(), FetchErr: m.FetchErr.Load(), FetchesRequeued: m.FetchesRequeued.Load(),
		RobotsDisallowed: m.RobotsDisallowed.Load(), RobotsFetches: m.RobotsFetches.Load(),
		Bytes: m.Bytes.Load(), LinksFound: m.LinksFound.Load(), LinksFiltered: m.LinksFiltered.Load(),
		LinksLocal: m.LinksLocal.Load(), LinksRemote: m.LinksRemote.Load(), LinksTooDeep: m.LinksTooDeep.Load(),
		CacheHits: m.CacheHits.Load(), CacheMisses: m.CacheMisses.Load(),
		ContentDuplicates: m.ContentDuplicates.Load(), NewURLs: m.NewURLs.Load() - min(m.NewURLs.Load(), fs.BudgetDropped),
		WARCRecords: m.WARCRecords.Load(), WARCErrors: m.WARCErrors.Load(),
		BudgetDropped: fs.BudgetDropped, Received: m.Received.Load(), LookupFailures: m.LookupFailures.Load(), PrivateRefused: m.PrivateRefused.Load(),
		FetchTime: time.Duration(m.FetchNanos.Load()),
		Frontier:  fs, DUE: n.due.Stats(), Fetcher: n.ft.Stats(), Sitemap: n.sm.m.stats(),
		Fenced: n.fencedNote(),
	}
}

// fencedNote is Stats.Fenced.
func (n *Node) fencedNote() string {
	if n.fence == nil {
		return ""
	}
	if held, why := n.fence(); !held {
		return "fenced: " + why
	}
	return ""
}

// dueSyncMode is the DUE's log durability for Options.DUEFsync.
func dueSyncMode(fsync bool) due.SyncMode {
	if fsync {
		return due.SyncAlways
	}
	return due.SyncWrite
}
