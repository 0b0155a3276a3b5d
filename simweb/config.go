package simweb

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("simweb: invalid config")

// Pathology is a kind of misbehaviour a host can have. Every host has at most
// one pathology; the others are ordinary.
type Pathology uint8

// The pathologies. Robots* ones only change /robots.txt; the others add
// special pages to the host (linked from its home page and, rarely, from its
// articles) or change how its articles are served.
const (
	Normal         Pathology = iota
	RobotsDisallow           // robots.txt disallows a directory and /private/
	Robots404                // robots.txt is 404 (allow all)
	Robots5xx                // robots.txt is 503 (disallow all: nothing on the host is fetched)
	RobotsRedirect           // robots.txt redirects 1–7 hops (more than 5 ⇒ treated as 404), some to another host
	RobotsGarbage            // robots.txt is binary garbage without directives (allow all)
	RobotsHuge               // robots.txt > 500 KiB; a Disallow after 500 KiB must be ignored
	CrawlDelay               // robots.txt has Crawl-delay
	Redirects                // redirect chains (301/302/307/308), loops, cross-host redirects
	Errors                   // 404/410/500/503 pages whose bodies carry decoy links
	Slow                     // every response waits Config.SlowLatency more
	Stall                    // /stall/ pages send their links, then stall mid-body
	Huge                     // /huge/ pages up to Config.HugeMax bytes, streamed
	GzipBomb                 // /bomb/ pages: gzip that inflates to Config.BombSize
	WrongType                // wrong or missing Content-Type
	BadCharset               // bogus/legacy charsets and invalid UTF-8 in articles
	Malformed                // malformed HTML and decoy links in comments/scripts
	Trap                     // infinite URL spaces: calendars, session ids, ever deeper paths
	numPathologies
)

var pathologyNames = [...]string{"normal", "robots-disallow", "robots-404", "robots-5xx",
	"robots-redirect", "robots-garbage", "robots-huge", "crawl-delay", "redirects", "errors",
	"slow", "stall", "huge", "gzip-bomb", "wrong-type", "bad-charset", "malformed", "trap"}

func (p Pathology) String() string {
	if int(p) < len(pathologyNames) {
		return pathologyNames[p]
	}
	return fmt.Sprintf("pathology(%d)", p)
}

// Pathologies lists every pathology except Normal, in order.
func Pathologies() []Pathology {
	ps := make([]Pathology, 0, numPathologies-1)
	for p := Pathology(1); p < numPathologies; p++ {
		ps = append(ps, p)
	}
	return ps
}

