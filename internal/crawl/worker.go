package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// Outcomes written to the crawl log. Only outcomes with a request sent
// (everything but OutcomeRobots) count as fetches.
const (
	OutcomeOK       = "ok"       // 2xx
	OutcomeRedirect = "redirect" // 3xx, target handed on as a link
	OutcomeHTTPErr  = "http-error"
	OutcomeError    = "error"  // network error, timeout
	OutcomeRobots   = "robots" // disallowed by robots.txt: no request sent
)

// NoteContentSeen is the crawl log note of a page whose body is
// byte-identical to one processed before: its links were not extracted
// (Mercator's content-seen test).
const NoteContentSeen = "content-seen:links-not-extracted"

// Metrics are a node's counters; read them with Stats. All fields are safe
// for concurrent use.
type Metrics struct {
	Fetches, FetchOK, FetchRedirect, FetchHTTPErr, FetchErr atomic.Uint64
	RobotsDisallowed, RobotsFetches                         atomic.Uint64
	Bytes                                                   atomic.Uint64
	LinksFound, LinksFiltered, LinksLocal, LinksRemote      atomic.Uint64
	LinksTooDeep                                            atomic.Uint64
	CacheHits, CacheMisses                                  atomic.Uint64
	ContentDuplicates                                       atomic.Uint64
	WARCRecords, WARCErrors                                 atomic.Uint64
	NewURLs, Received                                       atomic.Uint64 // NewURLs: delivered by the DUE (budget drops included)
	LookupFailures                                          atomic.Uint64 // PolitenessKey "ip": names that did not resolve
	PrivateRefused                                          atomic.Uint64 // URLs whose host is at an address the fetcher's guard refuses
	FetchNanos                                              atomic.Int64
	// FetchesRequeued counts fetches begun but not completed (cut short by
	// the stop or by a fatal error): not logged, their URLs requeued.
	FetchesRequeued atomic.Uint64
	// FetchRetries counts fetches that timed out or failed to connect and
	// were requeued for another attempt (fetchretry.go): not logged.
	FetchRetries   atomic.Uint64
	robotsMetrics  // robotsmeta.go
	classMetrics   // fetchclass.go
	revisitMetrics // revisit.go
}

type worker struct {
	n      *Node
	id     int
	ex     *extract.Extractor
	fc     cache.Cache    // per-worker front cache, nil if none
	page   extract.Result // the extraction of the page being fetched (robotsmeta.go)
	pageOK bool           // page is set: w.links are the page's extracted links
	token  string         // robots token, for X-Robots-Tag
	local  []due.Entry
	remote []string
	obsL   []uint64 // the page's local fingerprints, for FrontObserverBatch
	obsR   []uint64 // the page's remote fingerprints, for RemoteObserverBatch
	links  []*urlnorm.URL
	kinds  []byte // hop letter of each of links (hoppath.go)
	sniff  []byte
	sm     uint8 // the leased URL's sitemap level (sitemaps.go)
	smHops uint8 // the redirects that led to the leased sitemap
	routed int   // links of the fetch routed before the end (a sitemap's batches)
	// cur is the leased URL (bare) and how it was reached (annot.go): its
	// links are annotated with it as via. Empty for seeds.
	cur string
	ca  annot
	rv  rvFetch // continuous crawling (revisit.go)
	// ahead is a lease taken ahead (ahead.go); started, the one being
	// processed whose request was started ahead.
	ahead, started *ahead
	// handed says the last fetch's end went to a tail goroutine
	// (warctail.go), which completes its lease: the loop must not.
	handed bool
	// abuf and hopMemo serve annotate, once per link routed.
	abuf    []byte
	hopMemo [4]struct {
		hop        byte
		from, hops string // hops = extendHops(from, hop)
	}
	hopNext int
}

