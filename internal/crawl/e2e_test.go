package crawl

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// mustFilter admits http(s) URLs under one domain, up to 2048 bytes.
func mustFilter(t *testing.T, domain string) Filter {
	f, err := extract.NewFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{domain}, MaxRepeatedSegments: -1})
	if err != nil {
		t.Fatal(err)
	}
	return Filter{f}
}

// testNodeOptions are the options of a node crawling srv politely with no
// minimum delay.
func testNodeOptions(t *testing.T, dir string, srv *simweb.Server, domain string) Options {
	t.Helper()
	return Options{
		DataDir: dir,
		Workers: 16,
		Fetcher: fetcher.Options{
			AllowPrivate: true,
			DialContext:  srv.DialContext,
			TLSConfig:    srv.TLSClientConfig(),
			FetchTimeout: 3 * time.Second,
			BodyCap:      1 << 20,
		},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 200 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 100 * time.Millisecond},
		DUEFlushInterval: 50 * time.Millisecond,
		MaxPagesPerHost:  1000,
		Filter:           mustFilter(t, domain),
	}
}

// fetchedURLs returns the URLs with a request sent, per the crawl log, and
// the URLs logged more than once.
func fetchedURLs(t *testing.T, logs ...string) (set []string, dups []string) {
	t.Helper()
	count := map[string]int{}
	for _, p := range logs {
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Outcome == OutcomeRobots {
				continue
			}
			count[e.URL]++
		}
	}
	for u, c := range count {
		set = append(set, u)
		if c > 1 {
			dups = append(dups, u)
		}
	}
	sort.Strings(set)
	sort.Strings(dups)
	return set, dups
}

// smallWeb serves simweb.SmallConfig on loopback until the test ends and
// returns it with its oracle for the given body cap (sitemaps read, as the
// crawler does by default).
func smallWeb(t *testing.T, bodyCap int64) (*simweb.Web, *simweb.Server, *simweb.OracleResult) {
	t.Helper()
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: bodyCap, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	if oracle.SitemapFiles == 0 {
		t.Fatal("SmallConfig serves no sitemaps: the e2e tests would not check them")
	}
	return web, srv, oracle
}

// crawlToEnd seeds n, runs it until its frontier is empty (failing the test
// if that takes longer than timeout), closes it and returns its final stats.
func crawlToEnd(t *testing.T, n *Node, seeds []string, timeout time.Duration) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.Seed(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("crawl did not finish: %+v", st)
	}
	return st
}
