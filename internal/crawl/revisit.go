package crawl

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/revisit"
)

// Continuous crawling (Options.Revisit, package revisit): after a URL's
// lease completes, its next fetch is scheduled in DataDir/revisit before
// the frontier forgets it (a crash in between re-fetches it rather than
// drops it); when due, the node's revisit loop queues it through
// frontier.AddBatch, exactly once per batch, bypassing the DUE (the URL is
// due again, not new) and the host budget, so it obeys politeness like
// any URL. A fetch of a URL with a history sends its validators
// (If-None-Match, If-Modified-Since); a 304 is logged as not-modified, has
// no links extracted and counts as unchanged.

// OutcomeNotModified is the crawl log outcome of a 304 answer to a
// conditional request (a revisit): the page did not change.
const OutcomeNotModified = "not-modified"

// revisitDir is the revisit schedule's store in DataDir.
const revisitDir = "revisit"

// revisitSource is the frontier.AddBatch source of revisits.
const revisitSource = "revisit"

// revisitBatch bounds the URLs queued per AddBatch.
const revisitBatch = 1024

// revisitMetrics are Metrics' revisit counters.
type revisitMetrics struct {
	FetchNotModified atomic.Uint64 // 304s to conditional requests (an outcome: in Fetches)
	RevisitsQueued   atomic.Uint64 // URLs queued again by the schedule
	RevisitChanged   atomic.Uint64 // fetches of known URLs that found the page changed
	RevisitUnchanged atomic.Uint64 // … unchanged (304 or the same digest)
	RevisitForgotten atomic.Uint64 // schedules dropped: the host is no longer this node's
}

// RevisitStats are the revisit figures of Stats.
type RevisitStats struct {
	Enabled     bool
	Scheduled   int64  // URLs with a schedule (waiting, queued or being fetched)
	Queued      uint64 // URLs queued again since the node opened
	NotModified uint64 // 304 answers
	Changed     uint64 // revisits that found the page changed
	Unchanged   uint64 // revisits that found it unchanged (304 included)
	Forgotten   uint64 // schedules dropped: host owned by another node
	NextDue     time.Time
}

// rvFetch is the revisit state of the worker's leased URL.
type rvFetch struct {
	hist    revisit.History // its history (looked up says it was read)
	known   bool            // it had one
	looked  bool
	cond    bool // a conditional request was sent
	fetched bool // next and verdict are set (a response came)
	next    revisit.History
	verdict revisit.Verdict
}

// openRevisit opens the schedule when Options.Revisit is enabled.
func (n *Node) openRevisit() error {
	if !n.opts.Revisit.Enabled() {
		return nil
	}
	st, err := revisit.Open(filepath.Join(n.opts.DataDir, revisitDir), n.opts.Logger)
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	n.rv = st
	return nil
}

func (n *Node) closeRevisit() error {
	if n.rv == nil {
		return nil
	}
	return n.rv.Close()
}

// revisitScheduled reports whether URLs are scheduled for a revisit: the
// node is then never idle (a continuous crawl runs until stopped).
func (n *Node) revisitScheduled() bool { return n.rv != nil && n.rv.Len() > 0 }

// revisitPoll is how often the revisit loop looks for due URLs: a tenth of
// the shortest interval, within [20 ms, 1 s].
func revisitPoll(o *revisit.Options) time.Duration {
	iv := o.Interval
	if o.Adaptive {
		iv = o.Min
	}
	return min(max(iv/10, 20*time.Millisecond), time.Second)
}

