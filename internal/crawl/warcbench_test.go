package crawl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/simweb"
)

// BenchmarkCrawlWARC is the cost of archiving: the benchmark web of
// BenchmarkCrawlVsCeiling crawled without WARC, with WARC (page ends in
// tails, warctail.go) and with WARC the pre-tail way (the worker waits for
// its records holding the host: WARCArchive.WaitInWorker), alternately
// (off, on, wait, off, on, wait…: the noise of a shared machine hits all
// three), in the same run; SEXTANT_BENCH_WARC_COMPRESSION=fast,huffman,store
// replaces the two WARC modes by one per compression setting listed
// (warcBenchModes). It reports the rates, the ratios to off (target ≥ 0.85
// for "ratio-warc"), the CPU time per page of each (the process's, simweb
// included: the figure a loaded machine disturbs least) and the WARC bytes
// written per page fetched. Each crawl runs under the pprof label
// warc=MODE; the archive stages carry stage labels (WARCArchive.
// ProfileLabels, set here). Run with -benchtime=1x.
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
	crawl := func(ctx context.Context, a WARCArchive) (fetches uint64, d, cpu time.Duration) {
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
		cpu0, start := cputime.Process(), time.Now()
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
		return st.Fetches, time.Since(start), cputime.Process() - cpu0
	}
	for i := 0; i < b.N; i++ {
		ms := warcBenchModes(b)
		for range rounds {
			for _, m := range ms {
				a := m.a
				if m.name != "off" {
					a.Dir, a.ProfileLabels = b.TempDir(), true
				}
				// Labelled so that a CPU profile (-test.cpuprofile) splits by
				// mode: go tool pprof -tagfocus warc=huffman.
				pprof.Do(context.Background(), pprof.Labels("warc", m.name), func(ctx context.Context) {
					n, d, c := crawl(ctx, a)
					m.n, m.d, m.c = m.n+n, m.d+d, m.c+c
				})
				if a.Dir != "" {
					m.bytes += dirBytes(a.Dir)
				}
			}
		}
		off := ms[0]
		rate := func(m *warcBenchMode) float64 { return float64(m.n) / m.d.Seconds() }
		cpu := func(m *warcBenchMode) float64 { return float64(m.c.Microseconds()) / float64(m.n) }
		var line strings.Builder
		for _, m := range ms {
			suffix := "-" + m.name
			if m.name != "off" {
				b.ReportMetric(rate(m)/rate(off), "ratio"+suffix)
				b.ReportMetric(float64(m.bytes)/float64(m.n), "warc-bytes/page"+suffix)
			}
			b.ReportMetric(rate(m), "pages/s"+suffix)
			b.ReportMetric(cpu(m), "cpu-µs/page"+suffix)
			fmt.Fprintf(&line, "; %s %d fetches in %v, %d WARC bytes", m.name, m.n, m.d.Round(time.Millisecond), m.bytes)
		}
		b.Logf("%d hosts, latency %v: %d rounds%s", web.NumHosts(), web.Config().LatencyMedian*time.Duration(btoi(!so.NoLatency)), rounds, line.String())
	}
}

// warcBenchMode is one way BenchmarkCrawlWARC crawls, and its sums.
type warcBenchMode struct {
	name  string
	a     WARCArchive // Dir set to a fresh directory unless name is "off"
	n     uint64
	d, c  time.Duration
	bytes int64
}

// warcBenchModes are off, then either "warc" and "warc-wait" at the default
// compression or, with SEXTANT_BENCH_WARC_COMPRESSION=fast,huffman,store
// (any of warc.ParseCompression's), one mode per setting, tails on.
func warcBenchModes(b *testing.B) []*warcBenchMode {
	ms := []*warcBenchMode{{name: "off"}}
	env := os.Getenv("SEXTANT_BENCH_WARC_COMPRESSION")
	if env == "" {
		return append(ms, &warcBenchMode{name: "warc"}, &warcBenchMode{name: "warc-wait", a: WARCArchive{WaitInWorker: true}})
	}
	for _, c := range strings.Split(env, ",") {
		if _, err := warc.ParseCompression(c); err != nil {
			b.Fatal(err)
		}
		ms = append(ms, &warcBenchMode{name: c, a: WARCArchive{Compression: c}})
	}
	return ms
}

// dirBytes is the size of the WARC files of dir.
func dirBytes(dir string) int64 {
	var n int64
	fs, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, f := range fs {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
