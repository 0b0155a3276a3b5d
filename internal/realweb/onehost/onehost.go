// Package onehost measures a narrow crawl: Sextant crawling one host
// served by nginx (internal/realweb) at --factor 0 --min-delay 0, against
// a sequential keep-alive fetch loop of the same URLs in the same run
// (issue 24, part 7). One host means one request at a time, so the loop
// is the ceiling: a crawl that keeps the host busy comes close to it; one
// whose newly found URLs wait (for the DUE's merge, for a worker) does not.
//
// The rounds alternate which contender goes first, so that the load of a
// shared machine hits both alike; Run reports each round's ratio and the
// median. Every crawl's fetched set is checked against realweb.Reachable.
// bench/cmd/onehost is the command; the package's test is the quick
// version CI runs.
package onehost

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/fixture"
	"github.com/sextant-crawler/sextant/internal/logging"
	"github.com/sextant-crawler/sextant/internal/realweb"
)

// ErrInexact: a crawl's fetched set differs from the reference set.
var ErrInexact = errors.New("onehost: the crawl did not fetch exactly the reachable set")

// Options configures Run. Zero fields get the defaults EnsureDefaults
// documents.
type Options struct {
	// Root is a tree of static sites; default: the wiki mirror of
	// testdata/sites unpacked into Work.
	Root string
	// Host is the site crawled; default fixture.WikiHost.
	Host string
	// Scheme is "https" (default: TLS, nginx offering h2) or "http".
	Scheme string
	// Work holds nginx's prefix and the crawls' data; default a new
	// temporary directory, removed at the end.
	Work string
	// Rounds of (Sextant, loop); default 3.
	Rounds int
	// Workers of the crawl; default 16 (one host: most of them idle).
	Workers int
	// DUEFlush is the crawl's DUE merge interval; default 500 ms, the
	// CLI's --due-flush default.
	DUEFlush time.Duration
	// MaxDepth limits the crawl (the quick test); 0 = the whole site.
	MaxDepth int
	// LazyDone is the crawl's Options.LazyDone (frontier completions not
	// fsynced; a diagnostic).
	LazyDone bool
	// ReleaseEarly is the crawl's Options.ReleaseEarly (the host's slot
	// released once the response is read).
	ReleaseEarly bool
	// NoFetchAhead is the crawl's Options.NoFetchAhead (no request
	// started while the worker finishes a page).
	NoFetchAhead bool
	// CompareRelease also runs, each round, a second crawl with
	// ReleaseEarly flipped, timed against the same loop (Round.OtherRatio).
	CompareRelease bool
	// HTTP1 makes the crawl speak HTTP/1.1 like the loop (the fetcher's
	// DisableHTTP2) instead of h2, which nginx offers over TLS: a
	// diagnostic separating the protocol's cost from the crawler's.
	HTTP1 bool
	// Spans splits each contender's time into the server's and the
	// client's part (see spans) by wrapping its connections. The wrapper
	// is not a *net.TCPConn, so the fetcher's TCP_QUICKACK re-arming is
	// off in such a run: a diagnostic, not the figure.
	Spans bool
	// LoopH2 also runs, each round, the loop over h2 (the protocol the
	// crawl speaks over TLS) right after the HTTP/1.1 one: a diagnostic
	// that prices the protocol apart from the crawler (Round.RatioH2).
	// The figure stays the ratio to the HTTP/1.1 loop, the faster one.
	LoopH2 bool
	// Logger receives one progress record per round. Default: discard
	// (see internal/logging).
	Logger *slog.Logger
}