// runRevisit queues due URLs until ctx ends; an error is fatal to the node.
func (n *Node) runRevisit(ctx context.Context) error {
	t := time.NewTicker(revisitPoll(&n.opts.Revisit))
	defer t.Stop()
	for {
		if err := n.queueDue(time.Now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// queueDue queues every URL due at now.
func (n *Node) queueDue(now time.Time) error {
	for {
		b, err := n.rv.Take(now, revisitBatch)
		if err != nil || b.Seq == 0 {
			return err
		}
		items := make([]frontier.Item, 0, len(b.Items))
		for _, h := range b.Items {
			if bare, _ := splitAnnot(h.URL); n.opts.Splitter != nil && !n.opts.Splitter.IsLocal(hostOf(bare)) {
				// The host moved to another node (membership change): its
				// owner schedules it from its own fetches.
				if err := n.rv.Forget(urlFP(h.URL)); err != nil {
					return err
				}
				n.metrics.RevisitForgotten.Add(1)
				continue
			}
			items = append(items, frontier.Item{URL: h.URL, Host: h.Host, Depth: h.Depth, Priority: h.Priority, Revisit: true})
		}
		if err := n.fr.AddBatch(revisitSource, b.Seq, items); err != nil {
			return fmt.Errorf("crawl: revisit: %w", err)
		}
		if err := n.rv.Done(b.Seq); err != nil {
			return err
		}
		n.metrics.RevisitsQueued.Add(uint64(len(items)))
	}
}

// revisitBegin looks up the history of the URL about to be fetched and
// returns ctx carrying its validators as conditional request fields.
func (w *worker) revisitBegin(ctx context.Context, rawURL string) (context.Context, error) {
	if w.n.rv == nil {
		return ctx, nil
	}
	if err := w.lookRevisit(rawURL); err != nil {
		return ctx, err
	}
	h := w.rv.hist
	if !w.rv.known || (h.ETag == "" && h.LastModified == "") {
		return ctx, nil
	}
	hdr := http.Header{}
	if h.ETag != "" {
		hdr.Set("If-None-Match", h.ETag)
	}
	if h.LastModified != "" {
		hdr.Set("If-Modified-Since", h.LastModified)
	}
	w.rv.cond = true
	return fetcher.WithRequestHeader(ctx, hdr), nil
}

func (w *worker) lookRevisit(rawURL string) error {
	if w.rv.looked {
		return nil
	}
	h, ok, err := w.n.rv.Get(urlFP(rawURL))
	if err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	w.rv.hist, w.rv.known, w.rv.looked = h, ok, true
	return nil
}

// notModified reports whether resp is a 304 to the conditional request
// the worker sent.
func (w *worker) notModified(resp *fetcher.Response) bool {
	return w.rv.cond && resp.Status == http.StatusNotModified
}

// revisitObserve compares the fetch with the URL's history, before its
// crawl log line (e, whose Digest is set) is written: a revisit's note says
// what it found.
func (w *worker) revisitObserve(e *LogEntry, resp *fetcher.Response) {
	if w.n.rv == nil || !w.rv.looked {
		return
	}
	// Due times count from the response, so that two requests for a URL
	// are at least its interval apart.
	ob := revisit.Observation{Time: time.Now(), ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	switch {
	case e.Outcome == OutcomeNotModified:
		ob.NotModified = true
		// The page is the one fetched before: its digest, not the empty
		// body's.
		e.Digest = w.rv.hist.Digest
	case e.Outcome == OutcomeOK:
		ob.Digest = e.Digest
	case resp.Status >= 500 || resp.Status == http.StatusTooManyRequests:
		ob.Failed = true
	default: // a redirect or a 4xx: changed if it was not one before
		ob.Digest = "status:" + strconv.Itoa(resp.Status) + " " + resp.Location
	}
	w.rv.next, w.rv.verdict = w.n.opts.Revisit.Update(w.rv.hist, ob)
	w.rv.fetched = true
	if w.rv.known { // the crawl log says what a revisit found
		if e.Note != "" {
			e.Note += " "
		}
		e.Note += "revisit:" + w.rv.verdict.String()
	}
}

// scheduleRevisit durably schedules the leased URL's next fetch; the loop
// calls it before the frontier completes the lease.
func (w *worker) scheduleRevisit(l frontier.Lease) error {
	n := w.n
	if n.rv == nil {
		return nil
	}
	if !w.rv.fetched { // no response: robots, a network error…
		if err := w.lookRevisit(l.URL); err != nil {
			return err
		}
		w.rv.next, w.rv.verdict = n.opts.Revisit.Update(w.rv.hist, revisit.Observation{Time: time.Now(), Failed: true})
	}
	h := w.rv.next
	h.URL, h.Host, h.Depth, h.Priority = l.URL, l.Host, l.Depth, l.Priority
	if err := n.rv.Put(urlFP(l.URL), h); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if w.rv.known {
		switch w.rv.verdict {
		case revisit.Changed:
			n.metrics.RevisitChanged.Add(1)
		case revisit.Unchanged:
			n.metrics.RevisitUnchanged.Add(1)
		}
	}
	return nil
}

// revisitStats are Stats.Revisit.
func (n *Node) revisitStats() RevisitStats {
	if n.rv == nil {
		return RevisitStats{}
	}
	m := &n.metrics
	s := RevisitStats{Enabled: true, Scheduled: n.rv.Len(), Queued: m.RevisitsQueued.Load(), NotModified: m.FetchNotModified.Load(),
		Changed: m.RevisitChanged.Load(), Unchanged: m.RevisitUnchanged.Load(), Forgotten: m.RevisitForgotten.Load()}
	s.NextDue, _, _ = n.rv.NextDue()
	return s
}
