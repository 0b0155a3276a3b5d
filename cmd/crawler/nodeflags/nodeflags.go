// Package nodeflags binds the command-line flags of a node (crawler crawl,
// fsck, and bench/cmd/sextantprof) to crawl.Options. The libraries read no
// flags (issue 26): this is the only place a node's options meet package
// flag. Every flag's default is crawl.DefaultOptions' value, so that a node
// started from flags, from a node config file or from Go behaves alike.
package nodeflags

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

// NodeFlags are the command-line flags shared by every command that runs a
// node (crawl, node, demo): data dir, workers, fetcher, politeness, filter
// and cache settings. Register them with Add before parsing, then
// call Options. NodeFlags reads no global state and never exits.
type NodeFlags struct {
	fs *flag.FlagSet

	data, id, userAgent, cacheAlgo, scope string
	politenessKey, noFollow, sitemaps     string
	workers, cachePerWorker, maxPages     int
	softPages, contentSeen                int
	maxDepth                              int
	fetchAttempts                         int
	cacheShared, dueFsync                 bool
	skipCheck                             bool
	maxURLLen, maxRepeated                int
	bodyCap                               int64
	allowPrivate                          bool
	minDelay, maxDelay, maxCrawlDelay     time.Duration
	failBackoff, maxFailBackoff           time.Duration
	fetchTimeout, dueFlush                time.Duration
	proxy                                 string // --proxy: none, env or a URL
	factor                                float64
	resolve, suffixes, allow, deny        listFlag
	caFile                                string
	warc                                  crawl.WARCArchive // --warc-*
	rv                                    revisitFlags      // --revisit* (revisit.go)
	dispatch                              string            // --dispatch
}

// listFlag is a repeatable (and comma-separated) string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set refuses an empty item: `--suffix ""` (an unset shell variable) used
// to be dropped silently, leaving a scope other than the one asked for.
func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			return errors.New("empty value")
		}
		*l = append(*l, p)
	}
	return nil
}

