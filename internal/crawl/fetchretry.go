package crawl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// fetchRetry counts the failed attempts at URLs whose fetch timed out or
// whose connection failed (issue 25: a fetch cut short by load lost every
// page only it linked). Such a URL goes back to its host's queue, politeness
// and failure back-off obeyed, until Options.FetchAttempts attempts have
// failed; only the last is logged, as an error.
//
// An entry lives while its URL is queued for another attempt: it is deleted
// when the URL completes (fetched, logged as failed, or done for any other
// reason: forget), and when its host moves to another node (forgetMoved).
type fetchRetry struct {
	mu       sync.Mutex
	attempts map[string]int // bare URL → failed attempts so far
	// size mirrors len(attempts) so that forget, called for every
	// completed fetch, takes no lock while no URL awaits a retry.
	size atomic.Int64
}

// retryable reports whether a fetch that failed with err may succeed if
// tried again: a timeout or a failed connection, not an answer (those are
// no errors), a refused address, a certificate or a name that does not
// exist (fetcher.IsRetryable), nor our own disk or a cancellation.
func retryable(err error) bool {
	return fetcher.IsRetryable(err) && !errors.Is(err, fetcher.ErrLocal) && !errors.Is(err, fetcher.ErrCanceled)
}

// again records a failed attempt at url and reports whether it should be
// tried again (fewer than limit attempts failed). If not, the entry is
// deleted: the caller logs the failure and completes the URL.
func (r *fetchRetry) again(url string, limit int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.attempts[url] + 1
	if k >= limit {
		delete(r.attempts, url)
		r.size.Store(int64(len(r.attempts)))
		return false
	}
	if r.attempts == nil {
		r.attempts = make(map[string]int)
	}
	r.attempts[url] = k
	r.size.Store(int64(len(r.attempts)))
	return true
}

// forget deletes url's entry: its lease ended without a requeue.
func (r *fetchRetry) forget(url string) {
	if r.size.Load() == 0 { // a URL's entry is made by its own lease, never concurrently
		return
	}
	r.mu.Lock()
	delete(r.attempts, url)
	r.size.Store(int64(len(r.attempts)))
	r.mu.Unlock()
}

// forgetMoved deletes the entries of URLs whose host this node no longer
// owns (a membership change moved them, with their queue, to another node).
func (r *fetchRetry) forgetMoved(isLocal func(host string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for u := range r.attempts {
		if !isLocal(hostOf(u)) {
			delete(r.attempts, u)
		}
	}
	r.size.Store(int64(len(r.attempts)))
}

// len is the number of URLs awaiting another attempt.
func (r *fetchRetry) len() int { return int(r.size.Load()) }

// fetchFailed handles a fetch that got no answer (err, after d): cut short
// by the stop or our own disk (an error: the loop requeues the URL), tried
// again if it timed out or failed to connect with attempts left, else
// logged as an error.
func (w *worker) fetchFailed(ctx context.Context, l frontier.Lease, u *urlnorm.URL, rules *fetcher.RobotsRules, d time.Duration, err error) (frontier.Result, error) {
	n := w.n
	if ctx.Err() != nil {
		return frontier.Result{}, ctx.Err()
	}
	if errors.Is(err, fetcher.ErrLocal) {
		// Our disk failed, not the server: stop the node with a clear
		// error rather than drop the URL (the loop requeues it).
		return frontier.Result{}, fmt.Errorf("crawl: fetching %s: %w", l.URL, err)
	}
	if retryable(err) && n.retry.again(l.URL, n.opts.FetchAttempts) {
		// Timed out or the connection failed: try again in a later
		// politeness slot, the host's failure back-off obeyed.
		n.metrics.FetchRetries.Add(1)
		n.opts.Logger.Debug("crawl: fetch failed, will retry", "url", l.URL, "err", err)
		return frontier.Result{Duration: d, CrawlDelay: rules.CrawlDelay(), Failed: true, Requeue: true}, nil
	}
	note := err.Error()
	if errors.Is(err, fetcher.ErrPrivateAddress) {
		n.metrics.PrivateRefused.Add(1)
		note = privateNote(u.Host(), err)
	}
	if err := w.logFetch(w.entry(LogEntry{Time: time.Now(), Node: n.opts.ID, URL: l.URL, Status: -1, Outcome: OutcomeError, Duration: d, Note: note}),
		&n.metrics.FetchErr, d, 0); err != nil {
		return frontier.Result{}, err
	}
	return frontier.Result{Duration: d, CrawlDelay: rules.CrawlDelay(), Failed: true}, nil
}
