package crawl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// Issue 25, defect 7: robots.txt is not forgotten on restart. A crawl
// stopped part-way and resumed asks each host for its robots.txt once in
// all (every host's rules are still fresh), and the rules still apply.
func TestRobotsCacheSurvivesRestart(t *testing.T) {
	const hosts = 6
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.Host+r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
		case "/":
			fmt.Fprintf(w, `<html>%s <a href="/a">a</a><a href="/b">b</a><a href="/private">p</a></html>`, r.Host) // distinct: not content-seen
		default:
			fmt.Fprintf(w, `<html>leaf %s%s</html>`, r.Host, r.URL.Path)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	resolve := map[string]string{}
	var seeds []string
	for i := range hosts {
		h := fmt.Sprintf("h%d.test", i)
		resolve[h] = addr
		seeds = append(seeds, "http://"+h+"/")
	}
	dir := t.TempDir()
	run := func(maxFetches uint64) {
		t.Helper()
		n, err := Open(Options{
			DataDir: dir, Workers: 4, Sitemaps: SitemapsOff, MaxFetches: maxFetches,
			Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: resolve},
			Frontier:         frontier.Options{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
			DUEFlushInterval: 20 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		crawlToEnd(t, n, seeds, time.Minute)
	}
	run(hosts) // every host's home page: every robots.txt fetched
	mu.Lock()
	for i := range hosts {
		if h := fmt.Sprintf("h%d.test", i); hits[h+"/"] != 1 || hits[h+"/robots.txt"] != 1 {
			t.Fatalf("first run: %s home %d robots %d, want 1 and 1 (hits %v)", h, hits[h+"/"], hits[h+"/robots.txt"], hits)
		}
	}
	mu.Unlock()
	run(0)
	mu.Lock()
	defer mu.Unlock()
	for i := range hosts {
		h := fmt.Sprintf("h%d.test", i)
		if hits[h+"/robots.txt"] != 1 {
			t.Errorf("%s: robots.txt asked %d times over the restart, want once", h, hits[h+"/robots.txt"])
		}
		if hits[h+"/a"] != 1 || hits[h+"/b"] != 1 || hits[h+"/private"] != 0 {
			t.Errorf("%s: /a %d, /b %d, /private %d; want 1, 1, 0", h, hits[h+"/a"], hits[h+"/b"], hits[h+"/private"])
		}
	}
}