// EnsureDefaults sets the defaults documented on each field.
func (o *Options) EnsureDefaults() {
	if o.Host == "" {
		o.Host = fixture.WikiHost
	}
	if o.Scheme == "" {
		o.Scheme = "https"
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.Workers == 0 {
		o.Workers = 16
	}
	if o.DUEFlush == 0 {
		o.DUEFlush = 500 * time.Millisecond
	}
	o.Logger = logging.OrDiscard(o.Logger)
}

// validate reports options that cannot be measured as asked.
func (o *Options) validate() error {
	if o.Scheme != "http" && o.Scheme != "https" {
		return fmt.Errorf("onehost: scheme %q: want http or https", o.Scheme)
	}
	if (o.ReleaseEarly || o.CompareRelease) && !o.NoFetchAhead {
		// Fetching ahead releases the host at the same point already.
		return errors.New("onehost: ReleaseEarly and CompareRelease change nothing while the crawl fetches ahead: set NoFetchAhead (-no-fetch-ahead)")
	}
	if o.LoopH2 && o.Scheme != "https" {
		return errors.New("onehost: LoopH2 needs TLS: nginx offers h2 only by ALPN (scheme https)")
	}
	return nil
}

// Round is one Sextant crawl and one loop over its URLs.
type Round struct {
	SextantFirst   bool
	SextantSeconds float64 // Seed to the end of Run
	SextantPages   int     // fetches in crawl.log, robots.txt excluded
	LoopSeconds    float64
	LoopPages      int
	Ratio          float64 // Sextant pages/s ÷ loop pages/s
	// With Options.CompareRelease: the crawl with ReleaseEarly flipped (run
	// after the first crawl), its pages/s ÷ the same loop's.
	OtherSeconds float64
	OtherRatio   float64
	// With Options.Spans: seconds the server held each contender's
	// requests, seconds between a response's end and the next request.
	SextantServer, SextantClient, LoopServer, LoopClient float64
	// SextantClient split at the page's crawl log line: processing the
	// response, then handing the host to the next fetch.
	SextantProcess, SextantHandover float64
	// With Options.LoopH2: the loop over h2, and Sextant pages/s ÷ its
	// pages/s.
	LoopH2Seconds float64
	LoopH2Pages   int
	RatioH2       float64
}

// Report is what Run measured.
type Report struct {
	Options   Options
	Reachable int // URLs in the reference set
	Nginx     string
	Rounds    []Round
	// MedianRatio is the median of the rounds' ratios.
	MedianRatio float64
	// MedianRatioH2 is the median of the rounds' RatioH2 (Options.LoopH2).
	MedianRatioH2 float64
}

// Run starts nginx, then runs the rounds.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.EnsureDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Work == "" {
		d, err := os.MkdirTemp("", "sextant-onehost-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.Work = d
	}
	if o.Root == "" {
		var err error
		if o.Root, err = unpackMirror(filepath.Join(o.Work, "sites")); err != nil {
			return nil, err
		}
	}
	n, err := startNginx(o)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	addr := n.HTTP
	if o.Scheme == "https" {
		addr = n.HTTPS
	}
	seed := o.Scheme + "://" + o.Host + "/"
	// Over TLS the pages' few absolute http links to the host go to the
	// TLS port (400, leaves); over plain HTTP the https ones are left out
	// of scope, since an https URL sent to the plain port would cost the
	// robots.txt retries of an unreachable origin.
	schemes := []string{"http", "https"}
	if o.Scheme == "http" {
		schemes = []string{"http"}
	}
	want, err := realweb.Reachable(o.Root, realweb.ReachOptions{Seed: seed, Schemes: schemes, MaxDepth: o.MaxDepth, Flavor: realweb.NginxStatic})
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: o, Reachable: len(want), Nginx: addr.String()}
	var urls []string
	for i := range o.Rounds {
		r := Round{SextantFirst: i%2 == 0}
		loop := func() error {
			if urls == nil {
				return nil // the first round's loop runs after its crawl
			}
			return runLoops(ctx, o, urls, addr, n, &r)
		}
		if !r.SextantFirst {
			if err := loop(); err != nil {
				return rep, err
			}
		}
		var sp *spans
		if o.Spans {
			sp = &spans{}
		}
		got, secs, err := crawlOnce(ctx, o, n, addr, seed, schemes, filepath.Join(o.Work, fmt.Sprintf("crawl-%d", i)), sp)
		if err != nil {
			return rep, err
		}
		if sp != nil {
			s, c, _ := sp.result()
			r.SextantServer, r.SextantClient = s.Seconds(), c.Seconds()
			r.SextantProcess, r.SextantHandover = sp.process.Seconds(), sp.handover.Seconds()
		}
		if err := check(want, got); err != nil {
			return rep, err
		}
		r.SextantPages, r.SextantSeconds = len(got), secs
		if urls == nil {
			urls = got
		}
		var otherPages int
		runOther := func() error {
			if !o.CompareRelease {
				return nil
			}
			oo := o
			oo.ReleaseEarly = !o.ReleaseEarly
			got, secs, err := crawlOnce(ctx, oo, n, addr, seed, schemes, filepath.Join(o.Work, fmt.Sprintf("crawl-%d-other", i)), nil)
			if err == nil {
				err = check(want, got)
			}
			otherPages, r.OtherSeconds = len(got), secs
			return err
		}
		if r.SextantFirst {
			if err := loop(); err != nil {
				return rep, err
			}
			if err := runOther(); err != nil {
				return rep, err
			}
		} else if err := runOther(); err != nil {
			return rep, err
		}
		r.Ratio = rate(r.SextantPages, r.SextantSeconds) / rate(r.LoopPages, r.LoopSeconds)
		if o.LoopH2 {
			r.RatioH2 = rate(r.SextantPages, r.SextantSeconds) / rate(r.LoopH2Pages, r.LoopH2Seconds)
		}
		if o.CompareRelease {
			r.OtherRatio = rate(otherPages, r.OtherSeconds) / rate(r.LoopPages, r.LoopSeconds)
		}
		logRound(o, i, r, otherPages)
		rep.Rounds = append(rep.Rounds, r)
	}
	rep.MedianRatio = medianRatio(rep.Rounds, func(r Round) float64 { return r.Ratio })
	if o.LoopH2 {
		rep.MedianRatioH2 = medianRatio(rep.Rounds, func(r Round) float64 { return r.RatioH2 })
	}
	return rep, nil
}

