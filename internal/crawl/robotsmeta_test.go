package crawl

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// robotsSite is a small site with every kind of robots directive a page
// can carry. Each page that carries one links to a leaf reached from
// nowhere else, so the fetched set shows which directives were obeyed.
var robotsSite = map[string]struct {
	ct, body string
	header   [][2]string
}{
	"/": {ct: "text/html", body: `<a href="/meta-nofollow">`, header: nil},
	// The meta comes after the link: it still applies to it.
	"/meta-nofollow": {ct: "text/html", body: `<body><a href="/m1">m1</a><meta name="robots" content="nofollow"></body>`},
	"/meta-none":     {ct: "text/html", body: `<head><META NAME="Robots" CONTENT="None"></head><a href="/m2">`},
	"/meta-sextant":  {ct: "text/html", body: `<head><meta name="sextant" content="noarchive, nofollow"></head><a href="/m3">`},
	"/meta-mybot":    {ct: "text/html", body: `<head><meta name="mybot" content="nofollow"></head><a href="/m4">`},
	"/xrt":           {ct: "text/html", body: `<a href="/x1">`, header: [][2]string{{"X-Robots-Tag", "nofollow"}}},
	"/xrt-ours":      {ct: "text/html", body: `<a href="/x2">`, header: [][2]string{{"X-Robots-Tag", "sextant: nofollow"}}},
	"/xrt-mybot":     {ct: "text/html", body: `<a href="/x3">`, header: [][2]string{{"X-Robots-Tag", "mybot: noindex, nofollow"}}},
	// Another crawler's directive, and one for everyone that is not ours
	// to act on: /x4 is followed.
	"/xrt-other": {ct: "text/html", body: `<a href="/x4">`, header: [][2]string{{"X-Robots-Tag", "otherbot: nofollow"}, {"X-Robots-Tag", "noarchive"}}},
	"/rel": {ct: "text/html", body: `<a href="/r1" rel="nofollow">1</a><a rel="noopener NoFollow" href="/r2">2</a>` +
		`<a href="/r3" rel="ugc">3</a><a href="/r4" rel="sponsored">4</a><a href="/r5" rel="nofollow">5</a><a href="/r5">5 again</a>`},
	"/canon": {ct: "text/html", body: `<head><link rel="canonical" href="/canonical-target"></head>`},
	// The Link header's canonical wins over the page's; the <link> is
	// still followed, the header's is not a link.
	"/canon-hdr": {ct: "text/html", body: `<link rel="canonical" href="/canon-html">`, header: [][2]string{{"Link", `</hdr-target>; rel="canonical"`}}},
	"/noindex":   {ct: "text/html", body: `<meta name="robots" content="noindex"><a href="/n1">`},
	"/doc.pdf":   {ct: "application/pdf", body: "%PDF-1.4", header: [][2]string{{"X-Robots-Tag", "noindex"}, {"Link", `</doc.html>; rel=canonical`}}},
	// XHTML: read with HTML rules the self-closing script would swallow the
	// meta (and the links), so /xh1 would be lost either way, but s.js
	// fetched under obey.
	"/page.xhtml": {ct: "application/xhtml+xml", body: `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><script src="/s.js"/>` +
		`<meta name="robots" content="nofollow"/></head><body><a href="/xh1">x</a></body></html>`},
	"/page2.xhtml": {ct: "application/xhtml+xml", body: `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><script src="/s2.js"/>` +
		`</head><body><a href="/xh2" rel="nofollow">x</a><a href="/xh3">y</a></body></html>`},
}

func init() {
	var links strings.Builder
	for p := range robotsSite {
		if p != "/" {
			fmt.Fprintf(&links, `<a href="%s">%s</a>`, p, p)
		}
	}
	root := robotsSite["/"]
	root.body = links.String()
	robotsSite["/"] = root
}

