package crawl

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/fixture"
	"github.com/sextant-crawler/sextant/internal/realweb"
	"github.com/sextant-crawler/sextant/simweb"
)

// The crawl of a real mirror served by simweb's directory mode fetches
// exactly the pages reachable from its home page.
func TestMirrorCrawlFetchesReachableSet(t *testing.T) {
	want, got := mirrorCrawl(t, 0)
	compareMirror(t, want, got)
}

// TestMirrorCrawlMaxDepth: with Options.MaxDepth the crawl fetches exactly
// the pages within that many hops of the home page (one host: the crawl is
// breadth-first, so the depth it carries is the shortest distance).
func TestMirrorCrawlMaxDepth(t *testing.T) {
	all, _ := mirrorWant(t, 0)
	for _, d := range []int{1, 2} {
		want, got := mirrorCrawl(t, d)
		if len(want) >= len(all) || len(want) < 2 {
			t.Fatalf("depth %d: %d of %d URLs: the site does not exercise the depth limit", d, len(want), len(all))
		}
		compareMirror(t, want, got)
	}
}

// mirrorWant computes the expected set from the home page of the mirror's
// first site (testdata/sites, unpacked by internal/fixture, which fails the
// test if the mirror is missing).
func mirrorWant(t *testing.T, maxDepth int) (map[string]bool, string) {
	t.Helper()
	root := fixture.Sites(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, e := range entries {
		if e.IsDir() {
			hosts = append(hosts, e.Name())
		}
	}
	if len(hosts) == 0 {
		t.Fatalf("the mirror in %s has no sites", root)
	}
	sort.Strings(hosts)
	// The reference follows http links only: the pages' https links to
	// their own host go to an origin simweb does not serve (robots.txt
	// unreachable, never fetched). internal/realweb's nginx test serves
	// both and follows both.
	want, err := realweb.Reachable(root, realweb.ReachOptions{Seed: "http://" + hosts[0] + "/", MaxDepth: maxDepth})
	if err != nil {
		t.Fatal(err)
	}
	return want, hosts[0]
}

// mirrorCrawl crawls the mirror's first site from its home page with
// MaxDepth maxDepth and returns the expected and the fetched sets.
func mirrorCrawl(t *testing.T, maxDepth int) (want, got map[string]bool) {
	t.Helper()
	root := fixture.Sites(t) // the same copy as mirrorWant's
	want, host := mirrorWant(t, maxDepth)
	srv, err := simweb.StartDir(root, simweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if hosts := srv.DirHosts(); len(hosts) == 0 || !slices.Contains(hosts, host) {
		t.Fatalf("simweb serves %v, want %s among them", hosts, host)
	}

	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{host}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir, Workers: 8,
		Fetcher:          fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext, TLSConfig: srv.TLSClientConfig(), FetchTimeout: 5 * time.Second, DialTimeout: time.Second},
		Frontier:         frontier.Options{MinDelay: 0, Factor: 1, MaxDelay: 20 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 50 * time.Millisecond},
		DUEFlushInterval: 50 * time.Millisecond,
		MaxPagesPerHost:  100000,
		MaxDepth:         maxDepth,
		Filter:           lf,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, []string{"http://" + host + "/"}, 3*time.Minute)
	fetched, dups := fetchedURLs(t, filepath.Join(dir, "crawl.log"))
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	got = map[string]bool{}
	for _, s := range fetched {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("crawl log URL %q: %v", s, err)
		}
		if u.Scheme != "http" {
			t.Errorf("fetched a non-http URL %s", s)
			continue
		}
		got[realweb.Key(u)] = true
	}
	t.Logf("max depth %d: expected %d URLs, fetched %d (ok %d, http-error %d, %d links too deep), %.0f pages/s",
		maxDepth, len(want), len(got), st.FetchOK, st.FetchHTTPErr, st.LinksTooDeep, st.PagesPerSecond())
	return want, got
}

func compareMirror(t *testing.T, want, got map[string]bool) {
	t.Helper()
	missing, extra := realweb.Compare(want, got)
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("%d reachable URLs not fetched, e.g. %q", len(missing), missing[:min(10, len(missing))])
	}
	if len(extra) > 0 {
		t.Errorf("%d fetched URLs not reachable, e.g. %q", len(extra), extra[:min(10, len(extra))])
	}
}
