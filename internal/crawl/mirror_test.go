package crawl

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/fixture"
	"github.com/sextant-crawler/sextant/simweb"
)

// mirrorLinkAttrs are the (element, attribute) pairs whose URL a crawler
// follows (simweb.Rules: the contract the extractor implements).
var mirrorLinkAttrs = map[string][]string{
	"a": {"href"}, "area": {"href"}, "link": {"href"}, "img": {"src", "srcset"},
	"script": {"src"}, "iframe": {"src"}, "frame": {"src"}, "embed": {"src"},
	"source": {"src", "srcset"}, "audio": {"src"}, "video": {"src"}, "form": {"action"},
}

// mirrorKey is the comparison key of an http URL: host, decoded path and
// raw query (fragment dropped), computed with net/url only.
func mirrorKey(u *url.URL) string {
	p := u.Path
	if p == "" {
		p = "/"
	}
	k := strings.ToLower(u.Host) + p
	if u.RawQuery != "" || u.ForceQuery {
		// WHATWG percent-encodes these in the query of special URLs;
		// net/url keeps them as written.
		var q strings.Builder
		for _, c := range []byte(u.RawQuery) {
			if c >= 0x80 || strings.IndexByte("\"' <>", c) >= 0 {
				fmt.Fprintf(&q, "%%%02X", c)
			} else {
				q.WriteByte(c)
			}
		}
		k += "?" + q.String()
	}
	return k
}

// mirrorFile maps a URL path to the file simweb's directory mode serves,
// or "" if it answers 404.
func mirrorFile(root, host, p string) string {
	f := filepath.Join(root, host, filepath.FromSlash(path.Clean("/"+p)))
	st, err := os.Stat(f)
	if err != nil {
		return ""
	}
	if st.IsDir() {
		for _, ix := range []string{"index.html", "index.xhtml", "index.htm"} {
			if _, err := os.Stat(filepath.Join(f, ix)); err == nil {
				return filepath.Join(f, ix)
			}
		}
		return ""
	}
	return f
}

// mirrorLinks returns the links of an HTML file resolved against base
// (honouring the first <base href>).
func mirrorLinks(t *testing.T, file string, base *url.URL) []*url.URL {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	z := html.NewTokenizer(fh)
	var raws []string
	baseSet := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if tok.Data == "base" && !baseSet {
			for _, a := range tok.Attr {
				if a.Key == "href" {
					if b, err := base.Parse(strings.TrimSpace(a.Val)); err == nil {
						base, baseSet = b, true
					}
				}
			}
		}
		for _, want := range mirrorLinkAttrs[tok.Data] {
			for _, a := range tok.Attr {
				if a.Key != want {
					continue
				}
				if want == "srcset" {
					for _, c := range strings.Split(a.Val, ",") {
						if fs := strings.Fields(c); len(fs) > 0 {
							raws = append(raws, fs[0])
						}
					}
					continue
				}
				raws = append(raws, strings.TrimSpace(a.Val))
			}
		}
	}
	var out []*url.URL
	for _, r := range raws {
		u, err := base.Parse(r)
		if err != nil && strings.Contains(err.Error(), "first path segment in URL cannot contain colon") {
			// "User_talk:X.html": '_' cannot be in a scheme, so WHATWG
			// reads a relative path; net/url refuses a colon in the
			// first segment.
			u, err = base.Parse("./" + r)
		}
		if err == nil {
			out = append(out, u)
		}
	}
	return out
}

// mirrorExpected computes, independently of the crawler, the keys of the
// URLs reachable from http://host/ on the mirror (scope: that host, http).
func mirrorExpected(t *testing.T, root, host string, maxDepth int) map[string]bool {
	home, _ := url.Parse("http://" + host + "/")
	seen := map[string]bool{mirrorKey(home): true}
	queue := []*url.URL{home}
	depth := map[*url.URL]int{home: 0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if maxDepth > 0 && depth[u] >= maxDepth {
			continue // its links would be too deep
		}
		var links []*url.URL
		if st, err := os.Stat(filepath.Join(root, host, filepath.FromSlash(path.Clean("/"+u.Path)))); err == nil && st.IsDir() && !strings.HasSuffix(u.Path, "/") {
			// directory mode redirects to the path with a slash (query
			// dropped); the crawler takes the target as a link.
			links = append(links, &url.URL{Scheme: "http", Host: u.Host, Path: u.Path + "/"})
		} else if f := mirrorFile(root, host, u.Path); f != "" {
			ct := simweb.ContentTypeOf(f)
			if strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "application/xhtml+xml") {
				links = mirrorLinks(t, f, u)
			}
		}
		for _, l := range links {
			if l.Scheme != "http" || !strings.EqualFold(l.Hostname(), host) {
				continue
			}
			l.Fragment, l.RawFragment = "", ""
			if k := mirrorKey(l); !seen[k] {
				seen[k] = true
				queue = append(queue, l)
				depth[l] = depth[u] + 1
			}
		}
	}
	return seen
}

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
	return mirrorExpected(t, root, hosts[0], maxDepth), hosts[0]
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
		got[mirrorKey(u)] = true
	}
	t.Logf("max depth %d: expected %d URLs, fetched %d (ok %d, http-error %d, %d links too deep), %.0f pages/s",
		maxDepth, len(want), len(got), st.FetchOK, st.FetchHTTPErr, st.LinksTooDeep, st.PagesPerSecond())
	return want, got
}

func compareMirror(t *testing.T, want, got map[string]bool) {
	t.Helper()
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("%d reachable URLs not fetched, e.g. %q", len(missing), missing[:min(10, len(missing))])
	}
	if len(extra) > 0 {
		t.Errorf("%d fetched URLs not reachable, e.g. %q", len(extra), extra[:min(10, len(extra))])
	}
}
