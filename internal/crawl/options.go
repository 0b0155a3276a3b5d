package crawl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// MaxWorkers bounds Options.Workers (and --workers, and the node config's
// workers). Each worker has its own front cache, buffers and goroutine;
// 100,000 workers took 1.09 GB before fetching anything, and politeness
// (one request per host at a time) leaves more than a few thousand idle
// on any real crawl.
const MaxWorkers = 4096

// NodeFlags are the command-line flags shared by every command that runs a
// node (crawl, node, demo): data dir, workers, fetcher, politeness, filter
// and cache settings. Register them with AddNodeFlags before parsing, then
// call Options. NodeFlags reads no global state and never exits.
type NodeFlags struct {
	fs *flag.FlagSet

	data, id, userAgent, cacheAlgo, scope string
	politenessKey, noFollow, sitemaps     string
	workers, cachePerWorker, maxPages     int
	softPages, contentSeen                int
	maxDepth                              int
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
	warc                                  WARCArchive // --warc-*
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

// AddNodeFlags defines the node flags on fs and returns the handle that
// turns them into Options once fs is parsed.
func AddNodeFlags(fs *flag.FlagSet) *NodeFlags {
	f := &NodeFlags{fs: fs}
	fr := frontier.DefaultOptions()
	fs.StringVar(&f.data, "data", "", "data directory (frontier, DUE, crawl.log); reusing it resumes the crawl")
	fs.StringVar(&f.id, "id", "n0", "node name in logs")
	fs.IntVar(&f.workers, "workers", 64, fmt.Sprintf("fetching goroutines (1 to %d)", MaxWorkers))
	fs.BoolVar(&f.allowPrivate, "allow-private", false, "allow connections to loopback, private and link-local addresses (needed for simweb and --resolve to loopback)")
	fs.Var(&f.resolve, "resolve", "DOMAIN=IP[:PORT]: send DOMAIN and its sub-domains to that address instead of DNS (repeatable; needs --allow-private)")
	fs.DurationVar(&f.minDelay, "min-delay", fr.MinDelay, "least delay between two requests to one host")
	fs.DurationVar(&f.maxDelay, "max-delay", fr.MaxDelay, "largest delay between two requests to one host (Crawl-delay may exceed it)")
	fs.StringVar(&f.politenessKey, "politeness-key", PolitenessHost, "what gets one request at a time and the delays: host (host name) or ip (the address it resolves to: names sharing a server share its slot)")
	fs.Float64Var(&f.factor, "factor", fr.Factor, "delay = factor × duration of the host's last fetch, clamped to [min-delay, max-delay] (Mercator: 10)")
	fs.DurationVar(&f.maxCrawlDelay, "max-crawl-delay", fr.MaxCrawlDelay, "cap on a robots.txt Crawl-delay")
	fs.DurationVar(&f.failBackoff, "failure-backoff", fr.FailureBackoff, "delay after a host's first consecutive failure (doubles per failure)")
	fs.DurationVar(&f.maxFailBackoff, "max-failure-backoff", fr.MaxFailureBackoff, "cap on the failure back-off")
	fs.IntVar(&f.maxPages, "max-pages-per-host", 1000, "URLs admitted per host (trap defence, hard budget: later ones are dropped and counted); 0 = unbounded")
	fs.IntVar(&f.softPages, "soft-pages-per-host", -1, "URLs per host admitted at normal priority (soft budget); later ones, up to --max-pages-per-host, are queued at low priority and fetched only when nothing better is queued, so a trap host is slowed before it is cut off (IRLbot's BEAST); -1 = half of --max-pages-per-host, 0 = no soft budget")
	fs.IntVar(&f.maxDepth, "max-depth", 0, "follow links at most this many hops from a seed (seeds are depth 0; a redirect is a hop); 0 = unlimited")
	fs.IntVar(&f.cachePerWorker, "cache-per-worker", 512, "entries of each worker's front cache of URL fingerprints (0 = none)")
	fs.IntVar(&f.contentSeen, "content-seen-size", DefaultContentSeenSize, "fingerprints of HTML bodies kept for the content-seen test (links of a body identical to a remembered one are not extracted; ~9 bytes each; a forgotten body's links are extracted again, never lost); 0 = no content-seen test")
	fs.BoolVar(&f.cacheShared, "cache-shared", false, "one front cache of cache-per-worker × workers entries shared by all workers, instead of one per worker")
	fs.StringVar(&f.cacheAlgo, "cache-algo", "clock", "front cache policy: clock, lru, random, infinite or none")
	fs.StringVar(&f.scope, "scope", "any", "hosts a crawl may enter: any, host (the seeds' hosts), domain (the seeds' registered domains) or suffixes (see --suffix)")
	fs.Var(&f.suffixes, "suffix", "domain in scope for --scope suffixes (repeatable)")
	fs.Var(&f.allow, "allow", "domain always in scope (repeatable)")
	fs.Var(&f.deny, "deny", "domain never crawled (repeatable; beats --allow)")
	fs.IntVar(&f.maxURLLen, "max-url-length", 2048, "longest URL crawled, in bytes")
	fs.IntVar(&f.maxRepeated, "max-repeated-segments", 3, "reject paths repeating a segment more often (-1 = no limit)")
	fs.Int64Var(&f.bodyCap, "body-cap", 16<<20, "most body bytes fetched and searched for links")
	fs.StringVar(&f.userAgent, "user-agent", fetcher.DefaultUserAgent, "User-Agent header (keep a contact URL in it); its first product token is the robots token, matched in robots.txt, <meta name=TOKEN> and X-Robots-Tag")
	fs.StringVar(&f.noFollow, "nofollow", NoFollowObey, "obey: a page whose <meta name=robots> (or the crawler's own meta) or X-Robots-Tag says nofollow has none of its links followed, and rel=nofollow links are not followed; ignore: follow them anyway (directives still recorded in crawl.log and counted)")
	fs.DurationVar(&f.fetchTimeout, "fetch-timeout", 60*time.Second, "bound on one whole fetch, body included")
	fs.StringVar(&f.proxy, "proxy", "env", "HTTP(S) proxy: env (HTTPS_PROXY, HTTP_PROXY and NO_PROXY, never for loopback targets), none, or http://HOST:PORT for every request (https by CONNECT); --resolve hosts go direct; the private-address guard judges the target, not the proxy")
	fs.DurationVar(&f.dueFlush, "due-flush", 500*time.Millisecond, "DUE merge interval")
	fs.BoolVar(&f.skipCheck, "skip-check", false, "open without reading every frontier key (and spool entry) to verify it: 0.2-0.5 s per million queued URLs saved; a damaged block is then found mid-crawl or by 'crawler fsck' instead (the cheap cross-checks still run)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of CA certificates to trust for HTTPS, in addition to the system roots (e.g. simweb --ca-out)")
	fs.BoolVar(&f.dueFsync, "due-fsync", false, "fsync the DUE's log before each batch of discovered URLs is acknowledged (survives power loss; slower). Default: written to the OS first (survives kill -9), fsynced before every merge")
	fs.StringVar(&f.warc.Dir, "warc-dir", "", "archive every fetch, robots.txt included, as WARC/1.1 files (.warc.gz, a CDXJ index beside each) in this directory; off by default")
	fs.Int64Var(&f.warc.MaxSize, "warc-max-size", 1<<30, "start a new WARC file once one reaches this many bytes")
	fs.StringVar(&f.warc.Prefix, "warc-prefix", "sextant", "WARC file name prefix (files are PREFIX-NODEID-TIMESTAMP-SERIAL.warc.gz)")
	fs.BoolVar(&f.warc.Metadata, "warc-metadata", false, "add a metadata record with each page's outlinks")
	fs.StringVar(&f.sitemaps, "sitemaps", SitemapsOn, "read sitemaps: on (robots.txt Sitemap: lines, else /sitemap.xml, once per host; the URLs they list are crawled under the same scope and rules) or off")
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

// Options builds node Options from the parsed flags. seeds are needed by
// --scope host and domain (the scope is relative to them). Errors wrap
// ErrInvalidOptions and name the flag.
func (f *NodeFlags) Options(seeds []string) (Options, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if f.data == "" {
		bad("--data is required")
	}
	// Checked here, not only in Validate, so that the error names the flag
	// and a 0 (which Options would replace by a default) is refused too.
	if f.workers < 1 || f.workers > MaxWorkers {
		bad("--workers %d: want 1 to %d", f.workers, MaxWorkers)
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
	if f.bodyCap <= 0 {
		bad("--body-cap %d must be positive", f.bodyCap)
	}
	if f.maxPages < 0 {
		bad("--max-pages-per-host %d < 0", f.maxPages)
	}
	soft := f.softPages
	switch {
	case soft == -1:
		soft = max(f.maxPages, 0) / 2
	case soft < 0:
		bad("--soft-pages-per-host %d: want ≥ 0, or -1 for half of --max-pages-per-host", soft)
	case f.maxPages > 0 && soft > f.maxPages:
		bad("--soft-pages-per-host %d > --max-pages-per-host %d", soft, f.maxPages)
	}
	if err := validateNoFollow(f.noFollow); err != nil {
		bad("--nofollow %q: want %s or %s", f.noFollow, NoFollowObey, NoFollowIgnore)
	}
	if f.contentSeen < 0 {
		bad("--content-seen-size %d < 0", f.contentSeen)
	}
	contentSeen := f.contentSeen
	if contentSeen == 0 {
		contentSeen = -1 // Options: negative disables, 0 is the default
	}
	if f.cachePerWorker < 0 {
		bad("--cache-per-worker %d < 0", f.cachePerWorker)
	}
	algo, size := f.cacheAlgo, f.cachePerWorker
	if size == 0 {
		algo = "none"
	}
	resolve, err := ParseResolve(f.resolve, f.allowPrivate)
	if err != nil {
		errs = append(errs, err)
	}
	tlsConf, err := TLSConfigWithCAFile(f.caFile)
	if err != nil {
		errs = append(errs, err)
	}
	scope, err := ParseScope(f.scope)
	if err != nil {
		errs = append(errs, err)
	}
	fo := extract.FilterOptions{
		MaxURLLength: f.maxURLLen, MaxRepeatedSegments: f.maxRepeated, Scope: scope,
		Suffixes: f.suffixes, Allow: f.allow, Deny: f.deny,
	}
	if scope == extract.ScopeSuffixes && len(f.suffixes) == 0 {
		bad("--scope suffixes needs at least one --suffix")
	}
	var lf LinkFilter
	if err == nil {
		if lf, err = NewSeedFilter(fo, seeds); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", ErrInvalidOptions, err))
		}
	}
	proxy, err := fetcher.ParseProxy(f.proxy)
	if err != nil {
		bad("--proxy: %v", err)
	}
	o := Options{
		ID: f.id, DataDir: f.data, Workers: f.workers,
		Fetcher: fetcher.Options{
			UserAgent: f.userAgent, AllowPrivate: f.allowPrivate, Resolve: resolve,
			BodyCap: f.bodyCap, FetchTimeout: f.fetchTimeout, Proxy: proxy, TLSConfig: tlsConf,
		},
		Frontier: frontier.Options{
			Workers: f.workers, Factor: f.factor, FactorSet: true, MinDelay: f.minDelay, MaxDelay: f.maxDelay,
			MaxCrawlDelay: f.maxCrawlDelay, FailureBackoff: f.failBackoff, MaxFailureBackoff: f.maxFailBackoff,
		},
		Extract:          extract.Options{MaxBytes: f.bodyCap},
		DUEFlushInterval: f.dueFlush,
		DUEFsync:         f.dueFsync,
		SkipOpenCheck:    f.skipCheck,
		CacheAlgo:        algo,
		CachePerWorker:   size,
		CacheShared:      f.cacheShared,
		ContentSeenSize:  contentSeen,
		MaxPagesPerHost:  f.maxPages,
		SoftPagesPerHost: soft,
		MaxDepth:         f.maxDepth,
		NoFollow:         f.noFollow,
		PolitenessKey:    f.politenessKey,
		Sitemaps:         f.sitemaps,
		Filter:           lf,
		WARCArchive:      f.warc,
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

// MaxURLLength is the value of --max-url-length (seeds longer than it are
// reported, see ReadSeedList).
func (f *NodeFlags) MaxURLLength() int { return f.maxURLLen }

// ParseScope parses a --scope value: any, host, domain or suffixes.
func ParseScope(s string) (extract.Scope, error) {
	switch s {
	case "any":
		return extract.ScopeAny, nil
	case "host", "same-host":
		return extract.ScopeSameHost, nil
	case "domain", "same-domain":
		return extract.ScopeSameDomain, nil
	case "suffixes", "suffix":
		return extract.ScopeSuffixes, nil
	}
	return 0, fmt.Errorf("%w: --scope %q: want any, host, domain or suffixes", ErrInvalidOptions, s)
}

// ParseResolve parses DOMAIN=IP[:PORT] pairs into fetcher.Options.Resolve.
// The address must be an IP literal. Any override needs allowPrivate: a
// loopback or private target is refused by the fetcher's guard otherwise,
// and sending a domain's traffic elsewhere is an operator's decision.
func ParseResolve(pairs []string, allowPrivate bool) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	var errs []error
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		dom, addr, ok := strings.Cut(p, "=")
		dom = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(dom), "."))
		addr = strings.TrimSpace(addr)
		if !ok || dom == "" || addr == "" || strings.ContainsAny(dom, "/:@ ") {
			errs = append(errs, fmt.Errorf("%w: --resolve %q: want DOMAIN=IP[:PORT]", ErrInvalidOptions, p))
			continue
		}
		ipStr := addr
		if h, port, err := net.SplitHostPort(addr); err == nil {
			if _, perr := netip.ParseAddrPort(addr); perr != nil || port == "" {
				errs = append(errs, fmt.Errorf("%w: --resolve %q: bad port", ErrInvalidOptions, p))
				continue
			}
			ipStr = h
		}
		ip, err := netip.ParseAddr(ipStr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: --resolve %q: %q is not an IP address", ErrInvalidOptions, p, ipStr))
			continue
		}
		if !allowPrivate {
			what := "a public address"
			if ip.IsLoopback() {
				what = "a loopback address"
			} else if ip.IsPrivate() || ip.IsLinkLocalUnicast() {
				what = "a private address"
			}
			errs = append(errs, fmt.Errorf("%w: --resolve %q: %s; pass --allow-private to override resolution", ErrInvalidOptions, p, what))
			continue
		}
		m[dom] = addr
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// seedFilter is a LinkFilter whose host and domain scopes are relative to
// a fixed set of seeds (the DUE does not carry each URL's seed).
type seedFilter struct {
	f       *extract.Filter
	scope   extract.Scope
	hosts   map[string]string // host name → seed host
	domains map[string]string // registered domain → seed host
	any     string            // some seed host, for the Allow list
	maxURL  int               // opts.MaxURLLength, for the crawl log
}

// MaxURLLength is the longest URL the filter admits (-1: no limit); the
// crawl log keeps URLs up to it whole (CrawlLog.SetMaxURLLength).
func (s *seedFilter) MaxURLLength() int { return s.maxURL }

// NewSeedFilter returns a LinkFilter applying opts; with ScopeSameHost or
// ScopeSameDomain a URL is in scope if it is on the host (or registered
// domain) of any of seeds. Link depth is the node's (Options.MaxDepth).
func NewSeedFilter(opts extract.FilterOptions, seeds []string) (LinkFilter, error) {
	f, err := extract.NewFilter(opts)
	if err != nil {
		return nil, err
	}
	sf := &seedFilter{f: f, scope: opts.Scope, hosts: map[string]string{}, domains: map[string]string{}, maxURL: opts.MaxURLLength}
	for _, s := range seeds {
		u, err := urlnorm.Parse(s)
		if err != nil || !u.HasHost() {
			continue
		}
		h := u.Hostname()
		sf.hosts[h] = u.Host()
		if d, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
			sf.domains[d] = u.Host()
		} else {
			sf.domains[h] = u.Host()
		}
		if sf.any == "" {
			sf.any = u.Host()
		}
	}
	if (opts.Scope == extract.ScopeSameHost || opts.Scope == extract.ScopeSameDomain) && sf.any == "" {
		return nil, errors.New("crawl: scope host or domain needs at least one seed")
	}
	return sf, nil
}

// Allow implements LinkFilter.
func (s *seedFilter) Allow(u *urlnorm.URL) bool {
	seed := s.any
	switch s.scope {
	case extract.ScopeSameHost:
		if h, ok := s.hosts[u.Hostname()]; ok {
			seed = h
		}
	case extract.ScopeSameDomain:
		d, err := publicsuffix.EffectiveTLDPlusOne(u.Hostname())
		if err != nil {
			d = u.Hostname()
		}
		if h, ok := s.domains[d]; ok {
			seed = h
		}
	}
	ok, _ := s.f.Allow(u, seed)
	return ok
}

// TLSConfigWithCAFile is the fetcher's TLS config for --ca-file: the system
// roots plus every certificate of the PEM file path; nil (the fetcher's
// default, system roots only) when path is "". An unreadable file, or one
// without a PEM certificate, is an ErrInvalidOptions naming the flag: a
// crawl that silently trusted nothing more would fail every handshake.
func TLSConfigWithCAFile(path string) (*tls.Config, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --ca-file: %v", ErrInvalidOptions, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool() // no system roots here: the file's alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: --ca-file %s: no PEM certificate in it", ErrInvalidOptions, path)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
