package crawl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
	"github.com/sextant-crawler/sextant/sitemap"
)

// Sitemaps (sitemaps.org; simweb's Rules.Sitemaps is the contract).
//
// When a worker holds the first URL of an origin that robots.txt allows,
// it discovers the origin's sitemaps: the robots.txt Sitemap: lines
// (resolved against the robots.txt URL), or /sitemap.xml if there are
// none. A sitemap URL is an ordinary URL of its host with a mark: it goes
// through the filter, the host splitter (its host's owner fetches it), the
// DUE and the frontier like any link, so it is fetched once, in its host's
// politeness slot, under robots.txt and the per-host budget, and a kill -9
// or a restart loses or repeats nothing. The mark is a fragment, which no
// canonical URL has ("#sextant-sitemap", or "#sextant-sitemap-child" for a
// sitemap an index listed); the URL's fingerprint is that of the URL
// without it (urlFP), so that a URL discovered both as a page and as a
// sitemap is admitted once, as whichever came first.
//
// Which origins were probed is remembered in memory only, in a bounded
// set: after a restart (or once the set forgot an origin) the origin's
// sitemap URLs are offered once more and the DUE drops them as seen.
//
// A fetched sitemap is parsed with package sitemap (gzip by magic, the
// 50,000-URL and 50 MB limits, RulePath against its own URL, URLs longer
// than the crawl's limit invalid). A urlset or text sitemap's URLs are
// routed as the links of a page; an index's children are routed as marked
// sitemaps, but the children of an index that an index listed are not
// (index depth 1). A sitemap's body is never searched for HTML links.
//
// A sitemap answered 3xx hands its Location on as a sitemap of the same
// level, one hop per fetch like a page's redirect: the target is an
// ordinary marked URL, so a same-host target waits for the host's next
// politeness slot and another host's goes to its owner. The mark counts
// the hops ("#sextant-sitemap-r2"); a chain is followed for at most
// maxSitemapRedirects hops. The target is parsed with its own URL as the
// base, so the location rule is judged against the final URL.
const (
	// SitemapsOn (Options.Sitemaps' default) reads sitemaps; SitemapsOff
	// does not.
	SitemapsOn  = "on"
	SitemapsOff = "off"

	// NoteSitemap begins the crawl log note of a sitemap fetch,
	// NoteSitemapListed that of a sitemap an index listed (whose own
	// children are not followed). Repair re-queues them as sitemaps.
	NoteSitemap       = "sitemap"
	NoteSitemapListed = "sitemap-listed"

	markSitemap      = "#sextant-sitemap"
	markSitemapChild = "#sextant-sitemap-child"
	markHops         = "-r" // + one digit: the redirect hops that led here

	// maxSitemapRedirects bounds a sitemap's redirect chain, as RFC 9309
	// bounds robots.txt's (and fetcher.DefaultRobotsMaxRedirects).
	maxSitemapRedirects = 5
)

// Sitemap levels of a URL (the mark it carries).
const (
	smPage  uint8 = iota // an ordinary URL
	smRoot               // from robots.txt or the /sitemap.xml probe
	smChild              // listed by a sitemap index: its own children are too deep
)

// IsSitemapNote reports whether a crawl log note (as written or as read
// back, spaces escaped) is a sitemap fetch's.
func IsSitemapNote(note string) bool { return sitemapLevelOfNote(note) != smPage }

// sitemapLevelOfNote is the sitemap level a crawl log note records.
func sitemapLevelOfNote(note string) uint8 {
	level, _ := sitemapOfNote(note)
	return level
}

// sitemapOfNote is the sitemap level and redirect hops a crawl log note
// records ("sitemap hop=2 …").
func sitemapOfNote(note string) (level, hops uint8) {
	first, rest := note, ""
	if i := strings.IndexAny(note, " _"); i >= 0 {
		first, rest = note[:i], note[i+1:]
	}
	switch first {
	case NoteSitemap:
		level = smRoot
	case NoteSitemapListed:
		level = smChild
	default:
		return smPage, 0
	}
	if len(rest) >= len(noteHop)+1 && strings.HasPrefix(rest, noteHop) {
		if c := rest[len(noteHop)]; c >= '1' && c <= '9' {
			hops = c - '0'
		}
	}
	return level, hops
}