// Add defines the node flags on fs and returns the handle that turns them
// into Options once fs is parsed. Their defaults are crawl.DefaultOptions'.
func Add(fs *flag.FlagSet) *NodeFlags {
	f := &NodeFlags{fs: fs}
	d, fr, fl := crawl.DefaultOptions(), crawl.DefaultOptions().Frontier, crawl.DefaultFilterOptions()
	fs.StringVar(&f.data, "data", "", "data directory (frontier, DUE, crawl.log); reusing it resumes the crawl")
	fs.StringVar(&f.id, "id", d.ID, "node name in logs")
	fs.IntVar(&f.workers, "workers", d.Workers, fmt.Sprintf("fetching goroutines (1 to %d)", crawl.MaxWorkers))
	fs.BoolVar(&f.allowPrivate, "allow-private", false, "allow connections to loopback, private and link-local addresses (needed for simweb and --resolve to loopback)")
	fs.Var(&f.resolve, "resolve", "DOMAIN=IP[:PORT]: send DOMAIN and its sub-domains to that address instead of DNS (repeatable; needs --allow-private)")
	fs.DurationVar(&f.minDelay, "min-delay", fr.MinDelay, "least delay between two requests to one host")
	fs.DurationVar(&f.maxDelay, "max-delay", fr.MaxDelay, "largest delay between two requests to one host (Crawl-delay may exceed it)")
	fs.StringVar(&f.politenessKey, "politeness-key", d.PolitenessKey, "what gets one request at a time and the delays: host (host name) or ip (the address it resolves to: names sharing a server share its slot)")
	fs.Float64Var(&f.factor, "factor", fr.Factor, "delay = factor × duration of the host's last fetch, clamped to [min-delay, max-delay] (Mercator: 10)")
	fs.DurationVar(&f.maxCrawlDelay, "max-crawl-delay", fr.MaxCrawlDelay, "cap on a robots.txt Crawl-delay")
	fs.DurationVar(&f.failBackoff, "failure-backoff", fr.FailureBackoff, "delay after a host's first consecutive failure (doubles per failure)")
	fs.DurationVar(&f.maxFailBackoff, "max-failure-backoff", fr.MaxFailureBackoff, "cap on the failure back-off")
	fs.IntVar(&f.maxPages, "max-pages-per-host", d.MaxPagesPerHost, "URLs admitted per host (trap defence, hard budget: later ones are dropped and counted); 0 = unbounded")
	fs.IntVar(&f.softPages, "soft-pages-per-host", -1, "URLs per host admitted at normal priority (soft budget); later ones, up to --max-pages-per-host, are queued at low priority and fetched only when nothing better is queued, so a trap host is slowed before it is cut off (IRLbot's BEAST); -1 = half of --max-pages-per-host, 0 = no soft budget")
	fs.IntVar(&f.maxDepth, "max-depth", d.MaxDepth, "follow links at most this many hops from a seed (seeds are depth 0; a redirect is a hop); 0 = unlimited")
	fs.IntVar(&f.cachePerWorker, "cache-per-worker", d.CachePerWorker, "entries of each worker's front cache of URL fingerprints (0 = none)")
	fs.IntVar(&f.contentSeen, "content-seen-size", d.ContentSeenSize, "fingerprints of HTML bodies kept for the content-seen test (links of a body identical to a remembered one are not extracted; ~9 bytes each; a forgotten body's links are extracted again, never lost); 0 = no content-seen test")
	fs.BoolVar(&f.cacheShared, "cache-shared", d.CacheShared, "one front cache of cache-per-worker × workers entries shared by all workers, instead of one per worker")
	fs.StringVar(&f.cacheAlgo, "cache-algo", d.CacheAlgo, "front cache policy: clock, lru, random, infinite or none")
	fs.StringVar(&f.scope, "scope", crawl.DefaultScope, "hosts a crawl may enter: any, host (the seeds' hosts), domain (the seeds' registered domains) or suffixes (see --suffix)")
	fs.Var(&f.suffixes, "suffix", "domain in scope for --scope suffixes (repeatable)")
	fs.Var(&f.allow, "allow", "domain always in scope (repeatable)")
	fs.Var(&f.deny, "deny", "domain never crawled (repeatable; beats --allow)")
	fs.IntVar(&f.maxURLLen, "max-url-length", fl.MaxURLLength, "longest URL crawled, in bytes")
	fs.IntVar(&f.maxRepeated, "max-repeated-segments", fl.MaxRepeatedSegments, "reject paths repeating a segment more often (-1 = no limit)")
	fs.Int64Var(&f.bodyCap, "body-cap", d.Fetcher.BodyCap, "most body bytes fetched and searched for links")
	fs.StringVar(&f.userAgent, "user-agent", d.Fetcher.UserAgent, "User-Agent header (keep a contact URL in it); its first product token is the robots token, matched in robots.txt, <meta name=TOKEN> and X-Robots-Tag")
	fs.StringVar(&f.noFollow, "nofollow", d.NoFollow, "obey: a page whose <meta name=robots> (or the crawler's own meta) or X-Robots-Tag says nofollow has none of its links followed, and rel=nofollow links are not followed; ignore: follow them anyway (directives still recorded in crawl.log and counted)")
	fs.DurationVar(&f.fetchTimeout, "fetch-timeout", d.Fetcher.FetchTimeout, "bound on one whole fetch, body included")
	fs.IntVar(&f.fetchAttempts, "fetch-attempts", d.FetchAttempts, "times in all a URL whose fetch timed out or failed to connect is tried (in later politeness slots of its host) before it is logged as an error")
	fs.StringVar(&f.proxy, "proxy", crawl.DefaultProxy, "HTTP(S) proxy: env (HTTPS_PROXY, HTTP_PROXY and NO_PROXY, never for loopback targets), none, or http://HOST:PORT for every request (https by CONNECT); --resolve hosts go direct; the private-address guard judges the target, not the proxy")
	fs.DurationVar(&f.dueFlush, "due-flush", d.DUEFlushInterval, "DUE merge interval")
	fs.BoolVar(&f.skipCheck, "skip-check", d.SkipOpenCheck, "open without reading every frontier key (and spool entry) to verify it: 0.2-0.5 s per million queued URLs saved; a damaged block is then found mid-crawl or by 'crawler fsck' instead (the cheap cross-checks still run)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of CA certificates to trust for HTTPS, in addition to the system roots (e.g. simweb --ca-out)")
	fs.BoolVar(&f.dueFsync, "due-fsync", d.DUEFsync, "fsync the DUE's log before each batch of discovered URLs is acknowledged (survives power loss; slower). Default: written to the OS first (survives kill -9), fsynced before every merge")
	fs.StringVar(&f.warc.Dir, "warc-dir", "", "archive every fetch, robots.txt included, as WARC/1.1 files (.warc.gz, a CDXJ index beside each) in this directory; off by default")
	fs.Int64Var(&f.warc.MaxSize, "warc-max-size", d.WARCArchive.MaxSize, "start a new WARC file once one reaches this many bytes")
	fs.StringVar(&f.warc.Prefix, "warc-prefix", d.WARCArchive.Prefix, "WARC file name prefix (files are PREFIX-NODEID-TIMESTAMP-SERIAL.warc.gz)")
	fs.BoolVar(&f.warc.Metadata, "warc-metadata", false, "add a metadata record with each page's outlinks")
	fs.StringVar(&f.warc.Compression, "warc-compression", d.WARCArchive.Compression, "how WARC records are compressed: fast (deflate level 1), huffman (Huffman coding only: less CPU, bigger files), store (no compression, still .warc.gz) or a level 1-9")
	fs.StringVar(&f.dispatch, "dispatch", fr.Dispatch, "which worker fetches a ready host: any (any free worker) or host-affine (each host bound to one worker by a hash, as Mercator binds a back queue to a thread, so each host's links meet one per-worker front cache; a worker whose own hosts all wait out their delay steals another's ready host, counted)")
	fs.StringVar(&f.sitemaps, "sitemaps", d.Sitemaps, "read sitemaps: on (robots.txt Sitemap: lines, else /sitemap.xml, once per host; the URLs they list are crawled under the same scope and rules) or off")
	f.addRevisit(fs)
	return f
}

