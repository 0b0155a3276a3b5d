package crawl

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/simweb"
)

// sitemapSite serves a.test and b.test for TestSitemapsCrawled and counts
// the requests per host+path.
type sitemapSite struct {
	mu   sync.Mutex
	hits map[string]int
	// Requests in flight per host: a sitemap fetch is a request like any
	// other and must wait for its host's politeness slot.
	busy map[string]int
	both int // requests that found another in flight on their host
}

func (s *sitemapSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Host + r.URL.Path
	s.mu.Lock()
	s.hits[key]++
	if s.busy[r.Host]++; s.busy[r.Host] > 1 {
		s.both++
	}
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.busy[r.Host]--; s.mu.Unlock() }()
	time.Sleep(time.Millisecond)
	xml := func(root, body string) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><%s xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</%s>`, root, body, root)
	}
	urls := func(locs ...string) string {
		var b strings.Builder
		for _, l := range locs {
			fmt.Fprintf(&b, "<url><loc>%s</loc></url>\n", l)
		}
		return b.String()
	}
	maps := func(locs ...string) string {
		var b strings.Builder
		for _, l := range locs {
			fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>\n", l)
		}
		return b.String()
	}
	switch key {
	case "a.test/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\nDisallow: /maps/secret/\n\n"+
			"Sitemap: http://a.test/private/sitemap.xml\nSitemap: /maps/index.xml\nsitemap:  http://b.test/from-a.xml\n")
	case "a.test/maps/index.xml":
		xml("sitemapindex", maps("http://a.test/maps/pages.xml.gz", "http://a.test/maps/list.txt",
			"http://a.test/maps/nested.xml", "http://a.test/maps/moved.xml", "http://b.test/maps/x.xml"))
	case "a.test/maps/pages.xml.gz":
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		fmt.Fprintf(z, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">%s</urlset>`,
			urls("http://a.test/maps/p1.html", "http://a.test/maps/p2.html", "http://a.test/outside.html",
				"http://c.example/", "http://a.test/maps/secret/s.html"))
		z.Close()
		w.Header().Set("Content-Type", "application/x-gzip")
		w.Write(b.Bytes())
	case "a.test/maps/list.txt":
		// 50,000 URLs (repeats), then one beyond the protocol's limit.
		fmt.Fprint(w, "http://a.test/maps/t1.html\nhttp://a.test/maps/"+strings.Repeat("x", 2100)+".html\n")
		for i := 1; i < 50_000; i++ {
			fmt.Fprintf(w, "http://a.test/maps/r%d.html\n", i%10)
		}
		fmt.Fprint(w, "http://a.test/maps/over.html\n")
	case "a.test/maps/nested.xml":
		xml("sitemapindex", maps("http://a.test/maps/deep.txt"))
	case "a.test/maps/moved.xml":
		http.Redirect(w, r, "/maps/moved-target.xml", http.StatusMovedPermanently)
	case "a.test/maps/moved-target.xml":
		xml("urlset", urls("http://a.test/maps/m1.html"))
	case "b.test/from-a.xml":
		xml("urlset", urls("http://b.test/b1.html", "http://a.test/cross.html"))
	case "b.test/sitemap.xml":
		xml("urlset", urls("http://b.test/only.html"))
	case "b.test/robots.txt":
		http.NotFound(w, r)
	default:
		fmt.Fprintf(w, "<html>%s</html>", key) // distinct bodies, no links
	}
}