// Config describes a synthetic web. The zero value of a field means its
// default (see EnsureDefaults); the same Config always yields the same web.
type Config struct {
	Seed  uint64 // any value; 0 is a valid seed
	Hosts int    // number of hosts h00000.<Domain> …; default 300
	// Domain is the reserved domain every host lives under; default "sim.test".
	Domain string

	// Articles per host: log-normal with this mean and sigma, clamped to
	// [MinPagesPerHost, MaxPagesPerHost]. Defaults 50, 0.8, 5, 500.
	PagesPerHost      float64
	PagesPerHostSigma float64
	MinPagesPerHost   int
	MaxPagesPerHost   int
	// SlowHostPages caps the articles of Slow and CrawlDelay hosts so that a
	// polite crawl of them stays short; default 40.
	SlowHostPages int

	// Out-degree of an HTML page: log-normal with this median and mean
	// (defaults 23 and 60, Broder et al.), capped at MaxLinks (default 1500).
	LinksMedian float64
	LinksMean   float64
	MaxLinks    int
	// SameHostShare is the probability that a new link goes to the page's
	// own host (default 0.9). Big pages on small hosts run out of same-host
	// targets and then link elsewhere half the time, so the measured share
	// of same-host links is lower: ≈ 0.75 on DefaultConfig (Mercator: 0.815).
	SameHostShare float64
	// RepeatShare is the share of a page's links that repeat an earlier
	// link of the page (default 0.3).
	RepeatShare float64
	// NavLinks is the number of site-navigation links every article and
	// home page of a host repeats (home, directory indexes, the most
	// popular articles: a sidebar); they count toward the out-degree.
	// Default 0: none (the webs the tests and the demo use). Real sites
	// have tens; the caching study (docs/caching-study.md) shows that this
	// boilerplate is what gives a real site's URL stream its small-cache
	// hit rate.
	NavLinks int
	// DeadLinkShare is the share of a page's new same-host page links that
	// go to pages that do not exist (404), drawn from a pool of 8 per
	// article of the host (a wiki's red links: a long tail of URLs seen
	// once or twice). Default 0 (besides 1.5% of links to 3 dead URLs per
	// host that every web has).
	DeadLinkShare float64
	// ZipfPages and ZipfHosts are the exponents of the popularity of pages
	// within a host and of hosts (defaults 1.1 and 0.9).
	ZipfPages float64
	ZipfHosts float64
	// PageSizeMedian is the median HTML page size in bytes (default 20000);
	// sizes are log-normal with sigma PageSizeSigma (default 0.8), capped at
	// 1 MiB.
	PageSizeMedian int
	PageSizeSigma  float64

	// Shares gives, per pathology, the share of hosts that have it. A share
	// > 0 gives at least one host. Defaults: see DefaultConfig. Host 0 is
	// always Normal (it is the first seed).
	Shares map[Pathology]float64
	// NoPathologies leaves every host Normal (Shares is ignored).
	NoPathologies bool

	// Latency of every response: log-normal with this median, capped at
	// 10×median (default 1 ms). Slow hosts add SlowLatency (default 30 ms).
	LatencyMedian time.Duration
	SlowLatency   time.Duration
	// StallTime is how long /stall/ pages pause mid-body (default 1 s).
	StallTime time.Duration
	// CrawlDelay is the largest Crawl-delay a CrawlDelay host announces
	// (hosts announce between CrawlDelay/4 and CrawlDelay; default 0.4 s).
	CrawlDelay time.Duration
	// HugeMax is the size of the largest /huge/ page (default 64 MiB); the
	// others are HugeMax/2 and HugeMax/4.
	HugeMax int64
	// BombSize is the inflated size of a gzip bomb (default 1 GiB).
	BombSize int64
	// SitemapShare is the share of Normal hosts that serve sitemaps
	// (robots.txt Sitemap: lines, /sitemap.xml, an index of gzip and text
	// sitemaps) listing pages that no link reaches; a share > 0 gives at
	// least one host. Default 0: none; the presets turn it on (a crawler
	// reads sitemaps by default). See sitemaps.go and Rules.Sitemaps.
	SitemapShare float64

	// HTTPS (tls.go). HTTPSShare is the share of hosts that serve HTTPS
	// only (nothing listens on their port 80); RedirectHTTPSShare the share
	// that serve both and answer plain HTTP with a 301 to https (some links
	// to them are spelled http://). H2Share is the share of those HTTPS
	// hosts that offer HTTP/2 by ALPN, HSTSShare the share of HTTPS-only
	// hosts that send Strict-Transport-Security. Each host draws its mode
	// from a hash, so the shares are approximate. Zero means zero (plain
	// HTTP everywhere: the web is then what it was before HTTPS); the
	// presets set them (see webHTTPS).
	HTTPSShare         float64
	RedirectHTTPSShare float64
	H2Share            float64
	HSTSShare          float64
}

// webHTTPS gives c the presets' HTTPS: as on the web crawlers see, most
// hosts are HTTPS (55% HTTPS only, 20% redirecting http→https, 25% plain),
// 40% of those offer h2 and half the HTTPS-only ones send HSTS.
func webHTTPS(c *Config) {
	c.HTTPSShare, c.RedirectHTTPSShare, c.H2Share, c.HSTSShare = 0.55, 0.2, 0.4, 0.5
}

// DefaultConfig is the demo's web: 300 hosts, about 15 000 articles and
// 29 000 reachable URLs in all, every pathology on a few hosts, latencies small enough
// that a crawl finishes in about a minute.
func DefaultConfig() Config {
	c := Config{Seed: 1, SitemapShare: 0.1}
	webHTTPS(&c)
	c.EnsureDefaults()
	return c
}

