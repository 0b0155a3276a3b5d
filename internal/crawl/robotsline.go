package crawl

import (
	"errors"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
)

// logRobots writes the crawl-log line of a robots.txt fetch that the
// leased URL needed: a line of its own, as Heritrix logs prerequisites
// (its via the leased URL, its hop path that URL's plus P). It is a
// robots line (OutcomeRobots), not a page fetch: no fetch is counted and
// readers that collect fetched URLs skip it.
func (w *worker) logRobots(via, scheme, host string, rules *fetcher.RobotsRules, d time.Duration) error {
	status := rules.Status
	if status == 0 { // no response: a network error
		status = -1
	}
	note := robotsNote(rules)
	if errors.Is(rules.Err, fetcher.ErrPrivateAddress) {
		note = "robots.txt " + privateNote(host, rules.Err) // the guard's refusal, not an outage
	}
	return w.logLine(LogEntry{Time: time.Now(), Node: w.n.opts.ID, URL: scheme + "://" + host + "/robots.txt", Status: status,
		Outcome: OutcomeRobots, Duration: d, Note: note, Via: via, Hops: extendHops(w.ca.hops, HopPrereq)})
}