func (n *Node) newWorker(id int) *worker {
	eo := n.opts.extractOptions()
	ex, err := extract.New(eo)
	if err != nil {
		panic(err) // options were validated in Open
	}
	w := &worker{n: n, id: id, ex: ex, sniff: make([]byte, 512), token: eo.RobotsToken}
	switch {
	case n.shared != nil:
		w.fc = n.shared
	case n.opts.CacheAlgo != "none" && n.opts.CachePerWorker > 0:
		w.fc, _ = cache.New(n.opts.CacheAlgo, n.opts.CachePerWorker)
	}
	return w
}

func (w *worker) loop(ctx context.Context) (err error) {
	defer func() {
		if derr := w.dropAhead(); err == nil && ctx.Err() == nil {
			err = derr
		}
	}()
	for ctx.Err() == nil {
		if l, ok := w.takeAhead(); ok {
			// Leased ahead (ahead.go): no fence or claim, busy counted.
			if stop, err := w.complete(ctx, l); err != nil || stop {
				return err
			}
			continue
		}
		l, err := w.n.fr.NextFor(ctx, w.id)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, frontier.ErrClosed) {
				return nil
			}
			return fmt.Errorf("crawl: frontier: %w", err)
		}
		if w.n.fence != nil {
			if held, _ := w.n.fence(); !held {
				// Fenced (issue 25): no request to the host; the URL goes
				// back and the worker stops until the member restarts it.
				if err := w.n.fr.Done(l, frontier.Result{Requeue: true}); err != nil {
					return fmt.Errorf("crawl: frontier done: %w", err)
				}
				return nil
			}
		}
		if !w.n.claimFetch() {
			// A membership change began (PREPARE, elastic_claim.go): no
			// request to a host that may move; the URL goes back and the
			// worker stops, as Run will stop the others.
			if err := w.n.fr.Done(l, frontier.Result{Requeue: true}); err != nil {
				return fmt.Errorf("crawl: frontier done: %w", err)
			}
			return nil
		}
		w.n.busy.Add(1)
		stop, err := w.complete(ctx, l)
		w.n.endClaim()
		if err != nil || stop {
			return err
		}
	}
	return nil
}

// complete processes the leased URL l and completes its lease. stop says
// the worker must stop without an error (the fetch limit).
func (w *worker) complete(ctx context.Context, l frontier.Lease) (stop bool, err error) {
	w.rv = rvFetch{}
	res, err := w.process(ctx, l)
	w.dropStarted() // a path that did not use the request started ahead
	if w.handed {
		w.handed = false
		return false, nil
	}
	if err == nil && !res.Requeue {
		err = w.scheduleRevisit(l) // before Done: a crash re-fetches rather than forgets
	}
	limited := errors.Is(err, errFetchLimit)
	if err != nil {
		// Shutting down mid-fetch, the fetch limit, or a failure of
		// this node (storage): the URL goes back for the restart,
		// never dropped.
		res = frontier.Result{Requeue: true}
		if ctx.Err() != nil || limited {
			err = nil
		}
	}
	if !res.Requeue {
		bare, _ := splitAnnot(l.URL)
		w.n.retry.forget(bare)
	}
	derr := w.n.fr.Done(l, res)
	w.n.busy.Add(-1)
	if err != nil {
		return false, err
	}
	if derr != nil {
		return false, fmt.Errorf("crawl: frontier done: %w", derr)
	}
	return limited, nil
}

