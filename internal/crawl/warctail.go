package crawl

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/warc"
)

// The end of an archived page fetch runs in a tail goroutine (issue 27).
// The worker queues the page's records, routes its links, releases the
// host's politeness slot (frontier.Release) and hands the rest to a tail:
// wait for the records, write the crawl log line, complete the lease
// (frontier.Done, durable with SyncDone). Neither the worker nor the host
// waits for the WARC writer. The order per fetch is unchanged: records in
// the OS, then the log line (logged ⇒ archived), then the durable
// completion (done ⇒ logged); a kill -9 loses only fetches not yet done,
// which the restarted node leases and fetches again.

// pageEnd is what is left of a page fetch once its links are routed.
type pageEnd struct {
	url     string
	e       LogEntry
	outcome *atomic.Uint64
	resp    *fetcher.Response
	pr      pageRobots
	sitemap bool // e.Note carries the sitemap note already
	// finish waits for the records (nil: not archived).
	finish func() (warc.Location, error)
	// observe, if set, sees the entry once its digest is known, before it
	// is logged (continuous crawling: revisit.go).
	observe func(*LogEntry)
}

// endPage waits for the page's records, then writes its crawl log line and
// counts the fetch. An error is fatal to the node; the URL is requeued.
func (n *Node) endPage(p *pageEnd) error {
	e := p.e
	if p.finish != nil {
		loc, err := p.finish()
		if werr := n.warcResult(p.url, err); werr != nil {
			return werr
		}
		if err == nil {
			e.WARCFile, e.WARCOffset, e.Digest = loc.File, loc.Offset, loc.PayloadDigest
		}
	}
	if e.Digest == "" {
		var derr error
		if e.Digest, derr = payloadDigest(p.resp.Body.NewReader()); derr != nil {
			// The body's spill file failed to read back: the line goes
			// without a digest rather than stop the node over it.
			n.opts.Logger.Warn("crawl: digest failed", "url", p.url, "err", derr)
		}
	}
	if p.observe != nil {
		p.observe(&e)
	}
	if err := n.logFetch(e, p.outcome, p.resp.Duration, p.resp.Bytes, p.sitemap); err != nil {
		return err
	}
	p.pr.count(&n.metrics)
	return nil
}

// tails owns the tail goroutines of a Run.
type tails struct {
	wg   sync.WaitGroup
	sem  chan struct{} // bounds the tails in flight (and the responses they hold)
	errc chan<- error  // Run's: a tail's fatal error stops the node
	once sync.Once     // only the first error is sent
}

// start prepares t for a Run of workers workers reporting to errc.
func (t *tails) start(workers int, errc chan<- error) {
	t.sem = make(chan struct{}, workers)
	t.errc = errc
	t.once = sync.Once{}
}

// report sends err to the Run, once: one fatal error stops it.
func (t *tails) report(err error) {
	t.once.Do(func() {
		select {
		case t.errc <- err:
		default:
		}
	})
}

// wait waits for every tail (Run, after its workers).
func (t *tails) wait() { t.wg.Wait() }

// handOff releases the host and starts p's tail, which completes l with
// res. The worker's loop must not complete l (w.handed).
func (w *worker) handOff(l frontier.Lease, res frontier.Result, p *pageEnd) error {
	n := w.n
	if err := n.fr.Release(l, res); err != nil {
		p.finish()
		return fmt.Errorf("crawl: frontier release: %w", err)
	}
	t := &n.tails
	t.sem <- struct{}{}
	t.wg.Add(1)
	w.handed = true
	go func() {
		defer t.wg.Done()
		defer func() { <-t.sem }()
		defer p.resp.Close()
		err := n.endPage(p)
		r := res
		if err != nil {
			r = frontier.Result{Requeue: true}
			n.metrics.FetchesRequeued.Add(1)
		}
		derr := n.fr.Done(l, r)
		n.busy.Add(-1)
		if err == nil && derr != nil {
			err = fmt.Errorf("crawl: frontier done: %w", derr)
		}
		if err != nil {
			t.report(err)
		}
	}()
	return nil
}