// noteHop begins the second word of the note of a sitemap reached by
// redirects.
const noteHop = "hop="

// queuedForm is the URL of a crawl log line as the frontier would hold it:
// a sitemap's with its mark, so that a rebuilt frontier fetches it again
// as a sitemap (its entries are known nowhere else), and annotated with
// the via and hop path the line records (annot.go).
func queuedForm(e LogEntry) string {
	a := annot{hops: e.Hops, via: e.Via}
	a.sm, a.smHops = sitemapOfNote(e.Note)
	if strings.HasSuffix(a.via, LogEllipsis) {
		a.via = "" // cut in the log: not the page's URL
	}
	return withAnnot(e.URL, a)
}

// SitemapStats count a node's sitemap work.
type SitemapStats struct {
	Origins    uint64 `json:"origins"`    // origins whose sitemaps were discovered this run
	Discovered uint64 `json:"discovered"` // sitemap URLs offered to the DUE path (from robots.txt, probes, indexes)
	Fetches    uint64 `json:"fetches"`    // sitemap fetches logged (any outcome)
	Failed     uint64 `json:"failed"`     // 2xx sitemaps not parsed whole (malformed, too large, truncated)
	// Page entries: Found = valid entries within the location rule and
	// the per-file limit; of them Admitted were routed (→ DUE/peers) and
	// Filtered fell outside the crawl's scope/filters.
	Found    uint64 `json:"urls_found"`
	Admitted uint64 `json:"urls_admitted"`
	Filtered uint64 `json:"urls_filtered"`
	// Entries dropped by the sitemap rules.
	OutOfPath uint64 `json:"dropped_location_rule"` // another host, or above the sitemap's directory
	Invalid   uint64 `json:"dropped_invalid"`       // not an absolute http(s) URL, or longer than the crawl's limit
	OverLimit uint64 `json:"dropped_over_limit"`    // beyond 50,000 per file
	// Index children: routed as sitemaps, or not followed (an index listed
	// by an index).
	Children uint64 `json:"index_children"`
	TooDeep  uint64 `json:"index_too_deep"`
	// Redirects of sitemaps: targets handed on as sitemaps, or not
	// followed (beyond maxSitemapRedirects hops).
	Redirects     uint64 `json:"redirects_followed"`
	RedirectLimit uint64 `json:"redirects_over_limit"`
	// TooLarge counts sitemaps cut at 50 MB uncompressed (also in Failed).
	TooLarge uint64 `json:"too_large"`
}

// Add adds o's counts to s (a cluster's sum).
func (s *SitemapStats) Add(o SitemapStats) {
	s.Origins += o.Origins
	s.Discovered += o.Discovered
	s.Fetches += o.Fetches
	s.Failed += o.Failed
	s.Found += o.Found
	s.Admitted += o.Admitted
	s.Filtered += o.Filtered
	s.OutOfPath += o.OutOfPath
	s.Invalid += o.Invalid
	s.OverLimit += o.OverLimit
	s.Children += o.Children
	s.TooDeep += o.TooDeep
	s.Redirects += o.Redirects
	s.RedirectLimit += o.RedirectLimit
	s.TooLarge += o.TooLarge
}

type sitemapMetrics struct {
	origins, discovered, fetches, failed atomic.Uint64
	found, admitted, filtered            atomic.Uint64
	outOfPath, invalid, overLimit        atomic.Uint64
	children, tooDeep                    atomic.Uint64
	redirects, redirectLimit             atomic.Uint64
	tooLarge                             atomic.Uint64
}

func (m *sitemapMetrics) stats() SitemapStats {
	return SitemapStats{Origins: m.origins.Load(), Discovered: m.discovered.Load(), Fetches: m.fetches.Load(),
		Failed: m.failed.Load(), Found: m.found.Load(), Admitted: m.admitted.Load(), Filtered: m.filtered.Load(),
		OutOfPath: m.outOfPath.Load(), Invalid: m.invalid.Load(), OverLimit: m.overLimit.Load(),
		Children: m.children.Load(), TooDeep: m.tooDeep.Load(),
		Redirects: m.redirects.Load(), RedirectLimit: m.redirectLimit.Load(), TooLarge: m.tooLarge.Load()}
}