// DataDir is the value of --data.
func (f *NodeFlags) DataDir() string { return f.data }

// AllowPrivate is the value of --allow-private.
func (f *NodeFlags) AllowPrivate() bool { return f.allowPrivate }

// Set reports whether the flag name was given on the command line.
func (f *NodeFlags) Set(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			set = true
		}
	})
	return set
}

// MaxURLLength is the value of --max-url-length (seeds longer than it are
// reported, see crawl.ReadSeedList).
func (f *NodeFlags) MaxURLLength() int { return f.maxURLLen }

// Options builds node Options from the parsed flags, starting from
// crawl.DefaultOptions. seeds are needed by --scope host and domain (the
// scope is relative to them). Errors wrap crawl.ErrInvalidOptions and name
// the flag.
func (f *NodeFlags) Options(seeds []string) (crawl.Options, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{crawl.ErrInvalidOptions}, args...)...))
	}
	f.check(bad)
	o := crawl.DefaultOptions()
	o.ID, o.DataDir, o.Workers = f.id, f.data, f.workers
	var err error
	o.Fetcher.UserAgent, o.Fetcher.AllowPrivate = f.userAgent, f.allowPrivate
	o.Fetcher.BodyCap, o.Fetcher.FetchTimeout, o.FetchAttempts = f.bodyCap, f.fetchTimeout, f.fetchAttempts
	if o.Fetcher.Resolve, err = crawl.ParseResolve(f.resolve, f.allowPrivate); err != nil {
		errs = append(errs, err)
	}
	if o.Fetcher.TLSConfig, err = crawl.TLSConfigWithCAFile(f.caFile); err != nil {
		errs = append(errs, err)
	}
	if o.Fetcher.Proxy, err = fetcher.ParseProxy(f.proxy); err != nil {
		bad("--proxy: %v", err)
	}
	fr := &o.Frontier
	fr.Factor, fr.MinDelay, fr.MaxDelay, fr.MaxCrawlDelay = f.factor, f.minDelay, f.maxDelay, f.maxCrawlDelay
	fr.FailureBackoff, fr.MaxFailureBackoff = f.failBackoff, f.maxFailBackoff
	fr.Dispatch = f.dispatch
	o.Extract.MaxBytes = f.bodyCap
	o.DUEFlushInterval, o.DUEFsync, o.SkipOpenCheck = f.dueFlush, f.dueFsync, f.skipCheck
	o.CacheAlgo, o.CachePerWorker, o.CacheShared = f.cacheAlgo, f.cachePerWorker, f.cacheShared
	if f.cachePerWorker == 0 {
		o.CacheAlgo = "none"
	}
	o.ContentSeenSize = f.contentSeen
	if f.contentSeen == 0 {
		o.ContentSeenSize = -1 // Options: negative disables, 0 is the default
	}
	o.MaxPagesPerHost, o.SoftPagesPerHost = f.budget()
	o.MaxDepth, o.NoFollow, o.PolitenessKey, o.Sitemaps = f.maxDepth, f.noFollow, f.politenessKey, f.sitemaps
	o.WARCArchive = f.warc
	f.revisitOptions(&o.Revisit, bad)
	if o.Filter, err = f.filter(seeds); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil { // the fetcher's and frontier's too
		return o, err
	}
	return o, nil
}

