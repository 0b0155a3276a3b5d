package crawl

import (
	"fmt"
	"sync/atomic"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// Options.NoFollow values (--nofollow).
const (
	// NoFollowObey (the default): a page whose robots <meta> or
	// X-Robots-Tag says nofollow has none of its links followed, and a
	// link whose rel holds nofollow is not followed.
	NoFollowObey = "obey"
	// NoFollowIgnore follows them anyway (the directives are still
	// recorded in crawl.log and counted).
	NoFollowIgnore = "ignore"
)

func validateNoFollow(v string) error {
	if v != NoFollowObey && v != NoFollowIgnore {
		return fmt.Errorf("%w: NoFollow %q: want %q or %q", ErrInvalidOptions, v, NoFollowObey, NoFollowIgnore)
	}
	return nil
}

// robotsMetrics count what pages' robots directives did (Metrics).
type robotsMetrics struct {
	PagesNoFollow, PagesNoIndex atomic.Uint64 // 2xx pages with the directive (whatever Options.NoFollow)
	LinksNoFollow               atomic.Uint64 // links not followed: page-level nofollow or rel=nofollow (not in LinksFound)
}

// extractOptions are the node's extraction options: the robots <meta>
// named after the crawler is read (the token robots.txt is matched with),
// and rel=nofollow links are emitted only under NoFollowIgnore.
func (o *Options) extractOptions() extract.Options {
	eo := o.Extract
	if eo.RobotsToken == "" {
		fe := o.Fetcher
		eo.RobotsToken = fe.EnsureDefaults().RobotsToken
	}
	eo.FollowNoFollow = o.NoFollow == NoFollowIgnore
	return eo
}

// pageRobots is what a page's directives did, counted once its crawl log
// line is written.
type pageRobots struct {
	d       extract.Directives
	dropped int // links not followed
}

// applyRobots reads the robots directives and the canonical URL of a 2xx
// response u — its X-Robots-Tag and Link headers (any content type) and
// what extraction found in its body (w.page: robots <meta>, <link
// rel=canonical>, rel=nofollow links) — records them in e, and under
// NoFollowObey drops w.links if the page is nofollow and they were
// extracted from it (the URLs a sitemap lists are not a page's links). A
// redirect's target is not a link of a page: directives on a 3xx are not
// read. A body whose links were not extracted (content seen, not HTML)
// has only its headers'.
func (w *worker) applyRobots(e *LogEntry, u *urlnorm.URL, resp *fetcher.Response) pageRobots {
	n := w.n
	p := pageRobots{d: w.page.Robots | extract.HeaderDirectives(resp.Header.Values("X-Robots-Tag"), w.token),
		dropped: w.page.NoFollow}
	e.Robots = p.d.String()
	if e.Canonical = extract.HeaderCanonical(resp.Header.Values("Link"), u); e.Canonical == "" {
		e.Canonical = w.page.Canonical
	}
	if p.d.Has(extract.NoFollow) && n.opts.NoFollow != NoFollowIgnore && w.pageOK {
		p.dropped += len(w.links)
		w.links, w.kinds = w.links[:0], w.kinds[:0]
	}
	return p
}

func (p pageRobots) count(m *Metrics) {
	if p.d.Has(extract.NoFollow) {
		m.PagesNoFollow.Add(1)
	}
	if p.d.Has(extract.NoIndex) {
		m.PagesNoIndex.Add(1)
	}
	m.LinksNoFollow.Add(uint64(p.dropped))
}
