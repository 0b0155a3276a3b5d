package simweb

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/temoto/robotstxt"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// Errors of the oracle.
var (
	// ErrBudget: a non-trap host has more reachable URLs than
	// Rules.MaxPagesPerHost, so the fetched set would depend on crawl order.
	ErrBudget = errors.New("simweb: per-host budget smaller than a non-trap host")
	// ErrGenerator: a link the generator wrote does not resolve to the URL
	// it meant (a bug in simweb).
	ErrGenerator = errors.New("simweb: generated link resolves elsewhere")
	// ErrMismatch is wrapped by OracleResult.Check's errors.
	ErrMismatch = errors.New("simweb: fetched set differs from the oracle")
)

// SitemapMaxRedirects is how many redirects of a sitemap chain the
// crawler follows (Rules, Sitemaps).
const SitemapMaxRedirects = 5

// Rules are the crawl rules the oracle applies; they are the contract
// between simweb and the crawler. The zero value means every default.
//
// A URL is FETCHED when it is a seed or discovered, its scheme is http or
// https, its host is Scope or ends in "."+Scope, it is at most MaxURLLength
// bytes, it is at depth ≤ MaxDepth (if set), and robots.txt allows it.
// Fetched URLs are canonical: the WHATWG serialisation without fragment.
//
// Robots: before anything else on an origin the crawler fetches
// /robots.txt (not part of the fetched set). 2xx ⇒ parse the first
// RobotsCap bytes with temoto/robotstxt (a parse error ⇒ allow all) and test
// path+query for UserAgent; 3xx ⇒ follow up to 5 redirects (Location
// resolved against the robots URL), then as above, more ⇒ as 404; 4xx ⇒
// allow all; 5xx or a network failure (unknown host, a scheme the host
// does not serve: see Config.HTTPSShare) ⇒ disallow all.
//
// Discovered: from a fetched URL answered 3xx with a Location, the Location
// resolved against the URL (one hop: redirects are not followed inline).
// From a fetched URL answered 2xx whose Content-Type media type is
// text/html or application/xhtml+xml (ASCII case-insensitive), or whose
// Content-Type is absent or empty and whose first 512 bytes
// http.DetectContentType calls text/html (extract.IsHTML): every URL in the
// first BodyCap bytes of the decoded body in a/area/link href,
// img/script/iframe/frame/embed/source/audio/video src, img/source srcset
// candidates, form action and meta refresh, resolved against the first
// <base href> if there is one. Other statuses discover nothing.
//
// Trap hosts (infinite URL spaces) link only to themselves: the crawler
// must fetch at most MaxPagesPerHost URLs on each, all of them URLs of the
// trap. Every other host must fit its budget (else Oracle fails with
// ErrBudget), so its fetched set is exact and independent of crawl order.
//
// Sitemaps (only if Sitemaps is set; see package sitemap and
// sitemaps.org): when the first URL of an origin passes the rules above
// (trap hosts included), the crawler also discovers that origin's
// sitemaps: the Sitemap: lines of its robots.txt as parsed above (resolved
// against the robots.txt URL), or, if there are none, /sitemap.xml. They
// are FETCHED under the same rules (in scope, robots.txt) and are part of
// the fetched set; on a trap host they count toward its budget. A sitemap
// answered 2xx is parsed with package sitemap (gzip by magic bytes,
// whatever the Content-Type; sitemap.RulePath against the sitemap's own
// URL; the protocol's 50,000 URLs and 50 MB; URLs longer than
// MaxURLLength dropped). A sitemap answered 3xx with a Location discovers
// the Location as a sitemap of the same kind (one hop, as a page's
// redirect), for at most SitemapMaxRedirects hops in a chain, so the
// location rule is judged against the final URL; other statuses discover
// nothing. A urlset or text
// sitemap discovers its URLs as pages (then fetched and followed as any
// page); an index discovers its children as sitemaps, but the children of
// an index listed by an index are not fetched (index depth 1). A sitemap
// file discovers nothing through HTML link extraction, and depth grows by
// one per hop (page → its origin's sitemaps → their entries). Without
// Sitemaps, no sitemap is fetched and the oracle is what it was before.
type Rules struct {
	UserAgent       string // robots.txt product token; default "sextant"
	Scope           string // domain; default the web's Domain
	MaxURLLength    int    // default 2048
	BodyCap         int64  // bytes of body searched for links; default 16 MiB
	RobotsCap       int    // bytes of robots.txt parsed; default 500 KiB
	MaxPagesPerHost int    // per-host budget; default 1000
	MaxDepth        int    // 0 = unlimited (default); seeds have depth 0
	Sitemaps        bool   // also read sitemaps (see above); default off
}

