package crawl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/internal/warc/warctest"
	"github.com/sextant-crawler/sextant/revisit"
	"github.com/sextant-crawler/sextant/simweb"
)

// revisitWeb is a small web without pathologies whose changing pages
// (half of them) change every 100 ms: faster than the shortest revisit
// interval, so that every revisit of one finds it changed and every
// revisit of a static page finds it unchanged.
func revisitWeb(t *testing.T) (*simweb.Web, *simweb.Server) {
	t.Helper()
	cfg := simweb.Config{Seed: 5, Hosts: 3, PagesPerHost: 6, MinPagesPerHost: 3, MaxPagesPerHost: 8,
		NoPathologies: true, LinksMedian: 5, LinksMean: 8, PageSizeMedian: 2000}
	cfg.EnsureDefaults()
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{ChangeEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return web, srv
}

// TestRevisitAdaptive is issue 28's done-when test for continuous
// crawling, in real time (seconds): on a web whose changing pages change
// faster than the shortest interval, changed pages are fetched again and
// their new content seen (a new digest), unchanged ones are answered 304,
// intervals adapt (a changed page's shrinks, an unchanged page's grows),
// no URL is requested twice within the minimum interval, the URL-seen set
// stays exact (no URL delivered as new twice), 304s are archived as
// server-not-modified revisit records, and a reopened node keeps its
// schedule.
func TestRevisitAdaptive(t *testing.T) {
	web, srv := revisitWeb(t)
	dir := t.TempDir()
	opts := testNodeOptions(t, dir, srv, web.Domain())
	opts.Workers = 4
	opts.Sitemaps = SitemapsOff
	rv := revisit.Options{Adaptive: true, Min: 400 * time.Millisecond, Max: 6400 * time.Millisecond}
	opts.Revisit = rv
	opts.WARCArchive = WARCArchive{Dir: filepath.Join(dir, "warc")}
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, hist := runUntilRevisits(t, n, web.Seeds())
	notModSeen := checkRevisitLog(t, dir, srv, st, hist, rv)
	checkNotModifiedArchived(t, filepath.Join(dir, "warc"), notModSeen)
	checkRevisitResume(t, opts, web.Seeds(), len(hist))
}

// runUntilRevisits runs n until enough revisits happened (however loaded
// the machine is), stops it as an operator would, closes it and returns
// its figures and its URLs' histories.
func runUntilRevisits(t *testing.T, n *Node, seeds []string) (Stats, map[string]revisit.History) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Seed(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for runCtx.Err() == nil {
			if r := n.Stats().Revisit; r.NotModified >= 3 && r.Changed >= 6 {
				stop()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// stopWhenIdle: a continuous crawl is never idle, so only ctx ends it.
	if err := n.Run(runCtx, true); err != nil {
		t.Fatal(err)
	}
	<-stopped
	if ctx.Err() != nil {
		t.Fatalf("too few revisits in 2 minutes: %+v", n.Stats().Revisit)
	}
	if runCtx.Err() == nil {
		t.Fatal("Run returned before its context ended: a continuous crawl ended by itself")
	}
	st := n.Stats()
	hist := map[string]revisit.History{}
	if err := n.rv.Each(func(_ uint64, h revisit.History) error {
		bare, _ := splitAnnot(h.URL)
		hist[bare] = h
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("fetches %d, new URLs %d, revisit %+v frontier %+v", st.Fetches, st.NewURLs, st.Revisit, st.Frontier)
	return st, hist
}

// checkRevisitLog checks crawl.log, the histories and the server's log
// against what continuous crawling promises; it returns the 304 lines.
func checkRevisitLog(t *testing.T, dir string, srv *simweb.Server, st Stats, hist map[string]revisit.History, rv revisit.Options) int {
	t.Helper()
	// The seen-set is exact: every URL fetched was delivered new once.
	es, err := ReadLogFile(filepath.Join(dir, crawlLogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string][]LogEntry{}
	for _, e := range es {
		if !isRobotsTxtLine(e) {
			lines[e.URL] = append(lines[e.URL], e)
		}
	}
	// (A URL may still be queued: nohost.sim.test's robots.txt is retried.)
	fetched := uint64(len(lines))
	if st.NewURLs != st.DUE.Emitted || st.NewURLs < fetched || st.NewURLs > fetched+uint64(st.Frontier.Queued) {
		t.Errorf("new URLs %d, DUE emitted %d, distinct URLs fetched %d, queued %d: a revisit went through the seen-set",
			st.NewURLs, st.DUE.Emitted, fetched, st.Frontier.Queued)
	}
	initial := time.Duration(1600) * time.Millisecond // √(0.4 s × 6.4 s)
	var changedSeen, notModSeen, shrunk, grown int
	for u, ls := range lines {
		h, ok := hist[u]
		if !ok {
			t.Errorf("%s fetched but not scheduled", u)
			continue
		}
		host, pq := splitHostPath(t, u)
		// simweb changes only its 200 HTML pages.
		changing := srv.Changing(host, pq) && ls[0].Status == 200 && strings.HasPrefix(ls[0].ContentType, "text/html")
		digests := map[string]bool{}
		for i, e := range ls {
			switch {
			case i > 0 && e.Outcome == OutcomeNotModified:
				notModSeen++
				if e.Digest == "" || e.Digest != ls[i-1].Digest {
					t.Errorf("%s: 304 line %d digest %q, want the previous line's %q", u, i, e.Digest, ls[i-1].Digest)
				}
				if changing {
					t.Errorf("%s changes every 100 ms but was answered 304 (line %d)", u, i)
				}
			case i > 0 && e.Outcome == OutcomeOK && changing:
				if !strings.Contains(e.Note, "revisit:changed") {
					t.Errorf("%s: revisit line %d note %q, want revisit:changed", u, i, e.Note)
				}
				changedSeen++
			}
			if e.Outcome == OutcomeOK {
				digests[e.Digest] = true
			}
		}
		if len(ls) < 2 {
			continue
		}
		if changing && len(digests) < 2 {
			t.Errorf("%s changed but its %d fetches saw one digest", u, len(ls))
		}
		switch {
		case changing && h.Interval < initial:
			shrunk++
		case changing:
			t.Errorf("%s changes, fetched %d times: interval %v, want < %v", u, len(ls), h.Interval, initial)
		case h.Interval > initial:
			grown++
		default:
			t.Errorf("%s does not change, fetched %d times: interval %v, want > %v", u, len(ls), h.Interval, initial)
		}
	}
	if changedSeen == 0 || notModSeen == 0 || shrunk == 0 || grown == 0 {
		t.Errorf("changed re-fetches %d, 304s %d, intervals shrunk %d grown %d: want each > 0", changedSeen, notModSeen, shrunk, grown)
	}
	if st.Revisit.NotModified != uint64(notModSeen) || st.Revisit.Changed == 0 || st.Revisit.Unchanged < st.Revisit.NotModified || st.Revisit.Queued == 0 {
		t.Errorf("revisit stats %+v; 304 lines %d", st.Revisit, notModSeen)
	}
	// No URL requested more often than its bound (the minimum interval).
	for host, reqs := range srv.Log() {
		last := map[string]time.Time{}
		for _, r := range reqs {
			if r.Path == "/robots.txt" {
				continue
			}
			if p, ok := last[r.Path]; ok && r.Start.Sub(p) < rv.Min {
				t.Errorf("%s%s requested %v after the previous request, under the %v bound", host, r.Path, r.Start.Sub(p), rv.Min)
			}
			last[r.Path] = r.Start
		}
	}
	return notModSeen
}

// checkRevisitResume reopens the node: it keeps its schedule of
// scheduled URLs and revisits without new URLs.
func checkRevisitResume(t *testing.T, opts Options, seeds []string, scheduled int) {
	t.Helper()
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := n.Stats().Revisit; s.Scheduled != int64(scheduled) || s.NextDue.IsZero() {
		t.Fatalf("after reopening: %+v, want %d scheduled", s, scheduled)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	if err := n.Seed(ctx2, seeds); err != nil {
		t.Fatal(err)
	}
	// MaxFetches is not set: stop after a few revisits of the old schedule.
	go func() {
		for ctx2.Err() == nil && n.Stats().Fetches < 3 {
			time.Sleep(50 * time.Millisecond)
		}
		cancel2()
	}()
	if err := n.Run(ctx2, true); err != nil {
		t.Fatal(err)
	}
	st2 := n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if st2.Fetches == 0 || st2.NewURLs != 0 || st2.Revisit.Queued == 0 {
		t.Errorf("resumed continuous crawl: fetches %d, new URLs %d, queued %d; want revisits and no new URL", st2.Fetches, st2.NewURLs, st2.Revisit.Queued)
	}
}

// splitHostPath returns the host name and the path and query of u.
func splitHostPath(t *testing.T, u string) (string, string) {
	t.Helper()
	rest := u[strings.Index(u, "://")+3:]
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return rest, "/"
	}
	host := rest[:i]
	if j := strings.LastIndexByte(host, ':'); j >= 0 {
		host = host[:j]
	}
	return host, rest[i:]
}

// checkNotModifiedArchived checks that the WARC files in dir hold want
// server-not-modified revisit records.
func checkNotModifiedArchived(t *testing.T, dir string, want int) {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil || len(fs) == 0 {
		t.Fatalf("WARC files in %s: %v %v", dir, fs, err)
	}
	got := 0
	for _, f := range fs {
		recs, err := warctest.Validate(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Type == "revisit" && r.Header["WARC-Profile"] == warc.ProfileServerNotModified {
				got++
			}
		}
	}
	if got != want {
		t.Errorf("%d server-not-modified revisit records, want one per 304 (%d)", got, want)
	}
}
