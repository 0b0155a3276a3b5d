// Command onehost is the narrow-crawl benchmark of issue 24 (part 7):
// Sextant crawling one host — the wiki mirror of testdata/sites served by
// Debian's nginx over TLS — at --factor 0 --min-delay 0, as a ratio to a
// sequential keep-alive fetch loop of the same URLs in the same run
// (internal/realweb/onehost). Run it from bench/:
//
//	cd bench && go run ./cmd/onehost -rounds 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/sextant-crawler/sextant/bench/internal/procstat"
	"github.com/sextant-crawler/sextant/internal/realweb/onehost"
)

func main() {
	var o onehost.Options
	flag.IntVar(&o.Rounds, "rounds", 5, "rounds of (Sextant, loop), alternating which goes first")
	flag.IntVar(&o.Workers, "workers", 16, "Sextant workers")
	flag.DurationVar(&o.DUEFlush, "due-flush", 500*time.Millisecond, "the crawl's DUE merge interval (the CLI's --due-flush)")
	flag.StringVar(&o.Scheme, "scheme", "https", "https (TLS, h2 offered) or http")
	flag.BoolVar(&o.Spans, "spans", false, "diagnostic: split each contender's time into server and client parts (wraps the connections, which turns the fetcher's TCP_QUICKACK off)")
	flag.BoolVar(&o.HTTP1, "http1", false, "diagnostic: the crawl speaks HTTP/1.1, as the loop does, instead of h2")
	flag.BoolVar(&o.NoFetchAhead, "no-fetch-ahead", false, "the crawl does not start the next URL's request while it finishes a page (crawl.Options.NoFetchAhead)")
	flag.BoolVar(&o.LazyDone, "lazy-done", false, "diagnostic: the crawl does not fsync frontier completions (crawl.Options.LazyDone)")
	flag.BoolVar(&o.ReleaseEarly, "release-early", false, "the crawl releases the host's slot as soon as a response is read (crawl.Options.ReleaseEarly, frontier.Release)")
	flag.BoolVar(&o.CompareRelease, "compare-release", false, "each round also crawls with -release-early flipped, against the same loop (with -no-fetch-ahead: fetching ahead releases the host anyway)")
	flag.BoolVar(&o.LoopH2, "loop-h2", false, "diagnostic: each round also runs the loop over h2, the crawl's protocol, and reports Sextant's ratio to it (the figure stays the ratio to the HTTP/1.1 loop)")
	flag.IntVar(&o.MaxDepth, "max-depth", 0, "limit the crawl to this many hops (0: the whole site)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (crawls and loops) to this file")
	traceFile := flag.String("trace", "", "write a runtime execution trace of the whole run to this file (go tool trace -pprof=sched|sync|syscall|net)")
	flag.Parse()
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "onehost:", err)
			os.Exit(1)
		}
		defer trace.Stop()
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "onehost:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stdout, nil)) // one line per round
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	load, _ := os.ReadFile("/proc/loadavg")
	start := time.Now()
	rep, err := onehost.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "onehost:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%s, %d URLs over %s (nginx %s), %d workers, --due-flush %v, %d cores (%s), %s in all; load before %s, after %s\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), rep.Reachable, rep.Options.Scheme, rep.Nginx, rep.Options.Workers,
		rep.Options.DUEFlush, runtime.NumCPU(), procstat.CPUModel(), time.Since(start).Round(time.Second), trim(load), trim(load2))
	fmt.Printf("median ratio Sextant ÷ sequential keep-alive loop: %.2f (target ≥ 0.7)\n", rep.MedianRatio)
	if o.LoopH2 {
		fmt.Printf("median ratio Sextant ÷ the same loop over h2 (diagnostic): %.2f\n", rep.MedianRatioH2)
	}
}

func trim(b []byte) string {
	s := string(b)
	if len(s) > 14 {
		s = s[:14]
	}
	return s
}