// sitemapProbedSize bounds the origins a node remembers having offered
// the sitemaps of (CLOCK, about 9 bytes each): a forgotten origin's
// sitemap URLs are offered again and the DUE drops them, as after a
// restart, so the bound costs a DUE candidate, never a fetch.
const sitemapProbedSize = 1 << 18

// sitemapState is a node's: the origins probed this run and the counters.
type sitemapState struct {
	once   sync.Once
	probed *cache.Shared // fingerprints of origins
	m      sitemapMetrics
}

// firstVisit reports whether origin is seen for the first time this run
// (or was forgotten since).
func (s *sitemapState) firstVisit(origin string) bool {
	s.once.Do(func() {
		s.probed, _ = cache.NewShared(cache.AlgoClock, sitemapProbedSize, 0) // valid constant options
	})
	return !s.probed.Seen(fingerprint.URL(origin))
}

// validateSitemaps checks Options.Sitemaps.
func validateSitemaps(mode string) error {
	if mode != SitemapsOn && mode != SitemapsOff {
		return fmt.Errorf("%w: Sitemaps %q: want %q or %q", ErrInvalidOptions, mode, SitemapsOn, SitemapsOff)
	}
	return nil
}

// discoverSitemaps offers the sitemaps of the origin scheme://host, once
// per run, when a URL of it at depth d is about to be fetched (robots.txt
// allowed it): the rules' Sitemap: lines, or /sitemap.xml.
func (w *worker) discoverSitemaps(ctx context.Context, scheme, host string, d uint16, rules *fetcher.RobotsRules) error {
	n := w.n
	if n.opts.Sitemaps == SitemapsOff || !n.sm.firstVisit(scheme+"://"+host) {
		return nil
	}
	return w.offerSitemaps(ctx, scheme, host, d, rules)
}