// SmallConfig is the web tests use: 30 hosts, about 2 500 URLs, every
// pathology on at least one host, latencies ≤ 50 ms and stalls ≤ 1 s.
func SmallConfig() Config {
	c := Config{
		Seed: 7, Hosts: 30, PagesPerHost: 60, MaxPagesPerHost: 200, SlowHostPages: 15,
		LatencyMedian: 500 * time.Microsecond, SlowLatency: 20 * time.Millisecond,
		StallTime: 500 * time.Millisecond, CrawlDelay: 200 * time.Millisecond,
		HugeMax: 8 << 20, BombSize: 64 << 20, SitemapShare: 0.2,
		Shares: map[Pathology]float64{},
	}
	for _, p := range Pathologies() {
		c.Shares[p] = 1.0 / 30
	}
	c.Shares[RobotsRedirect] = 2.0 / 30 // both the ≤5-hop and the >5-hop variant
	webHTTPS(&c)
	c.EnsureDefaults()
	return c
}

// ScaleConfig is the web of the scale benchmark (bench/cmd/scale,
// docs/bench/scale.md): DefaultConfig's link and page shape on 100 000
// hosts (≈ 5·10⁶ articles, ≈ 10⁷ reachable URLs), every host
// well-behaved, plain HTTP and no sitemaps, so that what is measured is the
// crawler's cost per URL at size and its oracle can be streamed
// (StreamOracle). Smaller runs lower Hosts and keep the per-host shape.
func ScaleConfig() Config {
	c := Config{Seed: 29, Hosts: 100_000, NoPathologies: true}
	c.EnsureDefaults()
	return c
}

func defaultShares() map[Pathology]float64 {
	m := map[Pathology]float64{}
	for _, p := range Pathologies() {
		m[p] = 0.01 // 3 hosts of 300
	}
	m[RobotsDisallow] = 0.05
	m[Robots404] = 0.03
	m[Redirects] = 0.03
	m[Errors] = 0.03
	m[WrongType] = 0.02
	m[Malformed] = 0.02
	return m
}

// EnsureDefaults fills every zero field with its default.
func (c *Config) EnsureDefaults() {
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	setInt(&c.Hosts, 300)
	if c.Domain == "" {
		c.Domain = "sim.test"
	}
	setF(&c.PagesPerHost, 50)
	setF(&c.PagesPerHostSigma, 0.8)
	setInt(&c.MinPagesPerHost, 5)
	setInt(&c.MaxPagesPerHost, 500)
	setInt(&c.SlowHostPages, 40)
	setF(&c.LinksMedian, 23)
	setF(&c.LinksMean, 60)
	setInt(&c.MaxLinks, 1500)
	setF(&c.SameHostShare, 0.9)
	setF(&c.RepeatShare, 0.3)
	setF(&c.ZipfPages, 1.1)
	setF(&c.ZipfHosts, 0.9)
	setInt(&c.PageSizeMedian, 20000)
	setF(&c.PageSizeSigma, 0.8)
	if c.Shares == nil {
		c.Shares = defaultShares()
	}
	setD(&c.LatencyMedian, time.Millisecond)
	setD(&c.SlowLatency, 30*time.Millisecond)
	setD(&c.StallTime, time.Second)
	setD(&c.CrawlDelay, 400*time.Millisecond)
	if c.HugeMax == 0 {
		c.HugeMax = 64 << 20
	}
	if c.BombSize == 0 {
		c.BombSize = 1 << 30
	}
}

