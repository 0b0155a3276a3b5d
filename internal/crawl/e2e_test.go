package crawl

import (
	"context"
	"path/filepath"
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

func TestSingleNodeCrawlMatchesOracle(t *testing.T) {
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{BodyCap: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, err := Open(testNodeOptions(t, dir, srv, web.Domain()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := n.Seed(ctx, web.Seeds()); err != nil {
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
	t.Logf("fetches %d (ok %d, redirect %d, http-err %d, err %d), robots disallowed %d, cache hit rate %.2f, %.0f pages/s",
		st.Fetches, st.FetchOK, st.FetchRedirect, st.FetchHTTPErr, st.FetchErr, st.RobotsDisallowed, st.CacheHitRate(), st.PagesPerSecond())
	got, dups := fetchedURLs(t, filepath.Join(dir, "crawl.log"))
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched more than once, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(got); err != nil {
		t.Errorf("fetched set differs from the oracle's (%d fetched, oracle %d): %v", len(got), oracle.Size(), err)
	}
}
