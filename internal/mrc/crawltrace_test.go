package mrc

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

// crawlTrace crawls a synthetic web on loopback with one node and returns
// the stream its front caches were asked about (crawl.Options.
// FrontObserverBatch: what the live estimator sees in `crawler crawl`), one
// batch per page, and the number of fetches.
func crawlTrace(t testing.TB, cfg simweb.Config) (batches [][]uint64, fetches uint64) {
	t.Helper()
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLatency: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	filter, err := extract.NewFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n, err := crawl.Open(crawl.Options{
		DataDir: t.TempDir(), Workers: 8,
		Fetcher:          fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, TLSConfig: srv.TLSClientConfig(), FetchTimeout: 10 * time.Second},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: time.Second},
		DUEFlushInterval: 100 * time.Millisecond,
		Filter:           crawl.Filter{F: filter},
		FrontObserverBatch: func(fps []uint64) {
			mu.Lock()
			batches = append(batches, append([]uint64(nil), fps...))
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("crawl did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	return batches, n.Stats().Fetches
}

func flatten(batches [][]uint64) []uint64 {
	var out []uint64
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

// TestAccuracyCrawlTrace checks the estimator on a real crawl's front-cache
// stream (a single-node crawl of a 300-host synthetic web on loopback)
// against the exact curves of the same stream: MAE ≤ 0.01 over
// k = 2⁰ … 2²⁵ for LRU, CLOCK and RANDOM, with the settings the crawl uses
// (Economy) and the defaults.
func TestAccuracyCrawlTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	cfg := simweb.Config{Seed: 3, Hosts: 300, PagesPerHost: 20, NoPathologies: true}
	cfg.EnsureDefaults()
	batches, _ := crawlTrace(t, cfg)
	trace := flatten(batches)
	distinct := map[uint64]struct{}{}
	for _, fp := range trace {
		distinct[fp] = struct{}{}
	}
	t.Logf("crawl trace: %d requests, %d distinct URLs", len(trace), len(distinct))
	if len(distinct) < 2*Economy.MaxSamples {
		t.Fatalf("trace too small to exercise sampling: %d distinct", len(distinct))
	}
	exact, err := cachesim.Simulate(context.Background(), trace, cachesim.SimOptions{
		Algos: []string{cache.AlgoLRU, cache.AlgoClock, cache.AlgoRandom}, Procs: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	for cname, o := range configs {
		e, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		e.ObserveBatch(trace)
		if e.Rate() >= 1 {
			t.Errorf("%s: SHARDS rate %g: the fixed-size tier never sampled", cname, e.Rate())
		}
		for _, algo := range []string{LRU, CLOCK, RANDOM} {
			est, _ := e.Curve(algo)
			var sum, worst float64
			np := 0
			for _, x := range exact {
				if x.Algo != algo {
					continue
				}
				d := math.Abs(est[np].MissRatio - x.MissRate)
				sum, worst = sum+d, max(worst, d)
				np++
			}
			mae := sum / float64(np)
			t.Logf("crawl trace %s %s: MAE %.4f max %.4f (SHARDS rate %.4f)", cname, algo, mae, worst, e.Rate())
			if mae > 0.01 {
				t.Errorf("crawl trace %s %s: MAE %.4f > 0.01", cname, algo, mae)
			}
		}
	}
}

// BenchmarkCrawlTraceObserve is the live estimator's own CPU on a real
// crawl: the front-cache stream of a single-node crawl of a 1000-host
// simweb, replayed page by page through Shared.ObserveBatch (Economy, what
// `crawler crawl` runs), as thread CPU per 1000 pages fetched
// ("cpu-ms/1000pages"); compare with the crawl's own CPU per 1000 pages
// (docs/bench/operator.md).
func BenchmarkCrawlTraceObserve(b *testing.B) {
	cfg := simweb.Config{Seed: 1, Hosts: 1000, PagesPerHost: 10, NoPathologies: true}
	cfg.EnsureDefaults()
	batches, fetches := crawlTrace(b, cfg)
	reqs := 0
	for _, p := range batches {
		reqs += len(p)
	}
	b.Logf("%d fetches, %d pages with links, %d front-cache requests", fetches, len(batches), reqs)
	var total float64
	for i := 0; i < b.N; i++ {
		s, err := NewShared(Economy)
		if err != nil {
			b.Fatal(err)
		}
		total += measureOnce(b, func() {
			for _, p := range batches {
				s.ObserveBatch(p)
			}
		})
	}
	b.ReportMetric(total/float64(b.N)/1e6/float64(fetches)*1000, "cpu-ms/1000pages")
	b.ReportMetric(total/float64(b.N)/float64(reqs), "cpu-ns/request")
}
