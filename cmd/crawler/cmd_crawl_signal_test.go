package main

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

// Issue 5: SIGINT stops `crawler crawl` gracefully (exit 0, "interrupted",
// fetches in flight finish or are requeued, state durable) and running it
// again on the same --data resumes. After several interrupts at random
// moments and a final run to the end, the pages simweb served equal the
// oracle's set, the crawl log has every URL exactly once, and the server
// saw a URL twice only for fetches cut off in flight (≤ workers per
// interrupt).
func TestCrawlSigintResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const (
		workers    = 8
		interrupts = 3
		bodyCap    = 1 << 20
	)
	c := newCrawlChild(t, workers, bodyCap)
	oracle, err := c.web.Oracle(c.web.Seeds(), simweb.Rules{BodyCap: bodyCap, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 5))
	t.Logf("interrupt schedule seed %d", seed)
	stopped := 0
	for i := range interrupts {
		// Interrupt once this run has logged a random number of fetches.
		at := c.logLines() + 20 + rng.IntN(400)
		ch, finished := c.startUntil(t, i, at)
		if finished {
			t.Logf("run %d finished before its interrupt at %d log lines", i, at)
			break
		}
		if err := ch.Signal(os.Interrupt); err != nil { // exited meanwhile: Wait reports how
			t.Fatal(err)
		}
		if err := ch.Wait(2 * time.Minute); err != nil {
			t.Fatalf("run %d: SIGINT: %v, want exit 0\n%s", i, err, ch.Output())
		}
		if !strings.Contains(ch.Output(), "interrupted; run again with the same --data to resume") {
			t.Fatalf("run %d: no interrupted summary:\n%s", i, ch.Output())
		}
		stopped++
		t.Logf("run %d: SIGINT at %d crawl log lines, %d after the graceful stop", i, at, c.logLines())
	}
	if out := c.runToEnd(t); !strings.Contains(out, "done (frontier empty)") {
		t.Fatalf("final run did not end with an empty frontier:\n%s", out)
	}
	served, repeats := servedPages(c.web, c.srv)
	if err := oracle.Check(served); err != nil {
		t.Errorf("after %d interrupts the served set differs from the oracle's: %v", stopped, err)
	}
	if repeats > workers*stopped {
		t.Errorf("%d repeated requests after %d interrupts, want ≤ %d (fetches in flight)", repeats, stopped, workers*stopped)
	}
	logged := checkLoggedOnce(t, c.logPath, served)
	t.Logf("%d interrupts, %d URLs served (oracle %d + traps %v), %d repeated requests, %d URLs logged",
		stopped, len(served), oracle.Size(), oracle.TrapHosts, repeats, len(logged))
}

// servedPages is the server's view: the URLs it served and how many
// requests repeated one (robots.txt and its redirect hops aside; --resolve
// sends every *.sim.test name to simweb, which answers 421 for names the
// web lacks, so only the web's hosts count).
func servedPages(web *simweb.Web, srv *simweb.Server) (served []string, repeats int) {
	count := map[string]int{}
	for host, reqs := range srv.Log() {
		if _, ok := web.HostIndex(host); !ok {
			continue
		}
		for _, r := range reqs {
			if r.Path != "/robots.txt" && !strings.HasPrefix(r.Path, "/robots/") {
				scheme := "http://" // the server's log knows how it was asked
				if r.TLS {
					scheme = "https://"
				}
				count[scheme+host+r.Path]++
			}
		}
	}
	for u, n := range count {
		served = append(served, u)
		repeats += n - 1
	}
	return served, repeats
}

// checkLoggedOnce checks the crawl log: every URL with a request sent,
// exactly once over all the runs (a fetch cut off by the stop is requeued,
// not logged). It returns how often each URL was logged.
func checkLoggedOnce(t *testing.T, logPath string, served []string) map[string]int {
	es, err := crawl.ReadLogFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]int{}
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			logged[e.URL]++
		}
	}
	for u, n := range logged {
		if n > 1 {
			t.Errorf("%s logged %d times", u, n)
		}
	}
	for _, u := range served {
		if logged[u] == 0 {
			t.Errorf("%s served but not in the crawl log", u)
		}
	}
	return logged
}