// TestRobotsDirectivesCrawl crawls robotsSite under --nofollow obey with
// the default User-Agent, with a custom one ("mybot/1.0": its robots
// token is mybot, so <meta name=mybot> and "X-Robots-Tag: mybot: ..." are
// its own and sextant's are another crawler's), and under --nofollow
// ignore: the exact fetched set each time, the robots= and canonical=
// fields of crawl.log, and the counters.
func TestRobotsDirectivesCrawl(t *testing.T) {
	pages := slices.Sorted(maps.Keys(robotsSite))
	leaves := []string{"/m1", "/m2", "/m3", "/m4", "/x1", "/x2", "/x3", "/x4", "/r1", "/r2", "/r3", "/r4", "/r5",
		"/canonical-target", "/canon-html", "/n1", "/s.js", "/s2.js", "/xh1", "/xh2", "/xh3"}
	all := append(slices.Clone(pages), leaves...)
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(p string) bool { return slices.Contains(drop, p) })
	}
	for _, tc := range []struct {
		name, userAgent, nofollow string
		fetched                   []string
		robots                    map[string]string // crawl.log robots= per page with one
		pagesNoFollow, noIndex    uint64
		linksNoFollow             uint64
	}{
		{"obey", "", NoFollowObey,
			without("/m1", "/m2", "/m3", "/x1", "/x2", "/r1", "/r2", "/s.js", "/xh1", "/xh2"),
			map[string]string{"/meta-nofollow": "nofollow", "/meta-none": "noindex,nofollow", "/meta-sextant": "nofollow",
				"/xrt": "nofollow", "/xrt-ours": "nofollow", "/noindex": "noindex", "/doc.pdf": "noindex", "/page.xhtml": "nofollow"},
			6, 3, 10},
		{"custom user agent", "mybot/1.0 (+http://example.test/bot)", "",
			without("/m1", "/m2", "/m4", "/x1", "/x3", "/r1", "/r2", "/s.js", "/xh1", "/xh2"),
			map[string]string{"/meta-nofollow": "nofollow", "/meta-none": "noindex,nofollow", "/meta-mybot": "nofollow",
				"/xrt": "nofollow", "/xrt-mybot": "noindex,nofollow", "/noindex": "noindex", "/doc.pdf": "noindex", "/page.xhtml": "nofollow"},
			6, 4, 10},
		{"ignore", "", NoFollowIgnore, all,
			map[string]string{"/meta-nofollow": "nofollow", "/meta-none": "noindex,nofollow", "/meta-sextant": "nofollow",
				"/xrt": "nofollow", "/xrt-ours": "nofollow", "/noindex": "noindex", "/doc.pdf": "noindex", "/page.xhtml": "nofollow"},
			6, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, es, st, base := crawlRobotsSite(t, tc.userAgent, tc.nofollow)
			for _, p := range tc.fetched {
				if hits[p] != 1 {
					t.Errorf("%s fetched %d times, want 1", p, hits[p])
				}
			}
			delete(hits, "/robots.txt")
			got := slices.Sorted(maps.Keys(hits))
			if want := slices.Sorted(slices.Values(tc.fetched)); !slices.Equal(got, want) {
				t.Errorf("fetched %q\nwant    %q", got, want)
			}
			byPath := map[string]LogEntry{}
			for _, e := range es {
				byPath[strings.TrimPrefix(e.URL, base)] = e
			}
			for _, p := range pages {
				e := byPath[p]
				if e.Robots != tc.robots[p] {
					t.Errorf("%s: crawl.log robots=%q, want %q", p, e.Robots, tc.robots[p])
				}
			}
			for p, want := range map[string]string{"/canon": "/canonical-target", "/canon-hdr": "/hdr-target", "/doc.pdf": "/doc.html", "/": ""} {
				if want != "" {
					want = base + want
				}
				if got := byPath[p].Canonical; got != want {
					t.Errorf("%s: crawl.log canonical=%q, want %q", p, got, want)
				}
			}
			// LINKS counts the links followed.
			if got, want := byPath["/meta-nofollow"].Links, map[bool]int{true: 0, false: 1}[tc.nofollow != NoFollowIgnore]; got != want {
				t.Errorf("/meta-nofollow: %d links logged, want %d", got, want)
			}
			if st.PagesNoFollow != tc.pagesNoFollow || st.PagesNoIndex != tc.noIndex || st.LinksNoFollow != tc.linksNoFollow {
				t.Errorf("pages nofollow %d, noindex %d, links not followed %d; want %d, %d, %d",
					st.PagesNoFollow, st.PagesNoIndex, st.LinksNoFollow, tc.pagesNoFollow, tc.noIndex, tc.linksNoFollow)
			}
		})
	}
}

// crawlRobotsSite serves robotsSite on loopback, crawls it to the end
// and returns the requests per path, the crawl log, the node's Stats and
// the site's URL prefix.
func crawlRobotsSite(t *testing.T, userAgent, nofollow string) (map[string]int, []LogEntry, Stats, string) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		p, ok := robotsSite[r.URL.Path]
		switch {
		case ok:
			for _, h := range p.header {
				w.Header().Add(h[0], h[1])
			}
			w.Header().Set("Content-Type", p.ct)
			w.Write([]byte(p.body))
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("leaf " + r.URL.Path))
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir, Workers: 2, NoFollow: nofollow,
		Sitemaps:         SitemapsOff, // the site's exact set is under test, not the /sitemap.xml probe
		Fetcher:          fetcher.Options{AllowPrivate: true, UserAgent: userAgent},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 20 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Seed(ctx, []string{srv.URL + "/"}); err != nil {
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
		t.Fatal("crawl did not finish")
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(hits), es, st, srv.URL
}

func TestNoFollowOptionValidated(t *testing.T) {
	o := Options{DataDir: t.TempDir(), NoFollow: "sometimes"}
	o.EnsureDefaults()
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "NoFollow") {
		t.Errorf("Validate = %v", err)
	}
	o.NoFollow = ""
	o.EnsureDefaults()
	if o.NoFollow != NoFollowObey || o.Validate() != nil {
		t.Errorf("default NoFollow %q", o.NoFollow)
	}
	// The robots <meta> token follows the User-Agent.
	o.Fetcher.UserAgent = "MyBot/2 (+http://example.test/)"
	if tok := o.extractOptions().RobotsToken; tok != "mybot" {
		t.Errorf("robots token %q", tok)
	}
}

// applyRobots drops only links extracted from the page: URLs another
// reader put in w.links (a sitemap's entries) stay, whatever the headers
// say; the directive is recorded either way.
func TestApplyRobotsDropsOnlyExtractedLinks(t *testing.T) {
	u, err := urlnorm.Parse("http://a.test/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	resp := &fetcher.Response{Header: http.Header{"X-Robots-Tag": {"noindex, nofollow"}}}
	for _, extracted := range []bool{false, true} {
		w := &worker{n: &Node{opts: Options{NoFollow: NoFollowObey}}, token: "sextant", pageOK: extracted,
			links: []*urlnorm.URL{u, u}}
		var e LogEntry
		p := w.applyRobots(&e, u, resp)
		want := map[bool]int{false: 2, true: 0}[extracted]
		if len(w.links) != want || p.dropped != 2-want || e.Robots != "noindex,nofollow" {
			t.Errorf("extracted %v: %d links left, %d dropped, robots %q", extracted, len(w.links), p.dropped, e.Robots)
		}
	}
}