// startNginx serves o.Root for o.Host from nginx, its files in Work/nginx.
func startNginx(o Options) (*realweb.Nginx, error) {
	nginxDir := filepath.Join(o.Work, "nginx")
	if err := os.MkdirAll(nginxDir, 0o755); err != nil {
		return nil, err
	}
	return realweb.StartNginx(realweb.NginxOptions{Root: o.Root, Hosts: []string{o.Host}, Dir: nginxDir})
}

// logRound logs round i's figures (and the other release mode's, and the
// spans, if asked for).
func logRound(o Options, i int, r Round, otherPages int) {
	if o.CompareRelease {
		o.Logger.Info("onehost: other release mode", "round", i+1, "release_early", !o.ReleaseEarly, "pages", otherPages,
			"seconds", r.OtherSeconds, "pages_per_s", rate(otherPages, r.OtherSeconds), "ratio", r.OtherRatio)
	}
	o.Logger.Info("onehost: round", "round", i+1, "sextant_pages", r.SextantPages, "sextant_seconds", r.SextantSeconds,
		"sextant_pages_per_s", rate(r.SextantPages, r.SextantSeconds), "loop_pages", r.LoopPages,
		"loop_seconds", r.LoopSeconds, "loop_pages_per_s", rate(r.LoopPages, r.LoopSeconds), "ratio", r.Ratio)
	if o.LoopH2 {
		o.Logger.Info("onehost: h2 loop", "round", i+1, "loop_h2_pages_per_s", rate(r.LoopH2Pages, r.LoopH2Seconds), "ratio_h2", r.RatioH2)
	}
	if o.Spans {
		// client_us_per_page: between a response and the next request;
		// process: response end to its crawl log line; handover: log
		// line to the next request.
		o.Logger.Info("onehost: spans", "round", i+1, "sextant_server_s", r.SextantServer, "sextant_client_s", r.SextantClient,
			"sextant_client_us_per_page", 1e6*r.SextantClient/float64(r.SextantPages), "loop_server_s", r.LoopServer,
			"loop_client_s", r.LoopClient, "loop_client_us_per_page", 1e6*r.LoopClient/float64(r.LoopPages),
			"sextant_process_us_per_page", 1e6*r.SextantProcess/float64(r.SextantPages),
			"sextant_handover_us_per_page", 1e6*r.SextantHandover/float64(r.SextantPages))
	}
}