// process handles one leased URL and returns the politeness result. An
// error is fatal to the node (storage failure); fetch failures are logged.
func (w *worker) process(ctx context.Context, l frontier.Lease) (frontier.Result, error) {
	n := w.n
	l.URL, w.ca = splitAnnot(l.URL)
	w.sm, w.smHops, w.cur = w.ca.sm, w.ca.smHops, l.URL
	u, err := urlnorm.Parse(l.URL)
	if err != nil { // cannot happen for URLs that passed the DUE
		return frontier.Result{}, w.logLine(w.entry(LogEntry{Time: time.Now(), Node: n.opts.ID, URL: l.URL, Status: -1, Outcome: OutcomeError, Note: err.Error()}))
	}
	if a := w.started; a != nil {
		return w.fetchStarted(ctx, l, u, a)
	}
	scheme, host := u.Scheme(), u.Host()
	rules, fetched, rdur, err := n.ft.Robots(ctx, scheme, host)
	if err != nil {
		if ctx.Err() != nil {
			return frontier.Result{}, ctx.Err()
		}
		return frontier.Result{Requeue: true, Failed: true}, nil
	}
	if fetched {
		n.metrics.RobotsFetches.Add(1)
		if err := w.logRobots(l.URL, scheme, host, rules, rdur); err != nil {
			return frontier.Result{}, err
		}
		// The robots.txt request used this host's politeness slot: fetch
		// the page in a later one. After a failed robots.txt with attempts
		// left, that slot is when the fetcher will try it again.
		return frontier.Result{Duration: rdur, CrawlDelay: max(rules.CrawlDelay(), robotsRetryIn(rules)), Requeue: true}, nil
	}
	if rules.Retry {
		// robots.txt failed but has attempts left: hold the URL until the
		// fetcher's next attempt (Options.RobotsRetryDelay, doubling); the
		// host's failure back-off would space the attempts further apart.
		return frontier.Result{Requeue: true, CrawlDelay: robotsRetryIn(rules)}, nil
	}
	if !rules.Allowed(l.URL) {
		e := w.entry(LogEntry{Time: time.Now(), Node: n.opts.ID, URL: l.URL, Outcome: OutcomeRobots})
		switch {
		case errors.Is(rules.Err, fetcher.ErrPrivateAddress):
			// Not robots.txt's verdict: the guard refused the host's address.
			n.metrics.PrivateRefused.Add(1)
			e.Note = privateNote(host, rules.Err)
		case rules.Outcome == fetcher.RobotsUnreachable:
			e.Note = "robots.txt unreachable"
			if rules.Err != nil { // the cause: an untrusted certificate is no outage
				e.Note += ": " + rules.Err.Error()
			}
		}
		if err := w.logLine(e); err != nil {
			return frontier.Result{}, err
		}
		if !errors.Is(rules.Err, fetcher.ErrPrivateAddress) {
			n.metrics.RobotsDisallowed.Add(1)
		}
		return frontier.Result{CrawlDelay: rules.CrawlDelay()}, nil
	}
	if err := w.discoverSitemaps(ctx, scheme, host, l.Depth, rules); err != nil {
		return frontier.Result{}, err
	}
	if !n.beginFetch() {
		return frontier.Result{}, errFetchLimit
	}
	defer n.endFetch()
	res, err := w.fetch(ctx, l, u, rules)
	if err != nil {
		// Cut short by the stop or by a fatal error: the loop requeues the
		// URL and nothing was logged, so it is not a fetch (Stats.Fetches
		// counts completed ones: crawl.log's lines).
		n.metrics.FetchesRequeued.Add(1)
	}
	return res, err
}

