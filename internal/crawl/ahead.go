package crawl

import (
	"context"
	"fmt"
	"runtime"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// Fetching ahead (the default; Options.NoFetchAhead): once a page's response is read, the
// worker releases the host (frontier.Release), leases the next ready URL
// at once (often the same host's next) and starts its request in a
// goroutine of its own, then extracts, routes, logs and completes the page
// it holds while that request is on the wire. A narrow crawl (one host, or
// a few) then spends its time on the server's side of each request, not
// on the hand-over from one worker to the next (docs/bench/onehost.md).
//
// A worker holds at most one lease ahead, and the frontier hands out at
// most Workers leases in all (frontier.Options.MaxLeases), so a kill -9
// still repeats at most one fetch per worker. The request is started only
// when the worker would send it anyway: a page (not a sitemap) whose
// origin's robots.txt is cached, fresh and allows it. Anything else is
// leased ahead but processed as usual. Off with a WARC writer (its tails
// already take the page's end off the worker), revisits, a member's fence
// or claim, and MaxFetches.

// ahead is a lease taken ahead and, if started, its request in flight.
type ahead struct {
	lease frontier.Lease
	// Set when the request was started:
	done  chan struct{} // closed when resp, err are set
	resp  *fetcher.Response
	err   error
	rules *fetcher.RobotsRules // the origin's, when the request was started
	offer bool                 // the origin's sitemaps are still to be offered
}

// aheadAllowed reports whether this node may fetch ahead at all.
func (n *Node) aheadAllowed() bool {
	return !n.opts.NoFetchAhead && n.opts.WARC == nil && n.rv == nil && n.fence == nil && n.claim == nil &&
		n.limit.reached == nil
}

// leaseAhead is called once l's response is read: it releases l's host
// and, if the worker may, leases the next URL and starts its request.
func (w *worker) leaseAhead(ctx context.Context, l frontier.Lease, resp *fetcher.Response, rules *fetcher.RobotsRules) error {
	n := w.n
	pr := frontier.Result{Duration: resp.Duration, CrawlDelay: rules.CrawlDelay(), Failed: resp.Status >= 500}
	if w.ahead != nil || !n.aheadAllowed() {
		if err := n.fr.Release(l, pr); err != nil {
			return fmt.Errorf("crawl: frontier release: %w", err)
		}
		return nil
	}
	next, ok, err := n.fr.ReleaseNext(l, pr, w.id)
	if err != nil {
		return fmt.Errorf("crawl: frontier release: %w", err)
	}
	if !ok {
		return nil
	}
	n.busy.Add(1)
	a := &ahead{lease: next}
	w.ahead = a
	bare, ca := splitAnnot(next.URL)
	if ca.sm != smPage {
		return nil
	}
	u, err := urlnorm.Parse(bare)
	if err != nil {
		return nil
	}
	scheme, host := u.Scheme(), u.Host()
	r := n.ft.CachedRobots(scheme, host)
	if r == nil || r.Retry || !r.Allowed(bare) {
		return nil
	}
	a.rules, a.done = r, make(chan struct{})
	a.offer = n.opts.Sitemaps != SitemapsOff && n.sm.firstVisit(scheme+"://"+host)
	go func() {
		defer close(a.done)
		a.resp, a.err = n.ft.Fetch(ctx, bare)
	}()
	// Let the request go out before the page's processing takes the CPU:
	// a new goroutine otherwise waits for this one to block.
	runtime.Gosched()
	return nil
}

// takeAhead returns the lease taken ahead, if any; if its request was
// started, process picks up the response (w.started).
func (w *worker) takeAhead() (frontier.Lease, bool) {
	a := w.ahead
	if a == nil {
		return frontier.Lease{}, false
	}
	w.ahead = nil
	if a.done != nil {
		w.started = a
	}
	return a.lease, true
}

// fetchStarted is process for a lease whose request was started ahead:
// the checks were made then, with the rules of that moment.
func (w *worker) fetchStarted(ctx context.Context, l frontier.Lease, u *urlnorm.URL, a *ahead) (frontier.Result, error) {
	if a.offer {
		if err := w.offerSitemaps(ctx, u.Scheme(), u.Host(), l.Depth, a.rules); err != nil {
			return frontier.Result{}, err // complete discards the request
		}
	}
	res, err := w.fetch(ctx, l, u, a.rules)
	if err != nil {
		w.n.metrics.FetchesRequeued.Add(1)
	}
	return res, err
}

// response returns the response of the request started ahead for this
// lease, or fetches url now.
func (w *worker) response(ctx context.Context, url string, wireCap, decodedCap int64) (*fetcher.Response, error) {
	if a := w.started; a != nil {
		w.started = nil
		<-a.done
		return a.resp, a.err
	}
	if w.sm == smPage {
		return w.n.ft.Fetch(ctx, url)
	}
	return w.n.ft.FetchCapped(ctx, url, wireCap, decodedCap)
}

// dropStarted discards the request started ahead for the lease being
// processed, which will not use it.
func (w *worker) dropStarted() {
	if a := w.started; a != nil {
		w.started = nil
		a.discard(&w.n.metrics)
	}
}

// discard waits for a's request, if started, and closes its response: a
// fetch begun and not completed.
func (a *ahead) discard(m *Metrics) {
	if a.done == nil {
		return
	}
	<-a.done
	if a.resp != nil {
		a.resp.Close()
	}
	m.FetchesRequeued.Add(1)
}

// dropAhead puts a lease taken ahead back (the worker is stopping): its
// request, if started, is waited for and discarded, and the URL requeued.
func (w *worker) dropAhead() error {
	a := w.ahead
	if a == nil {
		return nil
	}
	w.ahead = nil
	a.discard(&w.n.metrics)
	err := w.n.fr.Done(a.lease, frontier.Result{Requeue: true})
	w.n.busy.Add(-1)
	if err != nil {
		return fmt.Errorf("crawl: frontier done: %w", err)
	}
	return nil
}
