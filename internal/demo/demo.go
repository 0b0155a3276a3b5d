// Package demo runs Sextant's main job on an embedded default: a simweb
// synthetic web on loopback crawled by an N-node cluster in one process —
// real gRPC, real mTLS from a fresh cluster CA, separate data dirs — with a
// live progress display and a final report checked against simweb's oracle.
//
// Run owns everything it starts and stops it before returning.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/coord"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/report"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/simweb"
)

// ErrInvalidOptions wraps every problem Options.Validate finds.
var ErrInvalidOptions = errors.New("demo: invalid options")

// Options configure a demo run.
type Options struct {
	// Web is the synthetic web; default simweb.DefaultConfig().
	Web simweb.Config
	// Nodes is the cluster size; default 3.
	Nodes int
	// Workers per node; default 32.
	Workers int
	// CachePerWorker and PeerCache size the front caches; defaults
	// crawl.DefaultMemberOptions'. PeerCache < 0 runs without per-peer caches.
	CachePerWorker, PeerCache int
	// WireCoalesce is how long a batch spooled for a peer may wait for
	// later ones to share its wire message (crawl.MemberOptions); default
	// 500 ms, < 0 sends every batch alone.
	WireCoalesce time.Duration
	// CacheShared gives each node one front cache of CachePerWorker ×
	// Workers entries shared by its workers instead of one per worker.
	CacheShared bool
	// Dispatch is the frontier's dispatch, frontier.DispatchAny or
	// frontier.DispatchHostAffine; default the node's (crawl.DefaultOptions).
	Dispatch string
	// DataDir holds the nodes' data dirs and the PKI; default a temporary
	// directory removed at the end.
	DataDir string
	// Force takes over a DataDir made by another run (its IDENTITY files
	// are rewritten with a warning) instead of refusing it.
	Force bool
	// Progress is how often a progress line is printed; default 1 s.
	Progress time.Duration
	// Live rewrites one progress line in place (for a terminal) instead of
	// printing a line each time.
	Live bool
	// ReportJSON, if set, receives the final report as JSON.
	ReportJSON string
	// Traces writes each node's full trace (every URL entering its host
	// splitter) and cross subtrace (URLs bound for peers) in the cache
	// trace format to DataDir/node-i/{full,cross}.trace, for `crawler
	// cachesim`. Set DataDir too, or the traces are removed with it.
	Traces bool
	// WARCDir, if set, makes every node archive its fetches as WARC/1.1
	// files WARCDir/sextant-<node>-*.warc.gz (and .cdxj indexes). Off by default.
	WARCDir string
	// WARCCompression is the WARC records' gzip setting
	// (warc.ParseCompression); default crawl.DefaultOptions'.
	WARCCompression string
	// StatusAddr is where the live status pages (one per node, with live
	// miss-ratio curves) are served; default "127.0.0.1:0"; "off" disables
	// them. It must be a loopback address unless the operator chooses
	// otherwise.
	StatusAddr string
	// NoEtcd runs the nodes without the embedded etcd control plane (no
	// fencing: the cluster as before issue 25).
	NoEtcd bool
	// StatusReady, if set, is called with the status page's URL once the
	// crawl runs.
	StatusReady func(url string)
	// Logger receives warnings (a forced take-over of DataDir). Default:
	// discard (see internal/logging).
	Logger *slog.Logger
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Web.Hosts == 0 {
		o.Web = simweb.DefaultConfig()
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Workers == 0 {
		o.Workers = 32
	}
	d := crawl.DefaultMemberOptions()
	if o.CachePerWorker == 0 {
		o.CachePerWorker = d.Node.CachePerWorker
	}
	if o.PeerCache == 0 {
		o.PeerCache = d.PeerCacheSize
	}
	if o.Progress == 0 {
		o.Progress = time.Second
	}
	if o.Dispatch == "" {
		o.Dispatch = d.Node.Frontier.Dispatch
	}
	if o.StatusAddr == "" {
		o.StatusAddr = "127.0.0.1:0"
	}
	if o.WARCCompression == "" {
		o.WARCCompression = d.Node.WARCArchive.Compression
	}
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.Nodes < 1 || o.Nodes > 16 {
		errs = append(errs, fmt.Errorf("%w: nodes %d not in [1, 16]", ErrInvalidOptions, o.Nodes))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("%w: workers %d < 1", ErrInvalidOptions, o.Workers))
	}
	if o.CachePerWorker < 0 {
		errs = append(errs, fmt.Errorf("%w: negative cache size", ErrInvalidOptions))
	}
	if err := o.Web.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: web: %v", ErrInvalidOptions, err))
	}
	if d := o.Dispatch; d != "" && d != frontier.DispatchAny && d != frontier.DispatchHostAffine {
		errs = append(errs, fmt.Errorf("%w: dispatch %q: want %q or %q", ErrInvalidOptions, d, frontier.DispatchAny, frontier.DispatchHostAffine))
	}
	if c := o.WARCCompression; c != "" {
		if _, err := warc.ParseCompression(c); err != nil {
			errs = append(errs, fmt.Errorf("%w: warc: %w", ErrInvalidOptions, err))
		}
	}
	return errors.Join(errs...)
}