// fetch fetches a URL robots.txt allows, logs it and routes its links. The
// counters of a fetch move only once its crawl log line is written, so that
// the report agrees with crawl.log.
func (w *worker) fetch(ctx context.Context, l frontier.Lease, u *urlnorm.URL, rules *fetcher.RobotsRules) (frontier.Result, error) {
	n := w.n
	start := time.Now()
	wireCap, decodedCap := n.sitemapCaps()
	var resp *fetcher.Response
	ctx, err := w.revisitBegin(ctx, l.URL)
	if err != nil {
		return frontier.Result{}, err
	}
	resp, err = w.response(ctx, l.URL, wireCap, decodedCap) // ahead.go
	if err != nil {
		return w.fetchFailed(ctx, l, u, rules, time.Since(start), err)
	}
	n.retry.forget(l.URL) // answered: a tail may complete the lease (warctail.go)
	defer func() {
		if !w.handed { // else the tail closes it
			resp.Close()
		}
	}()
	if n.opts.ReleaseEarly || n.aheadAllowed() {
		// The host's request is over: its next fetch may be scheduled now
		// (Mercator), and started now (ahead.go); the lease itself ends
		// with the loop's Done.
		if err := w.leaseAhead(ctx, l, resp, rules); err != nil {
			return frontier.Result{}, err
		}
	}
	e := w.entry(LogEntry{Time: time.Now(), Node: n.opts.ID, URL: l.URL, Status: resp.Status, Bytes: resp.Bytes,
		ContentType: resp.ContentType, Duration: resp.Duration, Proto: resp.Proto})
	res := frontier.Result{Duration: resp.Duration, CrawlDelay: rules.CrawlDelay()}
	w.links, w.kinds, w.page, w.pageOK, w.routed = w.links[:0], w.kinds[:0], extract.Result{}, false, 0
	var outcome *atomic.Uint64
	switch {
	case w.notModified(resp): // nothing new: no links, counted unchanged
		outcome = &n.metrics.FetchNotModified
		e.Outcome = OutcomeNotModified
	case resp.Status >= 300 && resp.Status < 400:
		outcome = &n.metrics.FetchRedirect
		e.Outcome, e.Note = OutcomeRedirect, resp.Location
		if c, err := urlnorm.Parse(resp.Location); resp.Location != "" && err == nil {
			if w.sm == smPage {
				w.links, w.kinds = append(w.links, c), append(w.kinds, HopRedirect)
			} else if err := w.sitemapRedirect(ctx, c, l.Depth); err != nil {
				return res, err
			}
		}
	case resp.Status >= 200 && resp.Status < 300:
		outcome = &n.metrics.FetchOK
		e.Outcome = OutcomeOK
		if w.sm != smPage {
			if e.Note, err = w.readSitemap(ctx, l.URL, l.Depth, resp); err != nil {
				return res, err
			}
		} else if dup, err := w.extract(u, resp); err != nil {
			e.Note = err.Error()
		} else if dup {
			e.Note = NoteContentSeen
		}
	default:
		outcome = &n.metrics.FetchHTTPErr
		n.metrics.countHTTPErr(resp.Status)
		e.Outcome = OutcomeHTTPErr
		res.Failed = resp.Status >= 500
	}
	var pr pageRobots
	if e.Outcome == OutcomeOK {
		pr = w.applyRobots(&e, u, resp)
	}
	if resp.Truncated {
		e.Note = "truncated " + e.Note
	}
	p := &pageEnd{url: l.URL, e: e, outcome: outcome, resp: resp, pr: pr}
	if n.rv != nil {
		// Revisit state is the worker's: its page ends in the worker.
		p.observe = func(e *LogEntry) { w.revisitObserve(e, resp) }
	}
	if n.opts.WARC != nil {
		p.finish = w.startArchive(ctx, l.URL, start, resp)
	}
	p.e.Links = w.routed + len(w.links)
	if err := w.routeLinks(ctx, childDepth(l.Depth)); err != nil {
		if p.finish != nil {
			p.finish()
		}
		return res, err
	}
	if p.finish != nil && w.sm == smPage && !n.opts.WARCArchive.WaitInWorker && p.observe == nil {
		return res, w.handOff(l, res, p)
	}
	if w.sm != smPage {
		p.e.Note = sitemapNote(w.sm, w.smHops, p.e.Note)
		p.sitemap = true
	}
	return res, n.endPage(p)
}

// entry fills in how the leased URL was reached.
func (w *worker) entry(e LogEntry) LogEntry {
	e.Via, e.Hops = w.ca.via, w.ca.hops
	return e
}

// logFetch writes a completed fetch's crawl log line and only then counts
// it. A line that cannot be written (disk full) is a fatal error: the URL
// is requeued rather than completed without its record.
func (w *worker) logFetch(e LogEntry, outcome *atomic.Uint64, d time.Duration, bytes int64) error {
	if w.sm != smPage {
		e.Note = sitemapNote(w.sm, w.smHops, e.Note)
	}
	return w.n.logFetch(e, outcome, d, bytes, w.sm != smPage)
}

