package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/cmd/crawler/nodeflags"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
	"github.com/sextant-crawler/sextant/internal/report"
	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/simweb"
)

func init() {
	register(&command{name: "crawl", summary: "crawl from seeds on one node until the frontier is empty", run: runCrawl})
}

func runCrawl(ctx context.Context, env *cmdEnv, args []string) error {
	return runCrawlWith(ctx, env, args, nil)
}

// runCrawlWith is runCrawl with tweak (if not nil) applied to the node's
// options: tests inject failures with it.
func runCrawlWith(ctx context.Context, env *cmdEnv, args []string, tweak func(*crawl.Options)) error {
	f := newFlags(env, "crawl", `--data DIR (--seeds FILE | --simweb small|default) [flags]

Crawls on one node, all hosts local, until the frontier is empty or a limit
(--max-fetches, --duration) is hit; with --revisit, until one of these or a stop.
Ctrl-C (SIGINT) or SIGTERM stops gracefully: fetches in flight finish or are
requeued and the state is durable. Running again with the same --data resumes the crawl (seeds already
seen are dropped by the DUE). Every fetch is logged to DIR/crawl.log. On a
terminal a live progress line is rewritten in place; otherwise a progress
line is printed every --progress. A fatal error (e.g. a full disk) stops the
crawl, durably, with "stopped: fatal error: ..." and exit status 1: fix the
cause and run again to resume. The crawl ends with a report (totals,
rates, the front cache's hit rate, DUE bytes per URL and, from the front
cache's live miss-ratio curve, the cache-size advice), also as JSON with
--report-json.

--seeds FILE has one URL per line ('#' starts a comment). --simweb starts an
embedded synthetic web on loopback and crawls it from its seeds (it implies
--allow-private, --scope suffixes under its domain and, unless given,
--min-delay 0); a crawl run to the end (frontier empty) then checks the
URLs fetched over all its runs (DIR/crawl.log) against the web's oracle and
exits with status 1 if they differ. To crawl a separately started 'crawler
simweb', use --resolve 'sim.test=127.0.0.1:PORT' --allow-private --min-delay 0.`)
	nf := nodeflags.Add(f.FlagSet)
	seedsFile := f.String("seeds", "", "file of seed URLs, one per line")
	sim := f.String("simweb", "", "crawl an embedded synthetic web: small or default")
	simChange := f.Duration("simweb-change-every", 0, "with --simweb: half of its HTML pages change this often and every page answers conditional requests (ETag, Last-Modified, 304), to try --revisit; 0 = a static web")
	maxFetches := f.Uint64("max-fetches", 0, "stop after this many fetches (0 = no limit)")
	dur := f.Duration("duration", 0, "stop after this long (0 = no limit)")
	every := f.Duration("progress", 5*time.Second, "interval of progress lines when stdout is not a terminal (0 = none, also no live line)")
	advice := f.Bool("cache-advice", true, "estimate the front cache's miss-ratio curve live (SHARDS, package mrc; well under 1% of the crawl's CPU, see docs/bench/operator.md) and end the report with sizing advice; --cache-advice=false turns it off")
	reportJSON := f.String("report-json", "", "also write the final report as JSON to this file")
	metricsAddr := f.String("metrics-listen", "", "serve the node's Prometheus metrics (Go heap, RSS, frontier, DUE) on this address's /metrics while crawling (e.g. 127.0.0.1:0: the address is printed); off by default")
	force := f.Bool("force", false, "take over a --data made by another run (demo, node, other seeds or web): its IDENTITY is rewritten, with a warning")
	if err := f.parse(args); err != nil {
		return err
	}
	if (*seedsFile == "") == (*sim == "") {
		return usagef("give exactly one of --seeds and --simweb")
	}
	if *dur < 0 || *every < 0 {
		return usagef("--duration and --progress must not be negative")
	}
	var seeds []string
	var srv *simweb.Server
	var web *simweb.Web
	if *sim != "" {
		var cfg simweb.Config
		switch *sim {
		case "small":
			cfg = simweb.SmallConfig()
		case "default":
			cfg = simweb.DefaultConfig()
		default:
			return usagef("--simweb %q: want small or default", *sim)
		}
		if !nf.Set("min-delay") {
			_ = f.Set("min-delay", "0")
		}
		if !nf.Set("scope") {
			_ = f.Set("scope", "suffixes")
		}
		_ = f.Set("allow-private", "true")
		var err error
		if web, err = simweb.New(cfg); err != nil {
			return err
		}
		if !nf.Set("suffix") {
			_ = f.Set("suffix", web.Domain())
		}
		if srv, err = simweb.Start(web, simweb.Options{NoLog: true, ChangeEvery: *simChange}); err != nil {
			return err
		}
		defer srv.Close()
		seeds = web.Seeds()
		fmt.Fprintf(env.stdout, "simweb %s: %d hosts *.%s on %s\n", *sim, web.NumHosts(), web.Domain(), srv.Addr())
	} else {
		var err error
		if seeds, err = readSeeds(env, *seedsFile, nf.MaxURLLength()); err != nil {
			return err
		}
	}
	opts, err := nf.Options(seeds)
	if err != nil {
		if errors.Is(err, crawl.ErrInvalidOptions) {
			return usagef("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		return err
	}
	if srv != nil {
		opts.Fetcher.DialContext = srv.DialContext
		opts.Fetcher.Proxy = nil // simweb lives in this process: never through HTTPS_PROXY
		// simweb's HTTPS hosts are signed by the CA it made at start.
		if opts.Fetcher.TLSConfig == nil {
			opts.Fetcher.TLSConfig = srv.TLSClientConfig()
		} else {
			opts.Fetcher.TLSConfig.RootCAs.AppendCertsFromPEM(srv.CAPEM())
		}
	}
	opts.Identity, opts.ForceIdentity = crawl.NewIdentity("crawl", seeds, "simweb="+*sim), *force
	opts.Logger = env.logger()
	// The fetcher's Info lines: an unreachable robots.txt's cause, a refused redirect.
	opts.Fetcher.Logger = env.logger()
	var est *mrc.Shared
	if *advice {
		if est, err = mrc.NewShared(mrc.Economy); err != nil {
			return err
		}
		opts.FrontObserverBatch = est.ObserveBatch
	}
	if tweak != nil {
		tweak(&opts)
	}
	r := crawlRun{maxFetches: *maxFetches, dur: *dur, every: *every,
		live: isTerminal(env.stdout), est: est, reportJSON: *reportJSON, metricsAddr: *metricsAddr}
	if web != nil {
		r.oracle = &simwebOracle{web: web, rules: oracleRules(opts, f.Lookup("max-url-length").Value.(flag.Getter).Get().(int))}
	}
	return crawlOnce(ctx, env, opts, seeds, r)
}

// readSeeds reads the seeds file (see crawl.ReadSeedList). Skipped seeds
// are reported on stdout and as a warning on stderr; a file without a
// valid seed is a usage error.
func readSeeds(env *cmdEnv, path string, maxURLLength int) ([]string, error) {
	l, err := crawl.ReadSeedList(path, maxURLLength)
	if err != nil {
		return nil, err
	}
	if err := l.Err(); err != nil {
		return nil, usagef("--seeds %s: %v", path, err)
	}
	reportSeeds(env, path, l)
	return l.URLs, nil
}

// reportSeeds tells the operator which seeds were skipped, on the start
// output and as a slog warning (its text handler quotes control
// characters; Summary has them escaped already).
func reportSeeds(env *cmdEnv, source string, l *crawl.SeedList) {
	if l.Rejected == 0 {
		return
	}
	fmt.Fprintf(env.stdout, "seeds %s: %s\n", termsafe.String(source), l.Summary())
	env.logger().Warn("seeds skipped", "source", source,
		"skipped", l.Rejected, "valid", len(l.URLs), "examples", l.Summary())
}

// crawlRun is how crawlOnce runs: its limits, its progress display, the
// front cache's live curve estimator (nil: off; fed by
// opts.FrontObserverBatch) and where the JSON report goes ("": nowhere).
type crawlRun struct {
	maxFetches uint64
	dur, every time.Duration
	live       bool // rewrite one progress line in place (a terminal)
	est        *mrc.Shared
	reportJSON string
	oracle     *simwebOracle // --simweb: check the fetched set at the end
	// metricsAddr: serve /metrics there while crawling ("": no).
	metricsAddr string
}

// crawlOnce opens the node, seeds it and runs it to the end or a limit,
// printing progress and the final report.
func crawlOnce(ctx context.Context, env *cmdEnv, opts crawl.Options, seeds []string, r crawlRun) error {
	opts.MaxFetches = r.maxFetches // exact: the node begins no fetch beyond it
	n, err := crawl.Open(opts)
	if err != nil {
		if errors.Is(err, crawl.ErrInvalidOptions) {
			return usagef("%v", err)
		}
		return err
	}
	if err := n.Seed(ctx, seeds); err != nil {
		n.Close()
		return err
	}
	totals, err := report.StartRun(opts.DataDir, time.Now()) // after Open: the data dir is ours
	if err != nil {
		n.Close()
		return err
	}
	ms, err := serveCrawlMetrics(env, r.metricsAddr, n)
	if err != nil {
		n.Close()
		return err
	}
	defer ms.Close()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.dur > 0 {
		var c2 context.CancelFunc
		rctx, c2 = context.WithTimeout(rctx, r.dur)
		defer c2()
	}
	stopProgress := startCrawlProgress(env, n, r)
	runErr := n.Run(rctx, true)
	stopProgress()
	st := n.Stats()
	workers, per, shared := n.CacheSizes()
	maxPages, maxDepth := n.Limits()
	ms.Close() // before the node it reads
	closeErr := n.Close()
	totals, err = report.FinishRun(opts.DataDir, totals)
	closeErr = errors.Join(closeErr, err)
	how, complete := "frontier empty", false
	switch {
	case runErr != nil:
		// First and plainly: the crawl did not finish, whatever the
		// frontier holds (a full disk stops it with URLs queued).
		how = fmt.Sprintf("fatal error: %v; the state is durable: fix the cause and run again with the same --data to resume", runErr)
	case ctx.Err() != nil:
		how = "interrupted; run again with the same --data to resume"
	case n.FetchLimitReached():
		how = "--max-fetches reached; run again with the same --data to resume"
	case rctx.Err() != nil:
		how = "--duration reached; run again with the same --data to resume"
	default:
		complete = true
	}
	end := "done (" + how + ")"
	if runErr != nil {
		end = "stopped: " + how
	}
	fmt.Fprintf(env.stdout, "%s after %v\n", end, st.Elapsed.Round(time.Millisecond))
	in := report.Input{Stats: st, Cache: report.CacheConfig{Workers: workers, CachePerWorker: per, CacheShared: shared, Dispatch: n.Dispatch()},
		Limits: report.Limits{MaxPagesPerHost: maxPages, MaxDepth: maxDepth}}
	if r.est != nil {
		in.Front = r.est
	}
	rep := &crawlReport{Report: report.Build(report.KindCrawl, []report.Input{in}, st.Elapsed), End: end, SinceFirstStart: &totals}
	rep.writeEnd(env.stdout, complete)
	var extra []string
	if r.oracle != nil {
		notChecked := ""
		switch {
		case runErr != nil:
			notChecked = "stopped by a fatal error"
		case !complete:
			notChecked = "stopped early"
		}
		extra = append(extra, rep.checkOracle(r.oracle, notChecked, filepath.Join(opts.DataDir, "crawl.log")))
	}
	rep.WriteText(env.stdout, "Sextant crawl report: node "+st.ID, extra...)
	fmt.Fprintf(env.stdout, "crawl log       %s\n", filepath.Join(opts.DataDir, "crawl.log"))
	if r.reportJSON != "" {
		if err := report.WriteJSON(r.reportJSON, rep); err != nil {
			return errors.Join(runErr, closeErr, err)
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case closeErr != nil:
		return closeErr
	case rep.OracleMatch != nil && !*rep.OracleMatch:
		return errOracleMismatch
	}
	return nil
}

// startCrawlProgress prints a progress line every r.every (a live line
// every 500 ms on a terminal) until the returned stop is called.
func startCrawlProgress(env *cmdEnv, n *crawl.Node, r crawlRun) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() { // progress
		defer wg.Done()
		pr := report.Progress{W: env.stdout, Live: r.live}
		defer pr.End()
		every := r.every
		if r.live && every > 0 {
			every = 500 * time.Millisecond
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		last, lastFetches, lastPrint := time.Now(), uint64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			st := n.Stats()
			if every > 0 && time.Since(lastPrint) >= every {
				now := time.Now()
				rate := float64(st.Fetches-lastFetches) / now.Sub(last).Seconds()
				pr.Print(fmt.Sprintf("%s fetched %d (%.0f pages/s) ok %d, frontier %d, DUE %d URLs, cache hit rate %.2f, %s",
					now.UTC().Format("15:04:05"), st.Fetches, rate, st.FetchOK, st.Frontier.Queued, st.DUE.EntriesOnDisk, st.CacheHitRate(), mib(st.Bytes)))
				last, lastFetches, lastPrint = now, st.Fetches, now
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