// TestSitemapsCrawled: sitemaps named by robots.txt (relative, on another
// host, robots-disallowed) and found by the /sitemap.xml probe are fetched
// once each, in their host's politeness slot, and what they list is
// crawled under the protocol's and the crawl's rules: an index's children
// (gzip, text) but not a nested index's; a sitemap's redirect (as a
// sitemap: TestSitemapRedirectsFollowed has the details); nothing
// against the location rule, beyond 50,000 URLs, too long or disallowed.
// A second run on the same data fetches nothing.
func TestSitemapsCrawled(t *testing.T) {
	site := &sitemapSite{hits: map[string]int{}, busy: map[string]int{}}
	srv := httptest.NewServer(site)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	opts := Options{
		DataDir: dir, Workers: 4,
		Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"a.test": addr, "b.test": addr}},
		Frontier:         frontier.Options{MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
		Filter:           mustFilter(t, "test"),
	}
	crawl := func() Stats {
		n, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		return crawlToEnd(t, n, []string{"http://a.test/"}, time.Minute)
	}
	st := crawl()
	want := map[string]int{
		"a.test/robots.txt": 1, "a.test/": 1,
		"a.test/maps/index.xml": 1, "a.test/maps/pages.xml.gz": 1, "a.test/maps/list.txt": 1,
		"a.test/maps/nested.xml": 1, "a.test/maps/moved.xml": 1, "a.test/maps/moved-target.xml": 1, "a.test/maps/m1.html": 1,
		"a.test/maps/p1.html": 1, "a.test/maps/p2.html": 1, "a.test/maps/t1.html": 1,
		"b.test/robots.txt": 1, "b.test/from-a.xml": 1, "b.test/sitemap.xml": 1,
		"b.test/b1.html": 1, "b.test/only.html": 1,
	}
	for i := range 10 {
		want[fmt.Sprintf("a.test/maps/r%d.html", i)] = 1
	}
	site.mu.Lock()
	for k, c := range site.hits {
		if want[k] != c {
			t.Errorf("%s requested %d times, want %d", k, c, want[k])
		}
	}
	for k, c := range want {
		if site.hits[k] == 0 {
			t.Errorf("%s requested 0 times, want %d", k, c)
		}
	}
	if site.both > 0 {
		t.Errorf("%d requests found another in flight on their host", site.both)
	}
	site.mu.Unlock()
	sm := st.Sitemap
	t.Logf("sitemap stats %+v; robots disallowed %d", sm, st.RobotsDisallowed)
	// a.test: index, gzip, text, nested, moved, moved-target; b.test: from-a, sitemap.xml.
	if sm.Fetches != 8 || sm.Origins != 2 || sm.OverLimit != 1 || sm.TooDeep != 1 || sm.Children != 4 ||
		sm.OutOfPath != 4 || sm.Invalid != 1 || sm.Failed != 0 || st.RobotsDisallowed != 2 {
		t.Errorf("sitemap stats %+v, robots-disallowed %d; want 8 fetches, 2 origins, 1 over the limit, 1 too deep, 4 children (not the other host's), 4 out of path, 1 invalid, 0 failed, 2 disallowed",
			sm, st.RobotsDisallowed)
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, e := range es {
		isMap := strings.Contains(e.URL, "xml") || strings.HasSuffix(e.URL, ".txt") && !strings.HasSuffix(e.URL, "robots.txt")
		if e.Outcome != OutcomeRobots && IsSitemapNote(e.Note) != isMap {
			t.Errorf("crawl log: %s noted %q", e.URL, e.Note)
		}
		if IsSitemapNote(e.Note) {
			marked++
		}
		if strings.Contains(e.URL, "#") {
			t.Errorf("crawl log: %s logged with its mark", e.URL)
		}
	}
	if marked != 8 {
		t.Errorf("%d crawl log lines marked as sitemap fetches, want 8", marked)
	}

	// Resumed: the origins are probed again, and the DUE drops their
	// sitemaps as seen.
	site.mu.Lock()
	before := fmt.Sprint(site.hits)
	site.mu.Unlock()
	st = crawl()
	site.mu.Lock()
	defer site.mu.Unlock()
	if after := fmt.Sprint(site.hits); after != before || st.Fetches != 0 {
		t.Errorf("the second run fetched %d URLs:\n%s\nwas\n%s", st.Fetches, after, before)
	}
}

