package crawl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// BenchmarkCrawlWARC is the cost of archiving: the benchmark web of
// BenchmarkCrawlVsCeiling crawled without WARC, with WARC (page ends in
// tails, warctail.go) and with WARC the pre-tail way (the worker waits for
// its records holding the host: WARCArchive.WaitInWorker), alternately
// (off, on, wait, off, on, wait…: the noise of a shared machine hits all
// three), in the same run. It reports the rates, the ratios to off
// (target ≥ 0.85 for "ratio"), the CPU time per page of each (the
// process's, simweb included: the figure a loaded machine disturbs least)
// and the WARC bytes written per page fetched. Run with -benchtime=1x.
// SEXTANT_BENCH_HOSTS sets the web's size, SEXTANT_BENCH_ROUNDS the rounds
// (default 2), SEXTANT_BENCH_LATENCY (e.g. 20ms) serves every response
// with simweb's log-normal latency of that median (default none: a
// CPU-bound crawl).
func BenchmarkCrawlWARC(b *testing.B) {
	const workers = 64
	web := benchWeb(b)
	so := simweb.Options{NoLatency: true, NoLog: true}
	if s := os.Getenv("SEXTANT_BENCH_LATENCY"); s != "" {
		lat, err := time.ParseDuration(s)
		if err != nil {
			b.Fatal(err)
		}
		cfg := web.Config()
		cfg.LatencyMedian = lat
		if web, err = simweb.New(cfg); err != nil {
			b.Fatal(err)
		}
		so.NoLatency = false
	}
	rounds := 2
	if s := os.Getenv("SEXTANT_BENCH_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	srv, err := simweb.Start(web, so)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	crawl := func(a WARCArchive) (fetches uint64, d, cpu time.Duration) {
		lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, err := Open(Options{
			DataDir: b.TempDir(), Workers: workers,
			Fetcher:          fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, TLSConfig: srv.TLSClientConfig(), RobotsAttempts: 1},
			Frontier:         frontier.Options{MinDelay: 0},
			DUEFlushInterval: 50 * time.Millisecond,
			Filter:           lf,
			WARCArchive:      a,
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		cpu0, start := cpuTime(), time.Now()
		if err := n.Seed(ctx, web.Seeds()); err != nil {
			b.Fatal(err)
		}
		if err := n.Run(ctx, true); err != nil {
			b.Fatal(err)
		}
		st := n.Stats()
		if err := n.Close(); err != nil { // the WARC file is closed and indexed
			b.Fatal(err)
		}
		return st.Fetches, time.Since(start), cpuTime() - cpu0
	}
	type sum struct {
		n    uint64
		d, c time.Duration
	}
	for i := 0; i < b.N; i++ {
		var off, on, wait sum
		var bytes int64
		add := func(s *sum, a WARCArchive) {
			n, d, c := crawl(a)
			s.n, s.d, s.c = s.n+n, s.d+d, s.c+c
			fs, _ := filepath.Glob(filepath.Join(a.Dir, "*.warc.gz"))
			for _, f := range fs {
				if fi, err := os.Stat(f); err == nil && s == &on {
					bytes += fi.Size()
				}
			}
		}
		for range rounds {
			add(&off, WARCArchive{})
			add(&on, WARCArchive{Dir: b.TempDir()})
			add(&wait, WARCArchive{Dir: b.TempDir(), WaitInWorker: true})
		}
		rate := func(s sum) float64 { return float64(s.n) / s.d.Seconds() }
		cpu := func(s sum) float64 { return float64(s.c.Microseconds()) / float64(s.n) }
		b.ReportMetric(rate(off), "pages/s-off")
		b.ReportMetric(rate(on), "pages/s-warc")
		b.ReportMetric(rate(wait), "pages/s-warc-wait")
		b.ReportMetric(rate(on)/rate(off), "ratio")
		b.ReportMetric(rate(wait)/rate(off), "ratio-wait")
		b.ReportMetric(float64(bytes)/float64(on.n), "warc-bytes/page")
		b.ReportMetric(cpu(off), "cpu-µs/page-off")
		b.ReportMetric(cpu(on), "cpu-µs/page-warc")
		b.ReportMetric(cpu(wait), "cpu-µs/page-warc-wait")
		b.Logf("%d hosts, latency %v: %d rounds; without WARC %d fetches in %v, with %d in %v, waiting %d in %v; %d WARC bytes",
			web.NumHosts(), web.Config().LatencyMedian*time.Duration(btoi(!so.NoLatency)), rounds, off.n, off.d.Round(time.Millisecond),
			on.n, on.d.Round(time.Millisecond), wait.n, wait.d.Round(time.Millisecond), bytes)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