// EnsureDefaults fills zero fields; scope is the web's domain.
func (r *Rules) EnsureDefaults(scope string) {
	if r.UserAgent == "" {
		r.UserAgent = "sextant"
	}
	if r.Scope == "" {
		r.Scope = scope
	}
	if r.MaxURLLength == 0 {
		r.MaxURLLength = 2048
	}
	if r.BodyCap == 0 {
		r.BodyCap = 16 << 20
	}
	if r.RobotsCap == 0 {
		r.RobotsCap = 500 << 10
	}
	if r.MaxPagesPerHost == 0 {
		r.MaxPagesPerHost = 1000
	}
}

// OracleResult is the ground truth of a crawl.
type OracleResult struct {
	Rules Rules
	// Fetched is the exact sorted set of URLs fetched on non-trap hosts.
	Fetched []string
	// TrapHosts are the trap hosts the crawl reaches: on each the crawler
	// fetches at most Rules.MaxPagesPerHost URLs, all valid trap URLs.
	TrapHosts []string
	// Statistics of the walk.
	ByStatus   map[int]int // status of the fetched non-trap URLs
	Disallowed int         // distinct URLs robots.txt kept out
	OutOfScope int         // distinct URLs discarded by scheme, scope or length
	Links      int         // links followed from fetched pages (with repeats)
	// With Rules.Sitemaps: sitemap files fetched on non-trap hosts (any
	// status), and the valid entries they list (before scope and robots).
	SitemapFiles   int
	SitemapEntries int

	w     *Web
	set   map[string]struct{}
	traps map[string]bool
}

type robotsCache map[string]*robotstxt.RobotsData

// Oracle computes, by walking the generator (no HTTP), the URLs a correct
// crawler fetches from seeds under rules. See Rules for the semantics.
func (w *Web) Oracle(seeds []string, rules Rules) (*OracleResult, error) {
	rules.EnsureDefaults(w.cfg.Domain)
	res := &OracleResult{Rules: rules, ByStatus: map[int]int{}, w: w,
		set: map[string]struct{}{}, traps: map[string]bool{}}
	robots := robotsCache{}
	type item struct {
		url   string
		depth int
		sm    uint8 // 0: a page; 1: a sitemap; 2: a sitemap an index listed
		hops  int   // a sitemap's: the redirects that led to it
	}
	seen := map[string]struct{}{}
	var queue []item
	perHost := map[string]int{}
	probed := map[string]bool{} // origins whose sitemaps are discovered
	var consider func(u *whatwg.Url, depth int, sm uint8, hops int)
	consider = func(u *whatwg.Url, depth int, sm uint8, hops int) {
		s := u.Href(true)
		if _, ok := seen[s]; ok {
			return
		}
		seen[s] = struct{}{}
		host := u.Hostname()
		if (u.Scheme() != "http" && u.Scheme() != "https") || len(s) > rules.MaxURLLength ||
			!(host == rules.Scope || strings.HasSuffix(host, "."+rules.Scope)) ||
			(rules.MaxDepth > 0 && depth > rules.MaxDepth) {
			res.OutOfScope++
			return
		}
		if !w.robotsAllow(robots, u, rules) {
			res.Disallowed++
			return
		}
		if origin := u.Scheme() + "://" + u.Host(); rules.Sitemaps && !probed[origin] {
			probed[origin] = true
			for _, v := range w.sitemapsOf(robots[origin], u) {
				consider(v, depth+1, 1, 0)
			}
		}
		if h, ok := w.HostIndex(host); ok && w.hosts[h].kind == Trap {
			res.traps[host] = true
			return
		}
		perHost[host]++
		res.set[s] = struct{}{}
		queue = append(queue, item{s, depth, sm, hops})
	}
	for _, s := range seeds {
		u, err := whatwg.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("simweb: seed %q: %w", s, err)
		}
		consider(u, 0, 0, 0)
	}
	// Pages are generated and their links resolved in parallel, a chunk of
	// the FIFO queue at a time; discovered URLs are then considered in queue
	// order, so the result does not depend on the number of workers.
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	gens := make([]*gen, workers)
	for i := range gens {
		gens[i] = w.getGen(true)
		defer putGen(gens[i])
	}
	for len(queue) > 0 {
		chunk := queue[:min(len(queue), 256)]
		queue = queue[len(chunk):]
		out := make([]walked, len(chunk))
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, g := range gens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(chunk); i = int(next.Add(1) - 1) {
					out[i] = res.walk(g, chunk[i].url, chunk[i].sm)
				}
			}()
		}
		wg.Wait()
		for i, o := range out {
			if o.err != nil {
				return nil, o.err
			}
			res.ByStatus[o.status]++
			res.Links += o.links
			if chunk[i].sm > 0 {
				res.SitemapFiles++
				res.SitemapEntries += len(o.found)
			}
			hops := 0
			if o.redirect {
				if hops = chunk[i].hops + 1; hops > SitemapMaxRedirects {
					continue
				}
			}
			for _, v := range o.found {
				consider(v, chunk[i].depth+1, o.foundSm, hops)
			}
		}
	}
	for host, n := range perHost {
		if n > rules.MaxPagesPerHost {
			return nil, fmt.Errorf("%w: %s has %d URLs > %d", ErrBudget, host, n, rules.MaxPagesPerHost)
		}
	}
	for s := range res.set {
		res.Fetched = append(res.Fetched, s)
	}
	sort.Strings(res.Fetched)
	for h := range res.traps {
		res.TrapHosts = append(res.TrapHosts, h)
	}
	sort.Strings(res.TrapHosts)
	return res, nil
}

