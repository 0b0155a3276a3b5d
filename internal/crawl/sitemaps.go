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
// (index depth 1). A sitemap's body is never searched for HTML links and
// its redirect is not followed. It is read up to the fetcher's BodyCap (a
// longer one is parsed as far as it was read, noted "truncated").
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
)

// Sitemap levels of a URL (the mark it carries).
const (
	smPage  uint8 = iota // an ordinary URL
	smRoot               // from robots.txt or the /sitemap.xml probe
	smChild              // listed by a sitemap index: its own children are too deep
)

// withSitemapMark is the marked form of the canonical URL s.
func withSitemapMark(s string, level uint8) string {
	if level == smChild {
		return s + markSitemapChild
	}
	return s + markSitemap
}

// IsSitemapNote reports whether a crawl log note (as written or as read
// back, spaces escaped) is a sitemap fetch's.
func IsSitemapNote(note string) bool { return sitemapLevelOfNote(note) != smPage }

// sitemapLevelOfNote is the sitemap level a crawl log note records.
func sitemapLevelOfNote(note string) uint8 {
	first := note
	if i := strings.IndexAny(note, " _"); i >= 0 {
		first = note[:i]
	}
	switch first {
	case NoteSitemap:
		return smRoot
	case NoteSitemapListed:
		return smChild
	}
	return smPage
}

// queuedForm is the URL of a crawl log line as the frontier would hold it:
// a sitemap's with its mark, so that a rebuilt frontier fetches it again
// as a sitemap (its entries are known nowhere else), and annotated with
// the via and hop path the line records (annot.go).
func queuedForm(e LogEntry) string {
	a := annot{sm: sitemapLevelOfNote(e.Note), hops: e.Hops, via: e.Via}
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
}

type sitemapMetrics struct {
	origins, discovered, fetches, failed atomic.Uint64
	found, admitted, filtered            atomic.Uint64
	outOfPath, invalid, overLimit        atomic.Uint64
	children, tooDeep                    atomic.Uint64
}

func (m *sitemapMetrics) stats() SitemapStats {
	return SitemapStats{Origins: m.origins.Load(), Discovered: m.discovered.Load(), Fetches: m.fetches.Load(),
		Failed: m.failed.Load(), Found: m.found.Load(), Admitted: m.admitted.Load(), Filtered: m.filtered.Load(),
		OutOfPath: m.outOfPath.Load(), Invalid: m.invalid.Load(), OverLimit: m.overLimit.Load(),
		Children: m.children.Load(), TooDeep: m.tooDeep.Load()}
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
	n.sm.m.origins.Add(1)
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
	return w.routeSitemaps(ctx, urls, smRoot, childDepth(d))
}

// routeSitemaps hands sitemap URLs, marked with level, to the DUE (local
// hosts) or the splitter (other nodes' hosts), after the crawl's filter
// and depth limit.
func (w *worker) routeSitemaps(ctx context.Context, urls []*urlnorm.URL, level uint8, depth uint16) error {
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
		s := withAnnot(u.String(), w.sitemapAnnot(level))
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
// reached: from the origin's robots.txt (level smRoot; the robots.txt is a
// prerequisite of the leased URL) or from the index being read (smChild).
func (w *worker) sitemapAnnot(level uint8) annot {
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

// readSitemap parses the 2xx sitemap in resp (fetched from base, at
// level w.sm): page entries go to w.links (routed by the caller as a
// page's links), an index's children are routed here. It returns the
// crawl log note (without NoteSitemap, which logFetch adds).
func (w *worker) readSitemap(ctx context.Context, base string, depth uint16, resp *fetcher.Response) (string, error) {
	n, m := w.n, &w.n.sm.m
	ul := n.sitemapURLLength()
	opts := sitemap.Options{MaxURLLength: ul, MaxTokenBytes: max(64<<10, ul)}
	var locs []string
	res, perr := sitemap.Parse(resp.Body.NewReader(), base, opts, func(e sitemap.Entry) error {
		locs = append(locs, e.Loc)
		return nil
	})
	m.outOfPath.Add(uint64(res.OutOfPath))
	m.invalid.Add(uint64(res.Invalid))
	var b strings.Builder
	fmt.Fprintf(&b, "kind=%s", res.Kind)
	if res.Kind == sitemap.KindIndex {
		var children []*urlnorm.URL
		for _, s := range locs {
			if u, err := urlnorm.Parse(s); err == nil {
				children = append(children, u)
			} else {
				res.Invalid++
				m.invalid.Add(1)
			}
		}
		if w.sm == smChild {
			// The protocol does not let an index list indexes: this one's
			// children are one level too deep.
			m.tooDeep.Add(uint64(len(children)))
			fmt.Fprintf(&b, " too-deep=%d", len(children))
		} else {
			m.children.Add(uint64(len(children)))
			fmt.Fprintf(&b, " children=%d", len(children))
			if err := w.routeSitemaps(ctx, children, smChild, childDepth(depth)); err != nil {
				return "", err
			}
		}
	} else {
		m.overLimit.Add(uint64(res.Dropped))
		admitted, filtered := 0, 0
		for _, s := range locs {
			u, err := urlnorm.Parse(s)
			if err != nil {
				res.Invalid++
				m.invalid.Add(1)
				continue
			}
			if n.opts.Filter != nil && !n.opts.Filter.Allow(u) {
				filtered++
				continue
			}
			admitted++
			w.links, w.kinds = append(w.links, u), append(w.kinds, HopSitemap)
		}
		m.found.Add(uint64(len(locs)))
		m.filtered.Add(uint64(filtered))
		m.admitted.Add(uint64(admitted))
		fmt.Fprintf(&b, " found=%d admitted=%d filtered=%d over-limit=%d", len(locs), admitted, filtered, res.Dropped)
	}
	fmt.Fprintf(&b, " out-of-path=%d invalid=%d", res.OutOfPath, res.Invalid)
	if res.Compressed {
		b.WriteString(" gzip")
	}
	if perr != nil && !errors.Is(perr, sitemap.ErrTooManyURLs) {
		m.failed.Add(1)
		fmt.Fprintf(&b, " error=%v", perr)
	} else if resp.Truncated {
		m.failed.Add(1)
	}
	return b.String(), nil
}

// sitemapNote marks the crawl log note of a fetch of a sitemap at level.
func sitemapNote(level uint8, note string) string {
	p := NoteSitemap
	if level == smChild {
		p = NoteSitemapListed
	}
	if note == "" {
		return p
	}
	return p + " " + note
}