// Validate reports every problem of an (defaulted) config.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if c.Hosts < 1 || c.Hosts > 10_000_000 {
		bad("Hosts %d not in [1, 10^7]", c.Hosts)
	}
	if c.Domain == "" || c.Domain[0] == '.' || c.Domain[len(c.Domain)-1] == '.' {
		bad("Domain %q", c.Domain)
	}
	if !(c.PagesPerHost >= 1) || c.PagesPerHostSigma < 0 {
		bad("PagesPerHost %g / sigma %g", c.PagesPerHost, c.PagesPerHostSigma)
	}
	if c.MinPagesPerHost < 1 || c.MaxPagesPerHost < c.MinPagesPerHost || c.MaxPagesPerHost > 1<<24 {
		bad("pages per host range [%d, %d]", c.MinPagesPerHost, c.MaxPagesPerHost)
	}
	if c.SlowHostPages < 1 {
		bad("SlowHostPages %d", c.SlowHostPages)
	}
	if !(c.LinksMedian >= 3) || !(c.LinksMean >= c.LinksMedian) || c.MaxLinks < 8 || c.MaxLinks > 4000 {
		bad("links median %g mean %g max %d (need 3 ≤ median ≤ mean, 8 ≤ max ≤ 4000)",
			c.LinksMedian, c.LinksMean, c.MaxLinks)
	}
	if !(c.SameHostShare >= 0 && c.SameHostShare <= 1) || !(c.RepeatShare >= 0 && c.RepeatShare < 0.9) {
		bad("SameHostShare %g / RepeatShare %g", c.SameHostShare, c.RepeatShare)
	}
	if !(c.DeadLinkShare >= 0 && c.DeadLinkShare <= 0.9) {
		bad("DeadLinkShare %g not in [0, 0.9]", c.DeadLinkShare)
	}
	if c.NavLinks < 0 || c.NavLinks > 200 {
		bad("NavLinks %d not in [0, 200]", c.NavLinks)
	}
	if !(c.ZipfPages > 0 && c.ZipfPages < 5) || !(c.ZipfHosts > 0 && c.ZipfHosts < 5) {
		bad("Zipf exponents %g %g not in (0,5)", c.ZipfPages, c.ZipfHosts)
	}
	if c.PageSizeMedian < 512 || c.PageSizeMedian > 1<<20 || c.PageSizeSigma < 0 || c.PageSizeSigma > 3 {
		bad("PageSizeMedian %d / sigma %g", c.PageSizeMedian, c.PageSizeSigma)
	}
	sum := 0.0
	for p, s := range c.Shares {
		if p == Normal || p >= numPathologies {
			bad("share for unknown pathology %v", p)
		}
		if !(s >= 0 && s <= 1) {
			bad("share %g for %v", s, p)
		}
		if !c.NoPathologies {
			sum += math.Ceil(s * float64(c.Hosts))
		}
	}
	if sum > float64(c.Hosts-1) {
		bad("pathologies need %g hosts but only %d hosts besides host 0 (lower Shares or set NoPathologies)", sum, c.Hosts-1)
	}
	if c.LatencyMedian < 0 || c.SlowLatency < 0 || c.StallTime < 0 || c.CrawlDelay < 0 {
		bad("negative duration")
	}
	if c.CrawlDelay > 10*time.Second {
		bad("CrawlDelay %v > 10s", c.CrawlDelay)
	}
	if c.HugeMax < 64<<10 || c.HugeMax > 1<<30 {
		bad("HugeMax %d not in [64 KiB, 1 GiB]", c.HugeMax)
	}
	if !(c.SitemapShare >= 0 && c.SitemapShare <= 1) {
		bad("SitemapShare %g not in [0, 1]", c.SitemapShare)
	}
	for _, s := range []float64{c.HTTPSShare, c.RedirectHTTPSShare, c.H2Share, c.HSTSShare} {
		if !(s >= 0 && s <= 1) {
			bad("HTTPS share %g not in [0, 1]", s)
		}
	}
	if c.HTTPSShare+c.RedirectHTTPSShare > 1 {
		bad("HTTPSShare %g + RedirectHTTPSShare %g > 1", c.HTTPSShare, c.RedirectHTTPSShare)
	}
	if c.BombSize < 1<<20 || c.BombSize > 16<<30 {
		bad("BombSize %d not in [1 MiB, 16 GiB]", c.BombSize)
	}
	return errors.Join(errs...)
}