// walked is what fetching one URL yields.
type walked struct {
	status   int
	found    []*whatwg.Url
	foundSm  uint8 // found are sitemaps (item.sm)
	redirect bool  // found is a sitemap's redirect target
	links    int
	err      error
}

// walk "fetches" s through the generator with g and returns what it makes
// discovered. It only reads res.
func (res *OracleResult) walk(g *gen, s string, sm uint8) walked {
	u, err := whatwg.Parse(s)
	if err != nil {
		return walked{err: err}
	}
	h, ok := res.w.HostIndex(u.Hostname())
	if !ok || !res.w.serves(int32(h), u.Scheme() == "https") { // a network failure
		return walked{}
	}
	*g = gen{w: res.w, buf: g.buf[:0], tmp: g.tmp[:0], links: g.links[:0], targets: g.targets[:0],
		seen: g.seen, basePath: g.basePath[:0], collect: true, zipfCache: g.zipfCache, zipfNext: g.zipfNext}
	clear(g.seen)
	res.w.buildScheme(g, int32(h), pathQuery(u), u.Scheme() == "https")
	if sm > 0 && g.status >= 300 && g.status < 400 && g.location != "" {
		o := walked{status: g.status, foundSm: sm, redirect: true}
		o.err = res.discover(g, u, func(v *whatwg.Url) { o.found = append(o.found, v) })
		return o
	}
	if sm > 0 {
		return res.readSitemap(g, s, sm)
	}
	o := walked{status: g.status}
	o.err = res.discover(g, u, func(v *whatwg.Url) { o.found = append(o.found, v) })
	if g.status < 300 {
		o.links = len(o.found)
	}
	return o
}

// pathQuery is the request-target of u.
func pathQuery(u *whatwg.Url) string {
	return u.Pathname() + u.Search()
}

// discover calls found for every URL the response in g makes discovered.
func (res *OracleResult) discover(g *gen, u *whatwg.Url, found func(*whatwg.Url)) error {
	switch {
	case g.status >= 300 && g.status < 400 && g.location != "":
		v, err := u.Parse(g.location)
		if err != nil {
			return fmt.Errorf("%w: Location %q of %s: %v", ErrGenerator, g.location, u.Href(true), err)
		}
		found(v)
		return nil
	case g.status < 200 || g.status >= 300 || !isHTML(g):
		return nil
	}
	base := u
	if g.baseRaw != "" {
		b, err := u.Parse(g.baseRaw)
		if err != nil {
			return fmt.Errorf("%w: base %q: %v", ErrGenerator, g.baseRaw, err)
		}
		base = b
	}
	for _, l := range g.links {
		if int64(l.End) > res.Rules.BodyCap || l.Tag == "location" {
			continue
		}
		v, err := base.Parse(l.Raw)
		if err != nil || v.Href(true) != l.URL {
			got := ""
			if v != nil {
				got = v.Href(true)
			}
			return fmt.Errorf("%w: %s %q on %s → %q, meant %s (%v)", ErrGenerator, l.Tag, l.Raw,
				u.Href(true), got, l.URL, err)
		}
		found(v)
	}
	return nil
}

// isHTML applies the Content-Type rule of Rules to a 2xx response: the
// media type (before ';', trimmed, ASCII case-insensitive) is text/html or
// application/xhtml+xml, or the header is absent or empty and
// http.DetectContentType of the first 512 bytes is text/html.
func isHTML(g *gen) bool {
	ct := g.ctype
	if g.noCT || strings.TrimSpace(ct) == "" {
		return strings.HasPrefix(http.DetectContentType(g.buf[:min(len(g.buf), 512)]), "text/html")
	}
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	return strings.EqualFold(mt, "text/html") || strings.EqualFold(mt, "application/xhtml+xml")
}