// NodeReport is one node's share of the final report.
type NodeReport = report.Node

// Report is the final report of a demo run: the report every crawl ends
// with (package report) and the check against simweb's oracle.
type Report struct {
	report.Report
	Hosts           int    `json:"hosts"`
	OracleURLs      int    `json:"oracle_urls"`
	DistinctFetched int    `json:"distinct_fetched"`
	FetchedTwice    int    `json:"fetched_twice"`
	OracleMatch     bool   `json:"oracle_match"`
	OracleDiff      string `json:"oracle_diff,omitempty"`
}

// Run builds the web, starts the cluster, crawls to the end (or until ctx
// is cancelled), prints progress and the report to out and returns it.
func Run(ctx context.Context, o Options, out io.Writer) (*Report, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.DataDir == "" {
		dir, err := os.MkdirTemp("", "sextant-demo-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.DataDir = dir
	}
	web, err := simweb.New(o.Web)
	if err != nil {
		return nil, err
	}
	// A kept data dir must be a demo's of this web and cluster size.
	id := crawl.NewIdentity("demo", web.Seeds(), fmt.Sprintf("nodes=%d web=%+v", o.Nodes, o.Web))
	if err := crawl.CheckIdentity(o.DataDir, id, o.Force, o.Logger); err != nil {
		return nil, err
	}
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{Sitemaps: true})
	if err != nil {
		return nil, fmt.Errorf("demo: oracle: %w", err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	fmt.Fprintf(out, "simweb: %d hosts *.%s on %s; the oracle expects %d URLs (+%d trap hosts)\n",
		web.NumHosts(), web.Domain(), srv.Addr(), oracle.Size(), len(oracle.TrapHosts))

	var traces []*traceFile
	defer func() {
		for _, t := range traces {
			t.close()
		}
	}()
	var warcs []*warc.Writer
	defer func() {
		for _, w := range warcs {
			w.Close()
		}
	}()
	cs, err := newCurves(o.Nodes)
	if err != nil {
		return nil, err
	}
	var logs []*crawl.TalliedLog
	defer func() {
		for _, l := range logs {
			l.Close()
		}
	}()
	srcs := make([]*StatusSource, o.Nodes)
	var cp *controlPlane
	defer func() { cp.close() }() // after the members (deferred below, so run earlier)
	members, peers, err := startMembers(o, web, srv, &traces, &warcs, &logs, cs, srcs, &cp)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
		for _, m := range members {
			m.Close()
		}
	}()
	fmt.Fprintf(out, "cluster: %d nodes over mTLS gRPC:", len(members))
	for _, m := range members {
		fmt.Fprintf(out, " %s@%s", m.Node.Stats().ID, m.Addr())
	}
	fmt.Fprintf(out, "; %d workers each; data in %s\n", o.Workers, o.DataDir)
	if cp != nil {
		fmt.Fprintf(out, "control plane: embedded etcd %s (mTLS); each node fetches only while its lease (TTL %v) is held\n", cp.etcd.ClientURL, coord.DefaultOptions().TTL)
	}

	statusURL := ""
	if o.StatusAddr != "off" {
		sp, err := startStatus(o.StatusAddr, members, srcs, peers)
		if err != nil {
			return nil, err
		}
		defer sp.close()
		statusURL = sp.URL()
		fmt.Fprintf(out, "status pages with live miss-ratio curves: %s\n", statusURL)
	}
	start := time.Now()
	if err := crawlToEnd(ctx, o, out, members, web.Seeds(), oracle.Size(), statusURL, start); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		fmt.Fprintln(out, "\ninterrupted: the crawl state is in", o.DataDir)
	}
	for _, t := range traces {
		if err := t.close(); err != nil {
			return nil, err
		}
	}
	traces = nil
	for _, w := range warcs {
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("demo: warc: %w", err)
		}
	}
	warcs = nil
	rep := buildReport(o, members, elapsed, oracle, web, cs)
	writeText(out, rep)
	if o.ReportJSON != "" {
		if err := report.WriteJSON(o.ReportJSON, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// newCurves returns n nodes' live curves.
func newCurves(n int) ([]*Curves, error) {
	cs := make([]*Curves, n)
	for i := range cs {
		var err error
		if cs[i], err = NewCurves(); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// crawlToEnd seeds and runs the members until they end (or ctx is
// cancelled), printing progress.
func crawlToEnd(ctx context.Context, o Options, out io.Writer, members []*crawl.Member, seeds []string, expect int, statusURL string, start time.Time) error {
	for _, m := range members {
		if err := m.Seed(ctx, seeds); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Run(ctx) }()
	}
	if o.StatusReady != nil && statusURL != "" {
		o.StatusReady(statusURL) // the crawl is running; the callback must return promptly
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	progress(ctx, o, out, members, start, expect, finished)
	<-finished
	return errors.Join(errs...)
}

func progress(ctx context.Context, o Options, out io.Writer, ms []*crawl.Member, start time.Time, expect int, finished <-chan struct{}) {
	t := time.NewTicker(o.Progress)
	defer t.Stop()
	pr := report.Progress{W: out, Live: o.Live}
	var last uint64
	lastT := start
	for {
		select {
		case <-finished:
			pr.End()
			return
		case <-t.C:
		}
		var fetched, queued, sent, disc uint64
		per := ""
		for _, m := range ms {
			st := m.Node.Stats()
			fetched += st.Fetches
			queued += uint64(st.Frontier.Queued)
			sp := m.Split.Stats()
			sent += sp.Total.SentURLs
			disc += sp.Total.Discovered
			per += fmt.Sprintf(" %s:%d", st.ID, st.Fetches)
		}
		now := time.Now()
		rate := float64(fetched-last) / now.Sub(lastT).Seconds()
		last, lastT = fetched, now
		red := 0.0
		if disc > 0 {
			red = 1 - float64(sent)/float64(disc)
		}
		line := fmt.Sprintf("%6.1fs fetched %d/%d (%.0f%%) %.0f pages/s, queued %d, cross URLs sent %d of %d (-%.0f%%) |%s",
			now.Sub(start).Seconds(), fetched, expect, 100*float64(fetched)/float64(max(expect, 1)), rate, queued, sent, disc, 100*red, per)
		pr.Print(line)
	}
}

func buildReport(o Options, ms []*crawl.Member, elapsed time.Duration, oracle *simweb.OracleResult, web *simweb.Web, cs []*Curves) *Report {
	in := make([]report.Input, len(ms))
	count := map[string]int{}
	for i, m := range ms {
		st, sp := m.Node.Stats(), m.Split.Stats()
		in[i] = report.Input{Stats: st, Split: &sp, Cache: o.cacheConfig()}
		in[i].Limits.MaxPagesPerHost, in[i].Limits.MaxDepth = m.Node.Limits()
		if i < len(cs) && cs[i] != nil {
			in[i].Front, in[i].Cross = cs[i].Front, cs[i].Cross
		}
		if es, err := crawl.ReadLogFile(filepath.Join(o.DataDir, st.ID, "crawl.log")); err == nil {
			crawl.CountFetches(es, count)
		}
	}
	r := &Report{Report: *report.Build(report.KindDemo, in, elapsed), Hosts: web.NumHosts(), OracleURLs: oracle.Size()}
	r.DistinctFetched, r.FetchedTwice, r.OracleDiff = crawl.CheckFetched(count, oracle.Check)
	r.OracleMatch = r.OracleDiff == ""
	return r
}

func writeText(w io.Writer, r *Report) {
	match := "EQUALS the oracle's set"
	if !r.OracleMatch {
		match = "DIFFERS from the oracle's set: " + r.OracleDiff
	}
	r.WriteText(w, fmt.Sprintf("Sextant demo report: %d nodes, %d hosts", r.Nodes, r.Hosts),
		fmt.Sprintf("fetched         %d requests, %d distinct URLs, %d fetched twice; %s (%d URLs)",
			r.Fetches, r.DistinctFetched, r.FetchedTwice, match, r.OracleURLs))
}
