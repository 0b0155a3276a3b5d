package crawl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// BenchmarkCrawlWARC is the cost of archiving: the benchmark web of
// BenchmarkCrawlVsCeiling crawled without and with WARC files, alternately
// (off, on, off, on: the noise of a shared machine hits both), in the same
// run. It reports both rates, their ratio (target ≥ 0.85), the CPU time
// per page of each (the process's, simweb included: the figure a loaded
// machine disturbs least) and the WARC bytes written per page fetched.
// Run with -benchtime=1x (SEXTANT_BENCH_HOSTS sets the web's size).
func BenchmarkCrawlWARC(b *testing.B) {
	const workers = 64
	web := benchWeb(b)
	srv, err := simweb.Start(web, simweb.Options{NoLatency: true, NoLog: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	crawl := func(warcDir string) (fetches uint64, d, cpu time.Duration) {
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
			WARCArchive:      WARCArchive{Dir: warcDir},
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
	for i := 0; i < b.N; i++ {
		var offN, onN uint64
		var offD, onD, offC, onC time.Duration
		var bytes int64
		for range 2 {
			n, d, c := crawl("")
			offN, offD, offC = offN+n, offD+d, offC+c
			dir := b.TempDir()
			n, d, c = crawl(dir)
			onN, onD, onC = onN+n, onD+d, onC+c
			fs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
			for _, f := range fs {
				if fi, err := os.Stat(f); err == nil {
					bytes += fi.Size()
				}
			}
		}
		off, on := float64(offN)/offD.Seconds(), float64(onN)/onD.Seconds()
		b.ReportMetric(off, "pages/s-off")
		b.ReportMetric(on, "pages/s-warc")
		b.ReportMetric(on/off, "ratio")
		b.ReportMetric(float64(bytes)/float64(onN), "warc-bytes/page")
		b.ReportMetric(float64(offC.Microseconds())/float64(offN), "cpu-µs/page-off")
		b.ReportMetric(float64(onC.Microseconds())/float64(onN), "cpu-µs/page-warc")
		b.Logf("%d hosts: without WARC %d fetches in %v, with %d in %v, %d WARC bytes", web.NumHosts(), offN, offD.Round(time.Millisecond), onN, onD.Round(time.Millisecond), bytes)
	}
}
