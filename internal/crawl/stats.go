package crawl

import (
	"time"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// Stats is a snapshot of a node's figures.
type Stats struct {
	ID      string
	Elapsed time.Duration

	Fetches, FetchOK, FetchRedirect, FetchHTTPErr, FetchErr uint64
	FetchHTTP1xx, FetchHTTP4xx, FetchHTTP5xx                uint64 // FetchHTTPErr by class (FetchClasses)
	FetchesRequeued                                         uint64 // begun, cut short by the stop or a fatal error: not in Fetches, URL requeued
	FetchRetries                                            uint64 // timed out or failed to connect, URL requeued for another attempt (Options.FetchAttempts): not in Fetches
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
	Revisit  RevisitStats // continuous crawling (Options.Revisit)
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
		FetchHTTPErr: m.FetchHTTPErr.Load(), FetchErr: m.FetchErr.Load(),
		FetchHTTP1xx: m.FetchHTTP1xx.Load(), FetchHTTP4xx: m.FetchHTTP4xx.Load(), FetchHTTP5xx: m.FetchHTTP5xx.Load(), FetchesRequeued: m.FetchesRequeued.Load(), FetchRetries: m.FetchRetries.Load(),
		RobotsDisallowed: m.RobotsDisallowed.Load(), RobotsFetches: m.RobotsFetches.Load(),
		Bytes: m.Bytes.Load(), LinksFound: m.LinksFound.Load(), LinksFiltered: m.LinksFiltered.Load(),
		LinksLocal: m.LinksLocal.Load(), LinksRemote: m.LinksRemote.Load(), LinksTooDeep: m.LinksTooDeep.Load(),
		CacheHits: m.CacheHits.Load(), CacheMisses: m.CacheMisses.Load(),
		ContentDuplicates: m.ContentDuplicates.Load(), NewURLs: m.NewURLs.Load() - min(m.NewURLs.Load(), fs.BudgetDropped),
		WARCRecords: m.WARCRecords.Load(), WARCErrors: m.WARCErrors.Load(),
		BudgetDropped: fs.BudgetDropped, Received: m.Received.Load(), LookupFailures: m.LookupFailures.Load(), PrivateRefused: m.PrivateRefused.Load(),
		FetchTime: time.Duration(m.FetchNanos.Load()),
		Frontier:  fs, DUE: n.due.Stats(), Fetcher: n.ft.Stats(), Sitemap: n.sm.m.stats(),
		Fenced: n.fencedNote(), Revisit: n.revisitStats(),
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