// budget maps the flags' per-host budgets to Options': the flags say 0
// for none and -1 (soft) for half of the hard budget, Options -1 (hard)
// for none.
func (f *NodeFlags) budget() (hard, soft int) {
	hard, soft = f.maxPages, f.softPages
	if soft == -1 {
		soft = max(hard, 0) / 2
	}
	if hard == 0 {
		hard = -1
	}
	return hard, soft
}

// filter is the link filter of --scope, --suffix, --allow, --deny and the
// URL limits.
func (f *NodeFlags) filter(seeds []string) (crawl.LinkFilter, error) {
	scope, err := crawl.ParseScope(f.scope)
	if err != nil {
		return nil, err
	}
	if scope == extract.ScopeSuffixes && len(f.suffixes) == 0 {
		return nil, fmt.Errorf("%w: --scope suffixes needs at least one --suffix", crawl.ErrInvalidOptions)
	}
	fo := extract.FilterOptions{
		MaxURLLength: f.maxURLLen, MaxRepeatedSegments: f.maxRepeated, Scope: scope,
		Suffixes: f.suffixes, Allow: f.allow, Deny: f.deny,
	}
	lf, err := crawl.NewSeedFilter(fo, seeds)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", crawl.ErrInvalidOptions, err)
	}
	return lf, nil
}

// check reports the flag values Options would otherwise replace by a
// default or report under a field name rather than the flag's.
func (f *NodeFlags) check(bad func(format string, args ...any)) {
	if f.data == "" {
		bad("--data is required")
	}
	// Checked here, not only in Validate, so that the error names the flag
	// and a 0 (which Options would replace by a default) is refused too.
	if f.workers < 1 || f.workers > crawl.MaxWorkers {
		bad("--workers %d: want 1 to %d", f.workers, crawl.MaxWorkers)
	}
	if !(f.factor >= 0) || math.IsInf(f.factor, 1) {
		bad("--factor %v: want a finite number ≥ 0", f.factor)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"min-delay", f.minDelay}, {"max-delay", f.maxDelay}, {"max-crawl-delay", f.maxCrawlDelay},
		{"failure-backoff", f.failBackoff}, {"max-failure-backoff", f.maxFailBackoff},
		{"fetch-timeout", f.fetchTimeout}, {"due-flush", f.dueFlush},
	} {
		if d.v < 0 {
			bad("--%s %v must not be negative", d.name, d.v)
		}
	}
	if f.maxURLLen < 1 {
		bad("--max-url-length %d: want ≥ 1", f.maxURLLen)
	}
	if f.maxRepeated < -1 {
		bad("--max-repeated-segments %d: want ≥ 0, or -1 for no limit", f.maxRepeated)
	}
	if f.maxDepth < 0 {
		bad("--max-depth %d < 0", f.maxDepth)
	}
	if f.fetchAttempts < 1 {
		bad("--fetch-attempts %d: want ≥ 1", f.fetchAttempts)
	}
	if f.bodyCap <= 0 {
		bad("--body-cap %d must be positive", f.bodyCap)
	}
	if f.maxPages < 0 {
		bad("--max-pages-per-host %d < 0", f.maxPages)
	}
	switch soft := f.softPages; {
	case soft < -1:
		bad("--soft-pages-per-host %d: want ≥ 0, or -1 for half of --max-pages-per-host", soft)
	case f.maxPages > 0 && soft > f.maxPages:
		bad("--soft-pages-per-host %d > --max-pages-per-host %d", soft, f.maxPages)
	}
	if f.noFollow != crawl.NoFollowObey && f.noFollow != crawl.NoFollowIgnore {
		bad("--nofollow %q: want %s or %s", f.noFollow, crawl.NoFollowObey, crawl.NoFollowIgnore)
	}
	if f.contentSeen < 0 {
		bad("--content-seen-size %d < 0", f.contentSeen)
	}
	if f.cachePerWorker < 0 {
		bad("--cache-per-worker %d < 0", f.cachePerWorker)
	}
}