// logFetch is worker.logFetch for a line whose sitemap note, if any, is
// set (a tail goroutine's: warctail.go).
func (n *Node) logFetch(e LogEntry, outcome *atomic.Uint64, d time.Duration, bytes int64, sitemap bool) error {
	m := &n.metrics
	if err := n.logLine(e); err != nil {
		return err
	}
	if f := n.opts.OnFetch; f != nil {
		f(e)
	}
	if sitemap {
		n.sm.m.fetches.Add(1)
	}
	m.Fetches.Add(1)
	outcome.Add(1)
	m.FetchNanos.Add(int64(d))
	m.Bytes.Add(uint64(bytes))
	return nil
}

// logLine writes a crawl log line; failing to is fatal to the node.
func (w *worker) logLine(e LogEntry) error { return w.n.logLine(e) }

func (n *Node) logLine(e LogEntry) error {
	if err := n.log.Write(e); err != nil {
		return fmt.Errorf("crawl: crawl log: %w", err)
	}
	return nil
}

// extract collects the links of an HTML body into w.links, skipping bodies
// seen before (Mercator's content-seen test, bounded by
// Options.ContentSeenSize): it reports whether the body was such a
// duplicate.
func (w *worker) extract(base *urlnorm.URL, resp *fetcher.Response) (dup bool, err error) {
	n := w.n
	r := resp.Body.NewReader()
	k, _ := io.ReadFull(r, w.sniff)
	if !extract.IsHTML(resp.Header.Get("Content-Type"), w.sniff[:k]) {
		return false, nil
	}
	if n.contentSeen != nil {
		fp, err := resp.Body.Fingerprint()
		if err != nil {
			return false, err
		}
		if n.contentSeen.Seen(fp) {
			n.metrics.ContentDuplicates.Add(1)
			return true, nil
		}
	}
	w.page, err = w.ex.Extract(resp.Body.NewReader(), base, resp.Header.Get("Content-Type"), func(l extract.Link) {
		w.links = append(w.links, l.Parsed()) // canonical already: no second parse
		w.kinds = append(w.kinds, linkHop(l.Tag, l.Attr))
	})
	w.pageOK = true
	return false, err
}

// robotsNote is the crawl-log note of a robots.txt fetch: where it went
// when it redirected to another host (or would have), else "robots.txt"
// and its outcome (parsed, allow-all, unreachable and why…), so that the
// line reads as robots.txt's own (export: isRobotsTxtLine).
func robotsNote(r *fetcher.RobotsRules) string {
	switch {
	case r.RefusedRedirect != "":
		return "robots.txt redirect to another host refused (no politeness gate): " + r.RefusedRedirect + "; treated as unavailable (allow all)"
	case r.Redirect == "" && r.Err != nil:
		return "robots.txt " + r.Outcome.String() + ": " + r.Err.Error()
	case r.Redirect == "":
		return "robots.txt " + r.Outcome.String()
	case r.Outcome == fetcher.RobotsDeferred:
		return "robots.txt redirects to another host: " + r.Redirect + "; waiting for that host's politeness slot (URLs held)"
	}
	return "robots.txt redirects to another host: " + r.Redirect + ", fetched in that host's politeness slot (" + r.Outcome.String() + ")"
}

// privateNote is the crawl-log note of a URL of host whose address the
// fetcher's private-address guard refused.
func privateNote(host string, err error) string {
	addr := "address unknown"
	if a, ok := fetcher.RefusedAddr(err); ok {
		addr = a.String()
	}
	return "private address refused: " + host + " (" + addr + ")"
}

// robotsRetryIn is how long until a failed robots.txt with attempts left is
// fetched again (0 otherwise).
func robotsRetryIn(r *fetcher.RobotsRules) time.Duration {
	if !r.Retry {
		return 0
	}
	return max(time.Until(r.Expires), 0)
}
