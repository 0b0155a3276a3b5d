package crawl

import (
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
)

// redirectSite serves a.test and b.test for TestSitemapRedirectsFollowed
// and records every request's host, path and time span.
type redirectSite struct {
	mu   sync.Mutex
	hits map[string]int
	reqs []siteReq
	busy map[string]int
	both int // requests that found another in flight on their host
}

type siteReq struct {
	host, path string
	start, end time.Time
}

func (s *redirectSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.mu.Lock()
	s.hits[r.Host+r.URL.Path]++
	if s.busy[r.Host]++; s.busy[r.Host] > 1 {
		s.both++
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.busy[r.Host]--
		s.reqs = append(s.reqs, siteReq{r.Host, r.URL.Path, start, time.Now()})
		s.mu.Unlock()
	}()
	urlset := func(locs ...string) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, l := range locs {
			fmt.Fprintf(w, "<url><loc>%s</loc></url>", l)
		}
		fmt.Fprint(w, "</urlset>")
	}
	codes := []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusMovedPermanently}
	chain := -1
	if r.Host == "a.test" && strings.HasPrefix(r.URL.Path, "/chain") {
		fmt.Sscanf(r.URL.Path, "/chain%d.xml", &chain)
	}
	switch key := r.Host + r.URL.Path; {
	case key == "a.test/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow:\n\nSitemap: http://a.test/old/sitemap.xml\n"+
			"Sitemap: http://a.test/chain0.xml\nSitemap: http://a.test/x-host.xml\n")
	case key == "a.test/old/sitemap.xml":
		http.Redirect(w, r, "/new/sitemap.xml", http.StatusMovedPermanently)
	case key == "a.test/new/sitemap.xml":
		// p2 is under the first URL's directory, not under the final one's.
		urlset("http://a.test/new/p1.html", "http://a.test/old/p2.html")
	case key == "a.test/x-host.xml":
		http.Redirect(w, r, "http://b.test/maps/s.xml", http.StatusFound)
	case key == "b.test/maps/s.xml":
		urlset("http://b.test/maps/q.html", "http://b.test/other/o.html")
	case key == "a.test/chain6.xml":
		urlset("http://a.test/too-far.html")
	case chain >= 0 && chain < 6:
		http.Redirect(w, r, fmt.Sprintf("/chain%d.xml", chain+1), codes[chain%len(codes)])
	case strings.HasSuffix(key, ".html") || key == "a.test/":
		fmt.Fprintf(w, "<html>%s</html>", key)
	default:
		http.NotFound(w, r)
	}
}

// TestSitemapRedirectsFollowed: a sitemap answered 301/302/307/308 hands
// its target on as a sitemap; a same-host target waits for the host's
// next politeness slot, another host's is fetched there; the location
// rule is judged against the final URL; a chain is followed for 5 hops,
// not 6. Before, no sitemap redirect was followed (new/sitemap.xml,
// b.test/maps/s.xml, chain1–5 and the pages they list were never asked).
// It runs with the host's slot held until a page is processed (the
// default) and released once the response is read (ReleaseEarly): the
// politeness checks hold either way.
func TestSitemapRedirectsFollowed(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReleaseEarly=%v", early), func(t *testing.T) { testSitemapRedirects(t, early) })
	}
}

func testSitemapRedirects(t *testing.T, releaseEarly bool) {
	site := &redirectSite{hits: map[string]int{}, busy: map[string]int{}}
	srv := httptest.NewServer(site)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	const minDelay = 20 * time.Millisecond
	n, err := Open(Options{
		DataDir: dir, Workers: 4,
		Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"a.test": addr, "b.test": addr}},
		Frontier:         frontier.Options{MinDelay: minDelay, MaxDelay: 40 * time.Millisecond},
		DUEFlushInterval: 10 * time.Millisecond,
		Filter:           mustFilter(t, "test"),
		ReleaseEarly:     releaseEarly,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, []string{"http://a.test/"}, time.Minute)

	want := map[string]int{
		"a.test/robots.txt": 1, "a.test/": 1,
		"a.test/old/sitemap.xml": 1, "a.test/new/sitemap.xml": 1, "a.test/new/p1.html": 1,
		"a.test/x-host.xml": 1, "b.test/maps/s.xml": 1, "b.test/maps/q.html": 1,
		"b.test/robots.txt": 1, "b.test/sitemap.xml": 1,
	}
	for i := range 6 { // chain0 and its 5 redirects; chain6 is a 6th hop
		want[fmt.Sprintf("a.test/chain%d.xml", i)] = 1
	}
	site.mu.Lock()
	defer site.mu.Unlock()
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
	// Every request waited for its host's slot: the frontier starts the
	// delay once the response was read, after the server's end.
	last := map[string]siteReq{}
	for _, r := range site.reqs {
		if p, ok := last[r.host]; ok && r.start.Sub(p.end) < minDelay {
			t.Errorf("%s%s began %v after %s ended, < the host's delay %v", r.host, r.path, r.start.Sub(p.end), p.path, minDelay)
		}
		last[r.host] = r
	}

	sm := st.Sitemap
	t.Logf("sitemap stats %+v", sm)
	// Fetched as sitemaps: old, new, x-host, s.xml, chain0–5, b.test/sitemap.xml.
	if sm.Fetches != 11 || sm.Redirects != 7 || sm.RedirectLimit != 1 || sm.OutOfPath != 2 {
		t.Errorf("sitemap stats %+v: want 11 fetches, 7 redirects followed, 1 over the limit, 2 out of path (old/p2, other/o)", sm)
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.URL == "http://a.test/chain5.xml" {
			if level, hops := sitemapOfNote(e.Note); level != smRoot || hops != 5 || queueKey(queuedForm(e)) != e.URL+markSitemap+"-r5" {
				t.Errorf("chain5 logged with note %q (level %d, %d hops), queued as %s", e.Note, level, hops, queuedForm(e))
			}
		}
	}
}