// TestSitemapWebMatchesOracle: simweb's sitemap layouts (robots.txt
// Sitemap: lines, the /sitemap.xml probe, an index of gzip, text and nested
// sitemaps, a text sitemap over 50,000 URLs) read whole (the default body
// cap) are crawled exactly as the oracle says: the sitemap-only pages, and
// nothing beyond the limit, too deep or against the location rule. The
// web has no pathologies, so that the crawl is quick; the presets' webs
// (all pathologies, sitemaps on) are crawled by the other e2e tests.
func TestSitemapWebMatchesOracle(t *testing.T) {
	cfg := simweb.SmallConfig()
	cfg.NoPathologies, cfg.SitemapShare = true, 0.5
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := testNodeOptions(t, dir, srv, web.Domain())
	opts.Fetcher.BodyCap = 0 // the default, 16 MiB: the 50,000-URL text sitemap is read whole
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, web.Seeds(), 2*time.Minute)
	got, dups := fetchedURLs(t, filepath.Join(dir, "crawl.log"))
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(got); err != nil {
		t.Errorf("fetched set differs from the oracle's (%d fetched, oracle %d): %v", len(got), oracle.Size(), err)
	}
	only := 0
	for _, u := range oracle.Fetched {
		if strings.Contains(u, "/only/") {
			only++
		}
	}
	sm := st.Sitemap
	t.Logf("%d fetched, oracle %d (%d sitemap files, %d sitemap-only pages); sitemap stats %+v", len(got), oracle.Size(), oracle.SitemapFiles, only, sm)
	if only == 0 || oracle.SitemapFiles == 0 {
		t.Fatalf("the oracle has %d sitemap files and %d sitemap-only pages: the web has no sitemaps", oracle.SitemapFiles, only)
	}
	if sm.Fetches != uint64(oracle.SitemapFiles) || sm.OverLimit != 1 || sm.TooDeep == 0 || sm.OutOfPath == 0 || sm.Invalid == 0 || sm.Failed != 0 {
		t.Errorf("sitemap stats %+v: want %d fetches, 1 over the limit, some too deep, out of path and invalid, none failed", sm, oracle.SitemapFiles)
	}
}

func TestSitemapMark(t *testing.T) {
	for _, c := range []struct {
		in, bare    string
		level, hops uint8
	}{
		{"http://a/x", "http://a/x", smPage, 0},
		{"http://a/sitemap.xml" + markSitemap, "http://a/sitemap.xml", smRoot, 0},
		{"http://a/s.xml" + markSitemapChild, "http://a/s.xml", smChild, 0},
		{"http://a/sitemap.xml" + markSitemap + "-r1", "http://a/sitemap.xml", smRoot, 1},
		{"http://a/s.xml" + markSitemapChild + "-r5", "http://a/s.xml", smChild, 5},
		{"http://a/s.xml#other", "http://a/s.xml", smPage, 0},    // an unknown annotation (canonical URLs have no fragment)
		{"http://a/s.xml#other-r1", "http://a/s.xml", smPage, 0}, // likewise
	} {
		bare, level, hops := splitSitemapMark(c.in)
		if bare != c.bare || level != c.level || hops != c.hops {
			t.Errorf("splitSitemapMark(%q) = %q, %d, %d; want %q, %d, %d", c.in, bare, level, hops, c.bare, c.level, c.hops)
		}
		if level != smPage && (withSitemapMark(bare, level, hops) != c.in || urlFP(c.in) != urlFP(bare)) {
			t.Errorf("%q: mark does not round-trip or changes the fingerprint", c.in)
		}
	}
	for note, level := range map[string]uint8{"sitemap_kind=urlset": smRoot, "sitemap": smRoot, "sitemaps": smPage,
		"sitemap-listed truncated": smChild, "sitemap-listed": smChild, "": smPage, "truncated": smPage} {
		if got := sitemapLevelOfNote(note); got != level || IsSitemapNote(note) != (level != smPage) {
			t.Errorf("note %q: level %d, want %d", note, got, level)
		}
		for hops := range uint8(3) {
			if level != smPage {
				if l, h := sitemapOfNote(sitemapNote(level, hops, "kind=urlset")); l != level || h != hops {
					t.Errorf("sitemapNote(%d, %d) does not round-trip: %d, %d", level, hops, l, h)
				}
			}
		}
		if q := queuedForm(LogEntry{URL: "http://a/s.xml", Note: note}); level != smPage && q != withSitemapMark("http://a/s.xml", level, 0) || level == smPage && q != "http://a/s.xml" {
			t.Errorf("queuedForm with note %q: %s", note, q)
		}
	}
	// As read back from crawl.log (spaces escaped).
	if l, h := sitemapOfNote("sitemap-listed_hop=3_https://a/x"); l != smChild || h != 3 {
		t.Errorf("read-back note: level %d, %d hops", l, h)
	}
}
