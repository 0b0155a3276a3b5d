package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/revisit"
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
	Fetcher fetcher.Options
	// FetchAttempts is how many times in all a URL whose fetch timed out
	// or failed to connect is tried (each in a later politeness slot of
	// its host, failure back-off obeyed) before it is logged as an error
	// (fetchretry.go). Default: DefaultOptions (3); at least 1.
	FetchAttempts int
	Frontier      frontier.Options
	Extract       extract.Options
	LazyDone      bool
	// ReleaseEarly releases a host's politeness slot as soon as its
	// response is read (frontier.Release, as Mercator does) instead of
	// once the page is processed and its completion durable: the host's
	// next fetch need not wait for link extraction, the crawl log and the
	// fsync. The URL stays in the frontier until then (a kill -9
	// re-fetches it, as any fetch in flight), so durability is unchanged;
	// a host may then have two URLs leased, one of them past its fetch.
	// Off by default: on a loaded 2-core machine it did not speed up a
	// one-host crawl (docs/bench/onehost.md). Fetching ahead (the default)
	// releases the host the same way: ReleaseEarly matters only where
	// fetching ahead is off or not used (NoFetchAhead, a WARC writer).
	ReleaseEarly bool
	// NoFetchAhead turns fetching ahead off. By default a worker that has
	// read a response releases the host as ReleaseEarly does, leases the
	// next ready URL and starts its request while it finishes the page
	// (ahead.go); the frontier then hands out at most Workers leases and
	// makes completions durable in groups (frontier.Options.MaxLeases), so
	// a kill -9 still repeats at most one fetch per worker. Not used with
	// a WARC writer, whose tails already take a page's end off the worker.
	NoFetchAhead bool
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
	// (trap defence; -1 or 0 with SoftPagesPerHost set: no bound); later
	// URLs are dropped and counted (Stats.BudgetDropped). Beyond
	// SoftPagesPerHost (0 or -1: none) a host's URLs are admitted at low
	// priority. With neither set, both take DefaultOptions' values (the
	// flags' and the node config's: a hard budget, and half of it soft) (Frontier.HostBudget.
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
	// Logger receives rare events. The DUE, the WARC writer and (unless
	// they have their own) the frontier and the fetcher log to it too.
	// Default: discard (see internal/logging).
	Logger *slog.Logger
	// Identity, if its Kind is set, is compared with DataDir/IDENTITY
	// (written at the first Open; Node is set to ID): a directory made by
	// another kind of run, node or seeds is refused (ErrIdentityMismatch)
	// unless ForceIdentity, which rewrites it with a warning through Logger.
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
	// Revisit, if enabled, makes the crawl continuous (revisit.go): every
	// URL fetched is fetched again after its interval, with conditional
	// requests, and the node is never idle (Run ends with its context or
	// MaxFetches). Off by default.
	Revisit revisit.Options

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
	if o.FetchAttempts == 0 {
		o.FetchAttempts = d.FetchAttempts
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
	if o.MaxPagesPerHost == 0 && o.SoftPagesPerHost == 0 {
		o.MaxPagesPerHost, o.SoftPagesPerHost = d.MaxPagesPerHost, d.SoftPagesPerHost
	}
	// Negative means none; the frontier's 0 does.
	o.Frontier.HostBudget.Soft, o.Frontier.HostBudget.Hard = max(o.SoftPagesPerHost, 0), max(o.MaxPagesPerHost, 0)
	if o.Frontier.Workers == 0 {
		o.Frontier.Workers = o.Workers
	}
	if !o.NoFetchAhead && o.WARC == nil && o.Frontier.MaxLeases == 0 {
		o.Frontier.MaxLeases = o.Workers
	}
	o.Logger = logging.OrDiscard(o.Logger)
	o.Revisit.EnsureDefaults()
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
	if o.FetchAttempts < 1 {
		errs = append(errs, fmt.Errorf("%w: FetchAttempts %d: want at least 1", ErrInvalidOptions, o.FetchAttempts))
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
	if err := o.Revisit.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidOptions, err))
	}
	eo := o.extractOptions()
	if err := eo.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidOptions, err))
	}
	return errors.Join(errs...)
}

// Filter adapts an extract.Filter to a LinkFilter (scopes relative to a seed
// need NewSeedFilter).
type Filter struct{ F *extract.Filter }

// Allow implements LinkFilter.
func (f Filter) Allow(u *urlnorm.URL) bool {
	ok, _ := f.F.Allow(u, "")
	return ok
}
