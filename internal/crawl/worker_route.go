package crawl

import (
	"context"
	"fmt"
	"math"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// childDepth is the link depth of the links found on a page of depth d
// (saturating).
func childDepth(d uint16) uint16 {
	if d == math.MaxUint16 {
		return d
	}
	return d + 1
}

// routeLinks routes w.links at depth, unless that is beyond MaxDepth.
func (w *worker) routeLinks(ctx context.Context, depth uint16) error {
	if n := w.n; n.opts.MaxDepth > 0 && int(depth) > n.opts.MaxDepth {
		n.metrics.LinksTooDeep.Add(uint64(len(w.links)))
		return nil
	}
	return w.route(ctx, w.links, depth)
}

// route filters links, splits them into local and remote, drops local ones
// the worker's front cache has seen and hands the rest to the DUE with their
// link depth; remote ones go to the splitter.
func (w *worker) route(ctx context.Context, links []*urlnorm.URL, depth uint16) error {
	n := w.n
	w.local, w.remote = w.local[:0], w.remote[:0]
	w.obsL, w.obsR = w.obsL[:0], w.obsR[:0]
	n.metrics.LinksFound.Add(uint64(len(links)))
	var local uint64 // local links, before the front cache
	for i, u := range links {
		if n.opts.Filter != nil && !n.opts.Filter.Allow(u) {
			n.metrics.LinksFiltered.Add(1)
			continue
		}
		s := u.String()
		fp := fingerprint.URL(s)
		if n.opts.FullTrace != nil {
			n.opts.FullTrace(fp)
		}
		// Annotated (annot.go) only once it leaves the worker: most local
		// links are front-cache hits, and building their annotated string
		// was a copy per link for nothing.
		if n.opts.Splitter != nil && !n.opts.Splitter.IsLocal(u.Host()) {
			w.remote = append(w.remote, w.annotate(s, i))
			if n.opts.RemoteObserverBatch != nil {
				w.obsR = append(w.obsR, fp)
			}
			continue
		}
		local++
		if n.opts.FrontObserverBatch != nil {
			w.obsL = append(w.obsL, fp)
		}
		if w.fc != nil {
			if w.fc.Seen(fp) {
				n.metrics.CacheHits.Add(1)
				continue
			}
			n.metrics.CacheMisses.Add(1)
		}
		w.local = append(w.local, due.Entry{FP: fp, URL: w.annotate(s, i), Depth: depth})
	}
	n.metrics.LinksLocal.Add(local)
	n.metrics.LinksRemote.Add(uint64(len(w.remote)))
	// One call per page: an observer behind a mutex (mrc.Shared) takes it
	// once per page, not once per link.
	if len(w.obsL) > 0 {
		n.opts.FrontObserverBatch(w.obsL)
	}
	if len(w.obsR) > 0 {
		n.opts.RemoteObserverBatch(w.obsR)
	}
	if len(w.local) > 0 {
		if err := n.due.AddBatch(w.local); err != nil {
			return fmt.Errorf("crawl: due: %w", err)
		}
	}
	if len(w.remote) > 0 {
		if err := n.opts.Splitter.Route(ctx, w.remote); err != nil {
			return fmt.Errorf("crawl: splitter: %w", err)
		}
	}
	return nil
}
