package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
	"github.com/sextant-crawler/sextant/simweb"
)

func init() {
	register(&command{name: "crawl", summary: "crawl from seeds on one node until the frontier is empty", run: runCrawl})
}

func runCrawl(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "crawl", `--data DIR (--seeds FILE | --simweb small|default) [flags]

Crawls on one node, all hosts local, until the frontier is empty or a limit
(--max-fetches, --duration) is hit. Ctrl-C (SIGINT) or SIGTERM stops
gracefully: fetches in flight finish or are requeued and the state is
durable. Running again with the same --data resumes the crawl (seeds already
seen are dropped by the DUE). Every fetch is logged to DIR/crawl.log; a
progress line is printed every --progress and a summary at the end.

--seeds FILE has one URL per line ('#' starts a comment). --simweb starts an
embedded synthetic web on loopback and crawls it from its seeds (it implies
--allow-private, --scope suffixes under its domain and, unless given,
--min-delay 0). To crawl a separately started 'crawler simweb', use
--resolve 'sim.test=127.0.0.1:PORT' --allow-private --min-delay 0.`)
	nf := crawl.AddNodeFlags(f.FlagSet)
	seedsFile := f.String("seeds", "", "file of seed URLs, one per line")
	sim := f.String("simweb", "", "crawl an embedded synthetic web: small or default")
	maxFetches := f.Uint64("max-fetches", 0, "stop after this many fetches (0 = no limit)")
	dur := f.Duration("duration", 0, "stop after this long (0 = no limit)")
	every := f.Duration("progress", 5*time.Second, "interval of progress lines (0 = none)")
	advice := f.Bool("cache-advice", false, "estimate the front cache's miss-ratio curve live (SHARDS, package mrc; a few % of CPU) and end the summary with sizing advice")
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
		web, err := simweb.New(cfg)
		if err != nil {
			return err
		}
		if !nf.Set("suffix") {
			_ = f.Set("suffix", web.Domain())
		}
		if srv, err = simweb.Start(web, simweb.Options{NoLog: true}); err != nil {
			return err
		}
		defer srv.Close()
		seeds = web.Seeds()
		fmt.Fprintf(env.stdout, "simweb %s: %d hosts *.%s on %s\n", *sim, web.NumHosts(), web.Domain(), srv.Addr())
	} else {
		var err error
		if seeds, err = readSeeds(*seedsFile); err != nil {
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
	}
	var est *mrc.Shared
	if *advice {
		if est, err = mrc.NewShared(mrc.Economy); err != nil {
			return err
		}
		opts.FrontObserver = chainObserver(opts.FrontObserver, est.Observe)
	}
	return crawlOnce(ctx, env, opts, seeds, *maxFetches, *dur, *every, est)
}

// readSeeds reads the seeds file (see crawl.ReadSeedsFile); an empty one is
// a usage error.
func readSeeds(path string) ([]string, error) {
	seeds, err := crawl.ReadSeedsFile(path)
	if err != nil {
		return nil, err
	}
	if len(seeds) == 0 {
		return nil, usagef("--seeds %s: no URLs", path)
	}
	return seeds, nil
}

// crawlOnce opens the node, seeds it and runs it to the end or a limit,
// printing progress and a summary.
// est, if set, is the front cache's live miss-ratio curve estimator (fed by
// opts.FrontObserver): the summary then ends with sizing advice.
func crawlOnce(ctx context.Context, env *cmdEnv, opts crawl.Options, seeds []string, maxFetches uint64, dur, every time.Duration, est *mrc.Shared) error {
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
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if dur > 0 {
		var c2 context.CancelFunc
		rctx, c2 = context.WithTimeout(rctx, dur)
		defer c2()
	}
	var (
		wg      sync.WaitGroup
		limited bool
		mu      sync.Mutex
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() { // progress and --max-fetches
		defer wg.Done()
		tick := 100 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		last, lastFetches, lastPrint := time.Now(), uint64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			st := n.Stats()
			if maxFetches > 0 && st.Fetches >= maxFetches {
				mu.Lock()
				limited = true
				mu.Unlock()
				cancel()
			}
			if every > 0 && time.Since(lastPrint) >= every {
				now := time.Now()
				rate := float64(st.Fetches-lastFetches) / now.Sub(last).Seconds()
				fmt.Fprintf(env.stdout, "%s fetched %d (%.0f pages/s) ok %d, frontier %d, DUE %d URLs, cache hit rate %.2f, %s\n",
					now.UTC().Format("15:04:05"), st.Fetches, rate, st.FetchOK, st.Frontier.Queued, st.DUE.EntriesOnDisk, st.CacheHitRate(), mib(st.Bytes))
				last, lastFetches, lastPrint = now, st.Fetches, now
			}
		}
	}()
	runErr := n.Run(rctx, true)
	close(done)
	wg.Wait()
	st := n.Stats()
	closeErr := n.Close()
	how := "frontier empty"
	switch {
	case ctx.Err() != nil:
		how = "interrupted; run again with the same --data to resume"
	case limited:
		how = "--max-fetches reached; run again with the same --data to resume"
	case rctx.Err() != nil:
		how = "--duration reached; run again with the same --data to resume"
	}
	printSummary(env, opts.DataDir, how, st)
	if est != nil {
		printAdvice(env, n, st, est)
	}
	if runErr != nil {
		return runErr
	}
	return closeErr
}

// printAdvice sizes the front caches from their live CLOCK curve: now, at
// the knee, at a 20% miss rate, and the DUE lookups/s each would save.
func printAdvice(env *cmdEnv, n *crawl.Node, st crawl.Stats, est *mrc.Shared) {
	c, _ := est.Curve(mrc.CLOCK)
	if c == nil {
		return
	}
	workers, per, shared := n.CacheSizes()
	kind := "per worker"
	if shared {
		kind = "shared by the workers, given per worker"
	}
	a := mrc.MakeAdvice(c, per, workers, float64(st.LinksLocal)/max(st.Elapsed.Seconds(), 1e-9))
	fmt.Fprintf(env.stdout, "  front cache advice (CLOCK, %s; URLs/s are DUE lookups): %s\n", kind, a)
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func printSummary(env *cmdEnv, dir, how string, st crawl.Stats) {
	w := env.stdout
	fmt.Fprintf(w, "done (%s) after %v\n", how, st.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  fetches %d: ok %d, redirect %d, http-error %d, error %d; %.0f pages/s, %s\n",
		st.Fetches, st.FetchOK, st.FetchRedirect, st.FetchHTTPErr, st.FetchErr, st.PagesPerSecond(), mib(st.Bytes))
	fmt.Fprintf(w, "  robots.txt fetches %d, URLs disallowed %d\n", st.RobotsFetches, st.RobotsDisallowed)
	fmt.Fprintf(w, "  links found %d, filtered %d, front cache hit rate %.2f, content duplicates %d\n",
		st.LinksFound, st.LinksFiltered, st.CacheHitRate(), st.ContentDuplicates)
	fmt.Fprintf(w, "  new URLs %d, dropped by per-host budget %d, DUE %d URLs, frontier %d queued\n",
		st.NewURLs, st.BudgetDropped, st.DUE.EntriesOnDisk, st.Frontier.Queued)
	fmt.Fprintf(w, "  crawl log: %s/crawl.log\n", dir)
}
