package crawl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
)

// What Export writes.
const (
	ExportQueued  = "queued"  // the frontier's URLs: queued, or leased when the node stopped
	ExportFetched = "fetched" // URLs with a request sent, per crawl.log
	ExportSeen    = "seen"    // every URL the node admitted: fetched, refused by robots.txt, queued, handed over
)

// ErrNotDataDir is returned by Export for a directory no crawl ran in.
var ErrNotDataDir = errors.New("crawl: not a crawl data directory")

// ExportedURL is one URL Export hands out, with what the data directory
// says about it (JSON field names are stable; see docs/crawl-log.md).
type ExportedURL struct {
	URL     string `json:"url"`
	Via     string `json:"via,omitempty"`
	Hops    string `json:"hops,omitempty"`
	Depth   *int   `json:"depth,omitempty"`   // queued: link depth as the frontier holds it
	Sitemap bool   `json:"sitemap,omitempty"` // to be read as a sitemap
	// From a crawl.log line (fetched and seen): the last one of the URL.
	Status  *int   `json:"status,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Time    string `json:"time,omitempty"`
	Digest  string `json:"digest,omitempty"`
	// Source says where a seen URL was found: "log", "frontier",
	// "handoff" (fetched by an earlier owner of its host) or "spool".
	Source string `json:"source,omitempty"`
	// Peer is the cluster member a URL is spooled for (queued and seen):
	// this node found it, its host is the peer's, and the peer has not
	// acknowledged it yet (down, or the crawl stopped first).
	Peer string `json:"peer,omitempty"`
}

// Export calls fn with the URLs of kind what (ExportQueued, ExportFetched,
// ExportSeen) of the stopped node's data directory dir, each URL once:
// queued in the frontier's order (host by host), fetched and seen in
// crawl.log order, then the frontier's, then the hand-off's. It opens the
// frontier, which takes its lock: while a node runs on dir, Export fails
// (a running node's stores are not a consistent picture) with an error
// that says so. A cluster member's queued and seen URLs include those
// spooled for a peer and not yet acknowledged (ExportedURL.Peer). The DUE's pending candidates, not yet admitted, are not
// exported (a clean stop delivers them).
func Export(dir, what string, fn func(ExportedURL) error) error {
	if what != ExportQueued && what != ExportFetched && what != ExportSeen {
		return fmt.Errorf("%w: export %q: want %s, %s or %s", ErrInvalidOptions, what, ExportQueued, ExportFetched, ExportSeen)
	}
	ds, err := inspectDir(dir)
	if err != nil {
		return err
	}
	if !ds.used() {
		return fmt.Errorf("%w: %s", ErrNotDataDir, dir)
	}
	path := filepath.Join(dir, frontierDir)
	fr, err := frontier.Open(path, frontier.Options{})
	if err != nil {
		return fmt.Errorf("crawl: export: the frontier %s does not open (is a node running on %s?): %w", path, dir, err)
	}
	defer fr.Close()
	done := map[string]bool{}
	emit := func(u ExportedURL) error {
		if done[u.URL] {
			return nil
		}
		done[u.URL] = true
		return fn(u)
	}
	if what != ExportQueued {
		if err := exportLog(filepath.Join(dir, crawlLogFile), what, emit); err != nil {
			return err
		}
	}
	if what != ExportFetched {
		if _, err := fr.Scan(func(it frontier.Item) error {
			return emit(queuedURL(it, what))
		}); err != nil {
			return fmt.Errorf("crawl: export: frontier: %w", err)
		}
	}
	if what != ExportFetched {
		if err := exportSpool(filepath.Join(dir, spoolDir), what, emit); err != nil {
			return err
		}
	}
	if what == ExportSeen {
		in, err := readSeenIn(filepath.Join(dir, seenInLog))
		if err != nil {
			return err
		}
		for _, u := range in {
			if err := emit(ExportedURL{URL: u, Source: "handoff"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// exportSpool emits the URLs a cluster member spooled for its peers and
// they have not acknowledged: queued nowhere else (the peer's DUE has not
// seen them). A hand-off's already-fetched URLs (hostsplit.KindSeen) are
// seen, not queued.
func exportSpool(dir, what string, emit func(ExportedURL) error) error {
	err := hostsplit.ReadSpool(dir, hostsplit.Limits{}, func(b hostsplit.SpooledBatch) error {
		if b.Kind == hostsplit.KindSeen && what == ExportQueued {
			return nil
		}
		for _, s := range b.URLs {
			bare, a := splitAnnot(s)
			u := ExportedURL{URL: bare, Via: a.via, Hops: a.hops, Sitemap: a.sm != smPage, Peer: string(b.Peer)}
			if b.Kind != hostsplit.KindSeen {
				d := int(hopsDepth(a.hops)) // what the peer will give it
				u.Depth = &d
			}
			if what == ExportSeen {
				u.Source = "spool"
			}
			if err := emit(u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("crawl: export: %w", err)
	}
	return nil
}

// queuedURL is a frontier item as exported.
func queuedURL(it frontier.Item, what string) ExportedURL {
	bare, a := splitAnnot(it.URL)
	d := int(it.Depth)
	u := ExportedURL{URL: bare, Via: a.via, Hops: a.hops, Depth: &d, Sitemap: a.sm != smPage}
	if what == ExportSeen {
		u.Source = "frontier"
	}
	return u
}

// exportLog emits the URLs of crawl.log: those with a request sent
// (fetched), or those plus the ones robots.txt refused (seen); each with
// its last line's status. robots.txt lines are not URLs the crawl admitted.
func exportLog(path, what string, emit func(ExportedURL) error) error {
	es, _, err := ReadLog(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("crawl: export: %w", err)
	}
	last := map[string]int{}
	for i, e := range es {
		last[e.URL] = i
	}
	for i, e := range es {
		switch {
		case last[e.URL] != i || e.URL == "" || strings.HasSuffix(e.URL, LogEllipsis):
			continue // a later line says more; a cut URL names no page
		case e.Outcome == OutcomeRobots && (what == ExportFetched || isRobotsTxtLine(e)):
			continue
		}
		st := e.Status
		u := ExportedURL{URL: e.URL, Via: e.Via, Hops: e.Hops, Status: &st, Outcome: e.Outcome,
			Time: e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), Digest: e.Digest, Sitemap: IsSitemapNote(e.Note)}
		if what == ExportSeen {
			u.Source = "log"
		}
		if err := emit(u); err != nil {
			return err
		}
	}
	return nil
}

// isRobotsTxtLine reports whether a robots line is about robots.txt itself
// (a redirect to another host), not a page robots.txt refused.
func isRobotsTxtLine(e LogEntry) bool {
	return strings.HasSuffix(e.URL, "/robots.txt") && strings.HasPrefix(e.Note, "robots.txt")
}
