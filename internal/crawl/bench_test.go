package crawl

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// benchWeb is issue 5's benchmark web: ≥ 1,000 hosts, no pathologies
// (the ceiling loop has no robots.txt, politeness or trap handling).
func benchWeb(b *testing.B) *simweb.Web {
	hosts := 1000
	if s := os.Getenv("SEXTANT_BENCH_HOSTS"); s != "" {
		hosts, _ = strconv.Atoi(s)
	}
	cfg := simweb.Config{Hosts: hosts, PagesPerHost: 8, MinPagesPerHost: 3, MaxPagesPerHost: 60, NoPathologies: true}
	web, err := simweb.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return web
}

// rssBytes is the process's resident set now (Linux), or 0.
func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize())
}

// ceiling fetches urls with a plain net/http client and workers goroutines
// and tokenizes the HTML ones: the bare fetch-and-tokenize loop.
func ceiling(b *testing.B, srv *simweb.Server, urls []string, workers int) (pages int, d time.Duration) {
	// A plain client like srv.Client(), with the idle pool bounded as a
	// 1,000-host loop needs (one kept-alive connection per host at most).
	tr := &http.Transport{DialContext: srv.DialContext, DisableCompression: true, TLSClientConfig: srv.TLSClientConfig(),
		MaxIdleConns: 4 * workers, MaxIdleConnsPerHost: 1, IdleConnTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(urls) {
					return
				}
				resp, err := c.Get(urls[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					failed.Add(1)
					continue
				}
				if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
					z := html.NewTokenizer(io.LimitReader(resp.Body, 16<<20))
					for z.Next() != html.ErrorToken {
						_, _ = z.TagName()
					}
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("ceiling: %d fetches failed, e.g. %v", f, firstErr.Load())
	}
	return len(urls), time.Since(start)
}

// BenchmarkCrawlVsCeiling crawls a 1,000-host simweb (NoLatency, min delay
// 0) with a Node and compares its pages/s with the bare loop over the
// oracle's URL list in the same run. Run with -benchtime=1x.
func BenchmarkCrawlVsCeiling(b *testing.B) {
	const workers = 64
	// 1,000 hosts × kept-alive connections on both ends exceed a soft
	// limit of 1024 descriptors.
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	web := benchWeb(b)
	srv, err := simweb.Start(web, simweb.Options{NoLatency: true, NoLog: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{Sitemaps: true})
	if err != nil {
		b.Fatal(err)
	}
	urls := oracle.Fetched
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0 := cputime.Process()
		cp, cd := ceiling(b, srv, urls, workers)
		cpuCeil := cputime.Process() - cpu0

		lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, err := Open(Options{
			DataDir: b.TempDir(), Workers: workers,
			// RobotsAttempts 1: the web links to a host simweb does not
			// serve; by default its robots.txt is retried at 0, 5 and 15 s
			// (fetcher.Options.RobotsRetryDelay) and the crawl's end waits
			// for that. This benchmark measures throughput, not the retry
			// policy, so a dead host's robots.txt is not retried.
			Fetcher:          fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, TLSConfig: srv.TLSClientConfig(), RobotsAttempts: 1},
			Frontier:         frontier.Options{MinDelay: 0, NoSyncAdd: os.Getenv("SEXTANT_BENCH_NOSYNC") != ""},
			DUEFlushInterval: 50 * time.Millisecond,
			DUEFsync:         os.Getenv("SEXTANT_BENCH_DUE_FSYNC") != "",
			Filter:           lf,
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		cpu1 := cputime.Process()
		start := time.Now()
		if err := n.Seed(ctx, web.Seeds()); err != nil {
			b.Fatal(err)
		}
		if err := n.Run(ctx, true); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		cpuCrawl := cputime.Process() - cpu1
		rss := rssBytes()
		st := n.Stats()
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
		if int(st.Fetches) < len(urls) {
			b.Fatalf("crawl fetched %d, oracle %d", st.Fetches, len(urls))
		}
		crawlRate := float64(st.Fetches) / d.Seconds()
		ceilRate := float64(cp) / cd.Seconds()
		b.ReportMetric(crawlRate, "pages/s")
		b.ReportMetric(ceilRate, "ceiling-pages/s")
		b.ReportMetric(crawlRate/ceilRate, "ratio")
		b.ReportMetric(float64(cpuCrawl.Microseconds())/float64(st.Fetches), "cpu-µs/page")
		b.ReportMetric(float64(cpuCeil.Microseconds())/float64(cp), "ceiling-cpu-µs/page")
		b.ReportMetric(rss/(1<<20), "RSS-MiB")
		b.Logf("%d hosts, %d oracle URLs; crawl %d fetches (+%d robots.txt) in %v; ceiling %d in %v",
			web.NumHosts(), len(urls), st.Fetches, st.RobotsFetches, d.Round(time.Millisecond), cp, cd.Round(time.Millisecond))
	}
}
