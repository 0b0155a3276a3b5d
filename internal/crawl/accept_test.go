package crawl

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// Issue 5's acceptance on simweb, checked from the server's side: one
// request per host at a time, the delay rule, Crawl-delay, no robots-
// disallowed URL, no URL twice, traps within budget, every pathology host
// logged, and the crawl ends.
func TestAcceptSimwebPoliteness(t *testing.T) {
	web, srv, oracle := smallWeb(t, 1<<20)
	dir := t.TempDir()
	opts := testNodeOptions(t, dir, srv, web.Domain())
	st := crawlHeapBounded(t, opts, web)
	// The fetched set, from the crawl log and from the server's log.
	fetched, dups := fetchedURLs(t, filepath.Join(dir, "crawl.log"))
	if len(dups) > 0 {
		t.Errorf("crawl log: %d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("fetched set differs from the oracle's: %v", err)
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The crawler's own measure of each fetch's duration: the delay rule
	// is stated in it (the server's may be longer, e.g. for a body the
	// crawler truncated while the server was still writing).
	logged := map[string]time.Duration{}
	for _, e := range es {
		if e.Outcome == OutcomeRobots {
			continue
		}
		p, err := url.Parse(e.URL)
		if err != nil {
			t.Fatal(err)
		}
		logged[p.Scheme+"://"+p.Host+p.RequestURI()] = e.Duration
	}

	fo := opts.Frontier
	fo.EnsureDefaults()
	hostLog := srv.Log()
	checkedGaps := checkPoliteGaps(t, web, hostLog, fo, logged)
	checkPathologyHostsLogged(t, web, hostLog, es)
	// robots.txt redirects to another host (simweb sends some to a central
	// host) were followed in that host's slot, each with a log line.
	crossHops := 0
	for _, e := range es {
		if e.Outcome == OutcomeRobots && strings.Contains(strings.ReplaceAll(e.Note, "_", " "), "fetched in that host's politeness slot") {
			crossHops++
		}
	}
	if crossHops == 0 || st.Fetcher.RobotsCrossHops == 0 {
		t.Errorf("no robots.txt redirect to another host was followed (%d log lines, %d hops)", crossHops, st.Fetcher.RobotsCrossHops)
	}
	t.Logf("%d fetched (oracle %d + traps %v), %d delay gaps checked on %d hosts; %d robots.txt followed to another host (%d hops, %d waits)",
		len(fetched), oracle.Size(), oracle.TrapHosts, checkedGaps, len(hostLog), crossHops, st.Fetcher.RobotsCrossHops, st.Fetcher.RobotsDeferred)
}

// crawlHeapBounded crawls web with opts to the end and checks that the Go
// heap stays bounded; it returns the node's final stats.
func crawlHeapBounded(t *testing.T, opts Options, web *simweb.Web) Stats {
	base := liveHeap()
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	heap := startHeapSampler(20 * time.Millisecond)
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	peak, samples := heap.Stop()
	live := liveHeap()
	// Memory stays bounded (the test's process also runs simweb): the
	// peak Go heap in use (sampled every 20 ms) and the heap still live
	// after the crawl, over the heap before Open. Measured on this small
	// web (3,455 fetches, 42 MB of bodies): peak 47–53 MiB, live growth
	// 14–18 MiB (9 of them the default content-seen set), with and without
	// cgo (pebble's caches leave the Go heap with cgo). The bounds are ~5×
	// and ~2.3× that: decompressing a 64 MiB gzip bomb per worker, or
	// keeping every body (42 MB), breaks them; scheduling does not move a
	// live heap measured after a full GC.
	const maxPeak, maxLive = 256 << 20, 40 << 20
	st := n.Stats()
	t.Logf("Go heap: %.1f MiB before Open, peak in use %.1f MiB (%d samples), live growth %.1f MiB after %d fetches (%.1f MB)",
		float64(base)/(1<<20), float64(peak)/(1<<20), samples, float64(live-min(live, base))/(1<<20), st.Fetches, float64(st.Bytes)/1e6)
	if peak > maxPeak {
		t.Errorf("peak Go heap in use %.1f MiB > %d MiB", float64(peak)/(1<<20), maxPeak>>20)
	}
	if live > base && live-base > maxLive {
		t.Errorf("live Go heap grew by %.1f MiB during the crawl, > %d MiB", float64(live-base)/(1<<20), maxLive>>20)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("crawl did not finish (stall)")
	}

	return st
}

// checkPoliteGaps checks the server's log: one request per host at a time,
// no URL requested twice or missing from the crawl log, and the gaps
// between a host's requests by the delay rule and Crawl-delay. It returns
// the number of gaps checked.
func checkPoliteGaps(t *testing.T, web *simweb.Web, hostLog map[string][]simweb.Request, fo frontier.Options, logged map[string]time.Duration) int {
	// The server stamps a request's end after its last write returns; on a
	// loaded machine its goroutine may be descheduled for a few ms after
	// the crawler already has the whole body, so a gap can look a few ms
	// short of the rule. A gap short by more than tol counts as late; a
	// few late gaps are scheduling noise, many (or one short by more than
	// hardTol) are a politeness bug.
	const (
		tol     = 3 * time.Millisecond
		hardTol = 25 * time.Millisecond
	)
	var late []string
	checkedGaps := 0
	for host, reqs := range hostLog {
		if mc := simweb.MaxConcurrent(reqs); mc > 1 {
			t.Errorf("%s: %d requests at once", host, mc)
		}
		seen := map[string]bool{}
		cd := web.CrawlDelay(host)
		// A host that redirects http→https is asked both ways: the URLs
		// differ by scheme, the politeness slot (the host) is one.
		key := func(r simweb.Request) string {
			if r.TLS {
				return "https://" + host + r.Path
			}
			return "http://" + host + r.Path
		}
		for i, r := range reqs {
			hop := strings.HasPrefix(r.Path, "/robots/") // a robots.txt redirect hop
			if i > 0 && r.Path == "/robots.txt" && r.TLS && reqs[i-1].Path == "/robots.txt" && !reqs[i-1].TLS {
				hop = true // http://h/robots.txt redirected to https://h/robots.txt
			}
			if !hop && r.Path != "/robots.txt" {
				if seen[key(r)] {
					t.Errorf("%s requested twice", key(r))
				}
				seen[key(r)] = true
				if _, ok := logged[key(r)]; !ok {
					t.Errorf("%s requested but not in the crawl log", key(r))
				}
			}
			if i == 0 {
				continue
			}
			prev := reqs[i-1]
			if hop && (prev.Path == "/robots.txt" || strings.HasPrefix(prev.Path, "/robots/")) {
				// A chain of hops on one host is followed in one slot,
				// which rests after the whole chain (checked at the next
				// request). Hops to another host (simweb sends some to a
				// central host) take that host's slot and are checked.
				continue
			}
			if prev.Status >= 500 || prev.Status == 0 || prev.End.IsZero() {
				continue // failures back off under their own rule
			}
			gap := r.Start.Sub(prev.End)
			dur, ok := logged[key(prev)]
			if !ok || prev.Path == "/robots.txt" {
				dur = prev.End.Sub(prev.Start)
			}
			want := time.Duration(fo.Factor * float64(dur))
			want = min(max(want, fo.MinDelay), fo.MaxDelay)
			if cd > 0 {
				want = max(want, min(cd, fo.MaxCrawlDelay))
			}
			checkedGaps++
			if gap < want-tol {
				msg := fmt.Sprintf("%s: %s after %s (%v long for the crawler) came %v later, want ≥ %v (factor %.0f, Crawl-delay %v)",
					host, r.Path, prev.Path, dur, gap, want, fo.Factor, cd)
				late = append(late, msg)
				if gap < want-hardTol {
					t.Error(msg)
				}
			}
		}
	}
	if checkedGaps < 1000 {
		t.Errorf("only %d gaps checked", checkedGaps)
	}
	if len(late)*100 > checkedGaps { // more than 1% late by tol..hardTol
		t.Errorf("%d of %d gaps shorter than the delay rule by more than %v, e.g. %s", len(late), checkedGaps, tol, late[0])
	} else if len(late) > 0 {
		t.Logf("%d of %d gaps short by %v..%v (scheduling noise), e.g. %s", len(late), checkedGaps, tol, hardTol, late[0])
	}

	return checkedGaps
}

// checkPathologyHostsLogged: nothing but robots.txt on hosts whose
// robots.txt is 5xx, and every pathology host the crawl reaches ends in
// crawl log lines.
func checkPathologyHostsLogged(t *testing.T, web *simweb.Web, hostLog map[string][]simweb.Request, es []LogEntry) {
	// Robots: nothing but robots.txt on hosts whose robots.txt is 5xx.
	for _, i := range web.HostsWith(simweb.Robots5xx) {
		for _, r := range hostLog[web.HostName(i)] {
			if r.Path != "/robots.txt" {
				t.Errorf("%s: %s fetched although robots.txt is 5xx", web.HostName(i), r.Path)
			}
		}
	}
	// Every pathology host the crawl reaches ends in crawl log lines.
	perHost := map[string]int{}
	for _, e := range es {
		if p, err := url.Parse(e.URL); err == nil {
			perHost[strings.ToLower(p.Hostname())]++
		}
	}
	for _, p := range simweb.Pathologies() {
		for _, i := range web.HostsWith(p) {
			h := web.HostName(i)
			if len(hostLog[h]) > 0 && perHost[h] == 0 && p != simweb.Robots5xx {
				t.Errorf("%s (%v) was contacted but has no crawl log line", h, p)
			}
		}
	}
}