// robotsAllow applies robots.txt of u's origin (fetched through the
// generator, cached in c).
func (w *Web) robotsAllow(c robotsCache, u *whatwg.Url, rules Rules) bool {
	return w.robotsData(c, u, rules).TestAgent(pathQuery(u), rules.UserAgent)
}

// robotsData is the robots.txt of u's origin, fetched once into c.
func (w *Web) robotsData(c robotsCache, u *whatwg.Url, rules Rules) *robotstxt.RobotsData {
	origin := u.Scheme() + "://" + u.Host()
	rd, ok := c[origin]
	if !ok {
		rd = w.fetchRobots(u, rules)
		c[origin] = rd
	}
	return rd
}

func (w *Web) fetchRobots(u *whatwg.Url, rules Rules) *robotstxt.RobotsData {
	cur, err := u.Parse("/robots.txt")
	if err != nil {
		return disallowAll()
	}
	for hops := 0; ; hops++ {
		h, ok := w.HostIndex(cur.Hostname())
		if !ok || !w.serves(int32(h), cur.Scheme() == "https") {
			return disallowAll()
		}
		g := w.getGen(false)
		w.buildScheme(g, int32(h), pathQuery(cur), cur.Scheme() == "https")
		status, loc, body := g.status, g.location, g.buf
		if status >= 300 && status < 400 {
			putGen(g)
			if hops == 5 || loc == "" {
				return allowAll()
			}
			if cur, err = cur.Parse(loc); err != nil {
				return allowAll()
			}
			continue
		}
		body = body[:min(len(body), rules.RobotsCap)]
		rd, err := robotstxt.FromStatusAndBytes(status, body)
		putGen(g)
		if err != nil {
			if status >= 200 && status < 300 {
				return allowAll()
			}
			return disallowAll()
		}
		return rd
	}
}

func allowAll() *robotstxt.RobotsData {
	rd, _ := robotstxt.FromStatusAndBytes(404, nil)
	return rd
}

func disallowAll() *robotstxt.RobotsData {
	rd, _ := robotstxt.FromStatusAndBytes(503, nil)
	return rd
}

// Check compares what a crawler fetched (URLs, any order, duplicates
// ignored, robots.txt fetches excluded) with the oracle and explains the
// first differences: missing URLs, unexpected URLs, trap budgets exceeded.
func (res *OracleResult) Check(fetched []string) error {
	got := map[string]struct{}{}
	trapCount := map[string]int{}
	var unexpected, missing, over []string
	for _, s := range fetched {
		if _, dup := got[s]; dup {
			continue
		}
		got[s] = struct{}{}
		if _, ok := res.set[s]; ok {
			continue
		}
		if host, ok := res.trapURL(s); ok {
			trapCount[host]++
			continue
		}
		unexpected = append(unexpected, s)
	}
	for _, s := range res.Fetched {
		if _, ok := got[s]; !ok {
			missing = append(missing, s)
		}
	}
	for h, n := range trapCount {
		if n > res.Rules.MaxPagesPerHost {
			over = append(over, fmt.Sprintf("%s: %d > %d", h, n, res.Rules.MaxPagesPerHost))
		}
	}
	if len(unexpected)+len(missing)+len(over) == 0 {
		return nil
	}
	sort.Strings(unexpected)
	sort.Strings(missing)
	sort.Strings(over)
	return fmt.Errorf("%w: %d missing %s; %d unexpected %s; trap budget exceeded on %d hosts %s",
		ErrMismatch, len(missing), first(missing), len(unexpected), first(unexpected), len(over), first(over))
}

// trapURL reports whether s is a URL of a reached trap host's space.
func (res *OracleResult) trapURL(s string) (string, bool) {
	u, err := whatwg.Parse(s)
	if err != nil || u.Href(true) != s || len(s) > res.Rules.MaxURLLength ||
		(u.Scheme() != "http" && u.Scheme() != "https") {
		return "", false
	}
	host := u.Hostname()
	if !res.traps[host] {
		return "", false
	}
	h, _ := res.w.HostIndex(host)
	if !res.w.serves(int32(h), u.Scheme() == "https") {
		return "", false
	}
	t := res.w.parse(int32(h), pathQuery(u))
	if res.Rules.Sitemaps && pathQuery(u) == "/sitemap.xml" {
		return host, true // the probe of the host's sitemap
	}
	return host, t.kind != pkNone && t.kind != pkRobots
}

func first(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%q…", s[:5])
	}
	return fmt.Sprintf("%q", s)
}

// Size is the number of URLs in the exact (non-trap) set.
func (res *OracleResult) Size() int { return len(res.Fetched) }
