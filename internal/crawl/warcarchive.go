package crawl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/internal/warc"
)

// WARCArchive configures the WARC files a node writes itself (crawl and
// node --warc-dir, node config warc_dir).
type WARCArchive struct {
	// Dir, if set and Options.WARC is nil, makes the node open a
	// warc.Writer there (created if missing), named PREFIX-ID-...; the node
	// closes it. Several nodes may share Dir.
	Dir string
	// Prefix starts the file names (default "sextant").
	Prefix string
	// MaxSize rotates files at about this many bytes (default 1 GiB).
	MaxSize int64
	// Compression is the records' gzip setting (warc.ParseCompression:
	// fast, huffman, store or 1-9); DefaultOptions sets warc's default,
	// fast.
	Compression string
	// Metadata adds a metadata record with the page's outlinks to each
	// fetch (Options.WARC too), as Heritrix does.
	Metadata bool
	// WaitInWorker makes the worker wait for its page's records and write
	// its crawl log line itself, holding the host until then, as before
	// issue 27's tail (warctail.go): for measurements.
	WaitInWorker bool
	// ProfileLabels labels the worker's archive stage (digests,
	// compression, queueing: pprof label stage=warc-archive) for CPU
	// profiles, at the cost of a labelled context a page. For
	// measurements (BenchmarkCrawlWARC).
	ProfileLabels bool
}

// archiveLabels are the pprof labels of the worker's archive stage.
var archiveLabels = pprof.Labels("stage", "warc-archive")

// Version is the crawler's version as the build knows it (the main
// module's version, "(devel)" for a build from a work tree).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// openWARC opens the node's own warc.Writer when WARCArchive.Dir is set.
func (n *Node) openWARC() error {
	a := n.opts.WARCArchive
	if n.opts.WARC != nil || a.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		return fmt.Errorf("crawl: warc: %w", err)
	}
	fo := n.opts.Fetcher
	fo.EnsureDefaults()
	host, _ := os.Hostname()
	info := map[string]string{
		"operator-node":          n.opts.ID,
		"http-header-user-agent": fo.UserAgent,
		"robots":                 "obey",
		"body-cap":               strconv.FormatInt(fo.BodyCap, 10),
		"workers":                strconv.Itoa(n.opts.Workers),
		"max-depth":              strconv.Itoa(n.opts.MaxDepth),
		"max-pages-per-host":     strconv.Itoa(n.opts.Frontier.HostBudget.Hard),
		"min-delay":              n.opts.Frontier.MinDelay.String(),
		"max-delay":              n.opts.Frontier.MaxDelay.String(),
		"nofollow":               n.opts.NoFollow,
		"sitemaps":               n.opts.Sitemaps,
	}
	if host != "" {
		info["hostname"] = host
	}
	w, err := warc.NewWriter(warc.Options{
		Dir: a.Dir, Prefix: a.Prefix, NodeID: n.opts.ID, MaxSize: a.MaxSize, Compression: a.Compression,
		Software: "sextant/" + Version(), Info: info, Logger: n.opts.Logger,
	})
	if err != nil {
		return fmt.Errorf("crawl: warc: %w", err)
	}
	if st := w.Stats(); st.Repaired > 0 {
		n.opts.Logger.Warn("crawl: warc: files left open by a crash closed", "files", st.Repaired, "cut_bytes", st.CutBytes)
	}
	n.warcOwn = w
	n.opts.WARC = w
	return nil
}

// archiving reports whether fetches are archived (the fetcher must then
// keep bodies as received).
func (o *Options) archiving() bool { return o.WARC != nil || o.WARCArchive.Dir != "" }

// warcFetch is the WARC view of a fetch of rawURL begun at start.
func warcFetch(rawURL string, start time.Time, resp *fetcher.Response) warc.Fetch {
	f := warc.Fetch{
		URL: rawURL, Date: start, RequestHeader: resp.RequestHeader,
		Proto: resp.Proto, StatusCode: resp.Status, Status: resp.StatusText, Header: resp.Header,
		Body: resp.WireBody(), Truncated: resp.Truncated,
	}
	if resp.RemoteIP.IsValid() {
		f.IP = resp.RemoteIP.String()
	}
	return f
}

// startArchive queues the records of a page fetch, with the worker's
// links as outlinks (if WARCArchive.Metadata); the body is read before it
// returns. The function it returns waits until the records are written:
// the worker routes the page's links meanwhile, and the crawl log line
// waits for it (pageEnd).
func (w *worker) startArchive(ctx context.Context, rawURL string, start time.Time, resp *fetcher.Response) func() (warc.Location, error) {
	n := w.n
	if n.opts.WARCArchive.ProfileLabels {
		pprof.SetGoroutineLabels(pprof.WithLabels(ctx, archiveLabels))
		defer pprof.SetGoroutineLabels(ctx)
	}
	f := warcFetch(rawURL, start, resp)
	f.NotModified, f.RefersToDate = w.notModified(resp), w.rv.hist.LastFetch // a 304: a server-not-modified revisit
	if n.opts.WARCArchive.Metadata {
		for _, l := range w.links {
			f.Outlinks = append(f.Outlinks, l.String())
		}
	}
	if s, ok := n.opts.WARC.(warcStarter); ok {
		return s.StartFetch(f)
	}
	loc, err := n.opts.WARC.WriteFetch(f)
	return func() (warc.Location, error) { return loc, err }
}

// warcStarter is a WARCWriter that can queue a fetch and be waited for
// later (warc.Writer).
type warcStarter interface {
	StartFetch(f warc.Fetch) func() (warc.Location, error)
}

// archiveRobots is the fetcher's OnRobotsResponse: robots.txt responses
// are archived like pages (Heritrix's prerequisites).
func (n *Node) archiveRobots(resp *fetcher.Response) {
	_, err := n.opts.WARC.WriteFetch(warcFetch(resp.URL, time.Now().Add(-resp.Duration), resp))
	if err := n.warcResult(resp.URL, err); err != nil {
		n.opts.Logger.Error("crawl: warc", "err", err) // not fatal here: the fetcher has no way to stop the node
	}
}

func (n *Node) warcResult(rawURL string, err error) error {
	switch {
	case err == nil:
		n.metrics.WARCRecords.Add(1)
		return nil
	case errors.Is(err, warc.ErrBadFetch) || errors.Is(err, warc.ErrBadField):
		n.metrics.WARCErrors.Add(1)
		n.opts.Logger.Warn("crawl: warc: not archived", "url", rawURL, "err", err)
		return nil
	}
	n.metrics.WARCErrors.Add(1)
	return fmt.Errorf("crawl: warc: %w", err)
}

// closeWARC closes the node's own writer (after the workers: Run has
// returned).
func (n *Node) closeWARC() error {
	if n.warcOwn == nil {
		return nil
	}
	return n.warcOwn.Close()
}

func (a WARCArchive) validate() error {
	if a.Compression != "" { // refused even without a Dir: a typo would wait for one
		if _, err := warc.ParseCompression(a.Compression); err != nil {
			return fmt.Errorf("%w: WARC: %w", ErrInvalidOptions, err)
		}
	}
	if a.Dir == "" {
		return nil
	}
	o := warc.Options{Dir: a.Dir, Prefix: a.Prefix, MaxSize: a.MaxSize, Compression: a.Compression}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: WARC: %w", ErrInvalidOptions, err)
	}
	return nil
}
