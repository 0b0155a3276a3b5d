package crawl

import (
	"context"
	"net"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// robotsGate is the node's fetcher.HostGate: a robots.txt redirect to
// another host borrows that host's politeness slot from the frontier
// (frontier.Borrow), so the hop waits its turn like any fetch of that host
// and the host rests after it. The slot is this node's: a host another
// node owns is kept polite by this node's requests only (its owner's
// fetches are not coordinated with the hop).
type robotsGate Node

// Acquire implements fetcher.HostGate.
func (g *robotsGate) Acquire(holding, target string) (func(time.Duration, bool), time.Time, bool, error) {
	n := (*Node)(g)
	u, err := urlnorm.Parse(target)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	key := n.politenessKey(u.Host())
	if h, err := urlnorm.Parse(u.Scheme() + "://" + holding + "/"); err == nil && n.politenessKey(h.Host()) == key {
		// One politeness key (same IP, say): the caller's slot covers it.
		return func(time.Duration, bool) {}, time.Time{}, true, nil
	}
	b, ok, retry, err := n.fr.Borrow(key)
	if err != nil || !ok {
		return nil, retry, false, err
	}
	// The other host's Crawl-delay, if its robots.txt is known, spaces its
	// next fetch as after any other.
	var crawlDelay time.Duration
	if r := n.ft.CachedRobots(u.Scheme(), u.Host()); r != nil {
		crawlDelay = r.CrawlDelay()
	}
	return func(d time.Duration, failed bool) {
		if err := n.fr.Return(b, frontier.Result{Duration: d, CrawlDelay: crawlDelay, Failed: failed}); err != nil {
			n.opts.Logger.Warn("crawl: returning a politeness slot failed", "host", key, "err", err)
		}
	}, time.Time{}, true, nil
}

var _ fetcher.HostGate = (*robotsGate)(nil)

// politenessKey is the frontier's politeness key of host[:port] (canonical):
// the host itself, or with PolitenessKey "ip" the address it resolves to
// (the host itself if it does not resolve).
func (n *Node) politenessKey(host string) string {
	if n.opts.PolitenessKey != PolitenessIP {
		return host
	}
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	a, err := n.ft.LookupIP(context.Background(), name)
	if err != nil {
		n.metrics.LookupFailures.Add(1)
		return host
	}
	return a.String()
}