// rate is pages per second.
func rate(pages int, seconds float64) float64 { return float64(pages) / seconds }

// medianRatio is the median of the rounds' ratios (ratio picks which).
func medianRatio(rounds []Round, ratio func(Round) float64) float64 {
	ratios := make([]float64, len(rounds))
	for i, r := range rounds {
		ratios[i] = ratio(r)
	}
	sort.Float64s(ratios)
	if len(ratios)%2 == 0 {
		return (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
	}
	return ratios[len(ratios)/2]
}

// unpackMirror unpacks testdata/sites' wiki mirror into dst.
func unpackMirror(dst string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := fixture.FindRoot(wd)
	if err != nil {
		return "", err
	}
	f, err := os.Open(filepath.Join(root, "testdata", "sites", fixture.WikiHost+".tar.gz"))
	if err != nil {
		return "", fmt.Errorf("onehost: the wiki mirror fixture: %w", err)
	}
	defer f.Close()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	return dst, fixture.Extract(f, dst)
}

// crawlOnce crawls from seed into dir and returns the fetched URLs in
// crawl-log order and the seconds from Seed to the end of Run.
func crawlOnce(ctx context.Context, o Options, n *realweb.Nginx, addr interface{ String() string }, seed string, schemes []string, dir string, sp *spans) ([]string, float64, error) {
	lf, err := crawl.NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSameHost, Schemes: schemes, MaxRepeatedSegments: -1}, []string{seed})
	if err != nil {
		return nil, 0, err
	}
	fo := fetcher.Options{AllowPrivate: true, Resolve: map[string]string{o.Host: addr.String()},
		TLSConfig: &tls.Config{RootCAs: n.RootCAs}, FetchTimeout: 10 * time.Second, DisableHTTP2: o.HTTP1}
	if sp != nil {
		fo.DialContext = sp.dialer(addr.String())
	}
	var clog *crawl.CrawlLog
	if sp != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, 0, err
		}
		f, err := os.OpenFile(filepath.Join(dir, "crawl.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		clog = crawl.NewCrawlLog(logWriter{w: f, sp: sp})
	}
	node, err := crawl.Open(crawl.Options{
		DataDir: dir, Workers: o.Workers, LazyDone: o.LazyDone, ReleaseEarly: o.ReleaseEarly, NoFetchAhead: o.NoFetchAhead, CrawlLog: clog,
		Fetcher: fo,
		// --factor 0 --min-delay 0: the host is fetched as fast as the
		// crawl can hand out its URLs.
		Frontier:         frontier.Options{Workers: o.Workers, Factor: 0, FactorSet: true, MinDelay: 0},
		DUEFlushInterval: o.DUEFlush,
		MaxPagesPerHost:  1 << 30,
		MaxDepth:         o.MaxDepth,
		Filter:           lf,
	})
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	err = node.Seed(ctx, []string{seed})
	if err == nil {
		err = node.Run(ctx, true)
	}
	secs := time.Since(start).Seconds()
	if cerr := node.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, err
	}
	es, err := crawl.ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		return nil, 0, err
	}
	var got []string
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			got = append(got, e.URL)
		}
	}
	return got, secs, nil
}

// check compares the fetched URLs with the reference set.
func check(want map[string]bool, got []string) error {
	keys := map[string]bool{}
	twice := 0
	for _, s := range got {
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("onehost: crawl log URL %q: %w", s, err)
		}
		k := realweb.Key(u)
		if keys[k] {
			twice++
		}
		keys[k] = true
	}
	missing, extra := realweb.Compare(want, keys)
	if len(missing)+len(extra)+twice > 0 {
		slices.Sort(missing)
		slices.Sort(extra)
		return fmt.Errorf("%w: %d missing (e.g. %q), %d extra (e.g. %q), %d fetched twice",
			ErrInexact, len(missing), missing[:min(3, len(missing))], len(extra), extra[:min(3, len(extra))], twice)
	}
	return nil
}