// offerSitemaps is discoverSitemaps once the origin is known to be new.
func (w *worker) offerSitemaps(ctx context.Context, scheme, host string, d uint16, rules *fetcher.RobotsRules) error {
	w.n.sm.m.origins.Add(1)
	robotsURL, err := urlnorm.Parse(scheme + "://" + host + "/robots.txt")
	if err != nil {
		return nil
	}
	var urls []*urlnorm.URL
	for _, s := range rules.Sitemaps {
		if u, err := urlnorm.Resolve(robotsURL, strings.TrimSpace(s)); err == nil && u.IsHTTP() {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		u, _ := urlnorm.Resolve(robotsURL, "/sitemap.xml")
		urls = append(urls, u)
	}
	return w.routeSitemaps(ctx, urls, smRoot, 0, childDepth(d))
}

// routeSitemaps hands sitemap URLs, marked with level and hops, to the
// DUE (local hosts) or the splitter (other nodes' hosts), after the
// crawl's filter and depth limit.
func (w *worker) routeSitemaps(ctx context.Context, urls []*urlnorm.URL, level, hops uint8, depth uint16) error {
	n := w.n
	if n.opts.MaxDepth > 0 && int(depth) > n.opts.MaxDepth {
		n.metrics.LinksTooDeep.Add(uint64(len(urls)))
		return nil
	}
	var local []due.Entry
	var remote []string
	for _, u := range urls {
		if n.opts.Filter != nil && !n.opts.Filter.Allow(u) {
			n.metrics.LinksFiltered.Add(1)
			continue
		}
		s := withAnnot(u.String(), w.sitemapAnnot(level, hops))
		if n.opts.Splitter != nil && !n.opts.Splitter.IsLocal(u.Host()) {
			remote = append(remote, s)
			continue
		}
		local = append(local, due.Entry{FP: fingerprint.URL(u.String()), URL: s, Depth: depth})
	}
	n.sm.m.discovered.Add(uint64(len(local) + len(remote)))
	if len(local) > 0 {
		if err := n.due.AddBatch(local); err != nil {
			return fmt.Errorf("crawl: due: %w", err)
		}
	}
	if len(remote) > 0 {
		if err := n.opts.Splitter.Route(ctx, remote); err != nil {
			return fmt.Errorf("crawl: splitter: %w", err)
		}
	}
	return nil
}

// sitemapAnnot is how a sitemap of level found by the leased URL was
// reached: by the leased sitemap's redirect (redirects > 0: its hop
// count), from the origin's robots.txt (level smRoot; the robots.txt is a
// prerequisite of the leased URL) or from the index being read (smChild).
func (w *worker) sitemapAnnot(level, redirects uint8) annot {
	if redirects > 0 {
		return annot{sm: level, smHops: redirects, hops: extendHops(w.ca.hops, HopRedirect), via: w.cur}
	}
	if level == smChild {
		return annot{sm: level, hops: extendHops(w.ca.hops, HopSitemap), via: w.cur}
	}
	robots := origin(w.cur) + "/robots.txt"
	return annot{sm: level, hops: extendHops(extendHops(w.ca.hops, HopPrereq), HopSitemap), via: robots}
}

// sitemapURLLength is the longest URL a sitemap entry may have: the
// filter's bound if it reports one (as crawl logs do), else the link
// filter's default.
func (n *Node) sitemapURLLength() int {
	l := defaultLogURLLength()
	if b, ok := n.opts.Filter.(interface{ MaxURLLength() int }); ok {
		switch v := b.MaxURLLength(); {
		case v < 0:
			l = MaxLogURLLength
		case v > 0:
			l = v
		}
	}
	return max(l, 16)
}

// sitemapBatch is how many entries of a sitemap are routed at a time: a
// file may list 50,000 URLs of up to MaxURLLength bytes each, which are
// handed on as they are parsed rather than held.
const sitemapBatch = 1024

// sitemapCaps are the wire and decoded caps of a sitemap fetch: the
// protocol's 50 MB (uncompressed) whatever the page caps say, or the page
// caps if they are larger. The body spills to disk as a page's does, and
// package sitemap cuts a gzip file's decompressed size at 50 MB too.
func (n *Node) sitemapCaps() (wire, decoded int64) {
	wire, decoded = n.opts.Fetcher.BodyCap, n.opts.Fetcher.DecompressCap
	if wire <= 0 {
		wire = fetcher.DefaultBodyCap
	}
	if decoded <= 0 {
		decoded = wire
	}
	return max(wire, sitemap.ProtocolMaxBytes), max(decoded, sitemap.ProtocolMaxBytes)
}

// readSitemap parses the 2xx sitemap in resp (fetched from base, at
// level w.sm), routing its entries sitemapBatch at a time: a urlset's or
// text file's as a page's links (the last batch is left in w.links for
// the caller; w.routed counts the others), an index's children as
// sitemaps. It returns the crawl log note (without NoteSitemap, which
// logFetch adds).
func (w *worker) readSitemap(ctx context.Context, base string, depth uint16, resp *fetcher.Response) (string, error) {
	n, m := w.n, &w.n.sm.m
	ul := n.sitemapURLLength()
	opts := sitemap.Options{MaxURLLength: ul, MaxTokenBytes: max(64<<10, ul)}
	var (
		children           []*urlnorm.URL
		nChildren, invalid int
		admitted, filtered int
		tooDeep            = w.sm == smChild // the protocol does not let an index list indexes
	)
	flushChildren := func() error {
		nChildren += len(children)
		if tooDeep || len(children) == 0 {
			children = children[:0]
			return nil
		}
		err := w.routeSitemaps(ctx, children, smChild, 0, childDepth(depth))
		children = children[:0]
		return err
	}
	res, perr := sitemap.ParseKind(resp.Body.NewReader(), base, opts, func(kind sitemap.Kind, e sitemap.Entry) error {
		u, err := urlnorm.Parse(e.Loc)
		if err != nil {
			invalid++
			return nil
		}
		if kind == sitemap.KindIndex {
			if children = append(children, u); len(children) >= sitemapBatch {
				return flushChildren()
			}
			return nil
		}
		if n.opts.Filter != nil && !n.opts.Filter.Allow(u) {
			filtered++
			return nil
		}
		admitted++
		w.kinds = append(w.kinds, HopSitemap)
		if w.links = append(w.links, u); len(w.links) >= sitemapBatch {
			return w.routeSitemapLinks(ctx, depth)
		}
		return nil
	})
	var cbErr *sitemapCallbackError
	if errors.As(perr, &cbErr) {
		return "", cbErr.err
	}
	if err := flushChildren(); err != nil {
		return "", err
	}
	res.Invalid += invalid
	m.outOfPath.Add(uint64(res.OutOfPath))
	m.invalid.Add(uint64(res.Invalid))
	var b strings.Builder
	fmt.Fprintf(&b, "kind=%s", res.Kind)
	if res.Kind == sitemap.KindIndex {
		if tooDeep {
			m.tooDeep.Add(uint64(nChildren))
			fmt.Fprintf(&b, " too-deep=%d", nChildren)
		} else {
			m.children.Add(uint64(nChildren))
			fmt.Fprintf(&b, " children=%d", nChildren)
		}
	} else {
		found := admitted + filtered + invalid
		m.overLimit.Add(uint64(res.Dropped))
		m.found.Add(uint64(found))
		m.filtered.Add(uint64(filtered))
		m.admitted.Add(uint64(admitted))
		fmt.Fprintf(&b, " found=%d admitted=%d filtered=%d over-limit=%d", found, admitted, filtered, res.Dropped)
	}
	fmt.Fprintf(&b, " out-of-path=%d invalid=%d", res.OutOfPath, res.Invalid)
	if res.Compressed {
		b.WriteString(" gzip")
	}
	tooLarge := errors.Is(perr, sitemap.ErrTooLarge) || resp.Truncated
	if tooLarge {
		// Cut at 50 MB uncompressed (sitemaps.org's limit; a gzip bomb
		// ends here): what was read before the cut is kept.
		m.tooLarge.Add(1)
		fmt.Fprintf(&b, " too-large=%d", sitemap.ProtocolMaxBytes)
	}
	switch {
	case perr != nil && !errors.Is(perr, sitemap.ErrTooManyURLs):
		m.failed.Add(1)
		if !errors.Is(perr, sitemap.ErrTooLarge) {
			fmt.Fprintf(&b, " error=%v", perr)
		}
	case tooLarge:
		m.failed.Add(1)
	}
	return b.String(), nil
}

// routeSitemapLinks routes a batch of a sitemap's page entries (w.links)
// as the caller routes a page's links, and empties w.links.
func (w *worker) routeSitemapLinks(ctx context.Context, depth uint16) error {
	w.routed += len(w.links)
	err := w.routeLinks(ctx, childDepth(depth))
	w.links, w.kinds = w.links[:0], w.kinds[:0]
	if err != nil {
		return &sitemapCallbackError{err}
	}
	return nil
}

// sitemapCallbackError marks an error of routing (fatal to the node) that
// stopped a sitemap's parse, to tell it from the file's own errors.
type sitemapCallbackError struct{ err error }

func (e *sitemapCallbackError) Error() string { return e.err.Error() }

// sitemapRedirect hands the Location of a sitemap's 3xx on as a sitemap
// of the same level, one hop further, unless the chain is at its limit.
func (w *worker) sitemapRedirect(ctx context.Context, target *urlnorm.URL, depth uint16) error {
	m := &w.n.sm.m
	if w.smHops >= maxSitemapRedirects {
		m.redirectLimit.Add(1)
		return nil
	}
	m.redirects.Add(1)
	return w.routeSitemaps(ctx, []*urlnorm.URL{target}, w.sm, w.smHops+1, childDepth(depth))
}

// sitemapNote marks the crawl log note of a fetch of a sitemap at level,
// reached by hops redirects.
func sitemapNote(level, hops uint8, note string) string {
	p := NoteSitemap
	if level == smChild {
		p = NoteSitemapListed
	}
	if hops > 0 {
		p += " " + noteHop + string('0'+min(hops, 9))
	}
	if note == "" {
		return p
	}
	return p + " " + note
}
