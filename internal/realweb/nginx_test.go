package realweb_test

import (
	"context"
	"crypto/tls"
	"net/netip"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/fixture"
	"github.com/sextant-crawler/sextant/internal/realweb"
)

// wantTLSProtocol is the protocol the fetcher negotiates with nginx's TLS
// listeners, which offer h2 and http/1.1 by ALPN: every https request in
// nginx's access log is checked against it, so the test proves h2 against
// a real server (it was "HTTP/1.1" before the fetcher spoke h2).
const wantTLSProtocol = "HTTP/2.0"

// TestNginxMirrorCrawl serves the ConTeXt wiki mirror (testdata/sites) with
// Debian's nginx — TLS with HTTP/2 offered, plain HTTP, on 127.0.0.1 and
// [::1] — crawls it with Sextant and checks the fetched set against
// Reachable's independent reference: 0 missing, 0 extra, 0 fetched twice.
//
//   - https://wiki.contextgarden.net/ through [::1], every name resolved
//     to nginx's TLS port, the CA trusted through fetcher.Options.TLSConfig:
//     10,315 URLs (nofollow obeyed; 10,347 with --nofollow ignore), of
//     which 19 are http ones that the pages name absolutely (sent to the
//     TLS port, nginx answers 400, so they are leaves). The pages' absolute https links to their own host — the
//     rel=canonical of every page, index.php history and diff links —
//     are on the crawl's origin here.
//   - http://wiki.contextgarden.net/ through 127.0.0.1, http links only,
//     two hops deep.
//
// The "10,286 URLs" and the 7,314 of internal/crawl's simweb mirror
// test: the difference is the scheme. The pages link to their own host
// over https absolutely (every page's rel=canonical, index.php history,
// diff and edit links: 3,040 distinct URLs). The simweb test serves and
// follows http only (an https URL goes to an origin simweb does not serve:
// robots.txt unreachable, never fetched): 7,314. Served over TLS, as here,
// the crawl's origin is https and those links are on it: 10,347 (an http
// seed following both schemes would reach 7,314 + 3,040 = 10,354). The
// issue's 10,286 is that figure from an older crawler (its filters or its
// URL code then); the current crawler, with --scope host's defaults
// (--max-repeated-segments 3 included), fetches exactly 10,347 when it
// ignores nofollow. Obeying rel=nofollow and robots <meta> (the default;
// MediaWiki marks some links to its own pages nofollow) the sets are
// 10,315 here and 7,283 in the simweb test.
func TestNginxMirrorCrawl(t *testing.T) {
	root := fixture.Sites(t)
	host := fixture.WikiHost
	n := realweb.StartNginxT(t, realweb.NginxOptions{Root: root})

	t.Run("https-h2-ipv6", func(t *testing.T) {
		seed := "https://" + host + "/"
		want, err := realweb.Reachable(root, realweb.ReachOptions{Seed: seed, Schemes: []string{"http", "https"}, Flavor: realweb.NginxStatic})
		if err != nil {
			t.Fatal(err)
		}
		before := requestCount(t, n)
		got := crawlNginx(t, n, n.HTTPS6, seed, []string{"http", "https"}, 0)
		checkSets(t, want, got)
		reqs := requests(t, n)[before:]
		checkRequests(t, reqs, got)
		byProto := map[string]int{}
		conns := map[int64]bool{}
		for _, r := range reqs {
			if r.Scheme == "https" {
				byProto[r.Protocol]++
				conns[r.Conn] = true
			}
		}
		t.Logf("https requests by protocol %v over %d connections", byProto, len(conns))
		if len(byProto) != 1 || byProto[wantTLSProtocol] == 0 {
			t.Errorf("https requests by protocol %v, want all %s (wantTLSProtocol)", byProto, wantTLSProtocol)
		}
	})

	t.Run("http-ipv4-depth2", func(t *testing.T) {
		seed := "http://" + host + "/"
		want, err := realweb.Reachable(root, realweb.ReachOptions{Seed: seed, MaxDepth: 2, Flavor: realweb.NginxStatic})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 100 {
			t.Fatalf("depth 2 reaches %d URLs: too few to test anything", len(want))
		}
		before := requestCount(t, n)
		got := crawlNginx(t, n, n.HTTP, seed, []string{"http"}, 2)
		checkSets(t, want, got)
		reqs := requests(t, n)[before:]
		checkRequests(t, reqs, got)
		for _, r := range reqs {
			if r.Scheme != "http" || r.Protocol != "HTTP/1.1" {
				t.Fatalf("plain-HTTP crawl: nginx logged %+v", r)
			}
		}
	})
}

func requests(t *testing.T, n *realweb.Nginx) []realweb.Request {
	t.Helper()
	rs, err := n.Settled(0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func requestCount(t *testing.T, n *realweb.Nginx) int { return len(requests(t, n)) }

// crawlNginx crawls from seed with every site name resolved to addr and
// returns the Keys of the fetched URLs (robots.txt requests excluded),
// failing the test on a URL fetched twice.
func crawlNginx(t *testing.T, n *realweb.Nginx, addr netip.AddrPort, seed string, schemes []string, maxDepth int) map[string]bool {
	t.Helper()
	lf, err := crawl.NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSameHost, Schemes: schemes, MaxRepeatedSegments: -1}, []string{seed})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	node, err := crawl.Open(crawl.Options{
		DataDir: dir, Workers: 16,
		Fetcher: fetcher.Options{AllowPrivate: true, Resolve: n.Resolve(addr), TLSConfig: &tls.Config{RootCAs: n.RootCAs},
			FetchTimeout: 10 * time.Second, DialTimeout: 2 * time.Second},
		Frontier: frontier.Options{Factor: 0, FactorSet: true, MinDelay: 0, MaxDelay: 20 * time.Millisecond,
			FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 50 * time.Millisecond},
		DUEFlushInterval: 50 * time.Millisecond,
		MaxPagesPerHost:  100000,
		MaxDepth:         maxDepth,
		Filter:           lf,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	if err := node.Seed(ctx, []string{seed}); err != nil {
		t.Fatal(err)
	}
	if err := node.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := node.Stats()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("crawl did not finish: %+v", st)
	}
	es, err := crawl.ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	got, count := map[string]bool{}, map[string]int{}
	var twice []string
	for _, e := range es {
		if e.Outcome == crawl.OutcomeRobots {
			continue
		}
		u, err := url.Parse(e.URL)
		if err != nil {
			t.Fatalf("crawl log URL %q: %v", e.URL, err)
		}
		k := realweb.Key(u)
		if count[k]++; count[k] == 2 {
			twice = append(twice, k)
		}
		got[k] = true
	}
	if len(twice) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %q", len(twice), twice[:min(5, len(twice))])
	}
	el := time.Since(start)
	t.Logf("%s via %s: fetched %d URLs (ok %d, http-error %d, error %d) in %v, %.0f pages/s",
		seed, addr, len(got), st.FetchOK, st.FetchHTTPErr, st.FetchErr, el.Round(time.Millisecond), float64(len(es))/el.Seconds())
	return got
}

func checkSets(t *testing.T, want, got map[string]bool) {
	t.Helper()
	missing, extra := realweb.Compare(want, got)
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("%d of %d reachable URLs not fetched, e.g. %q", len(missing), len(want), missing[:min(10, len(missing))])
	}
	if len(extra) > 0 {
		t.Errorf("%d fetched URLs not reachable, e.g. %q", len(extra), extra[:min(10, len(extra))])
	}
}

// checkRequests: nginx itself answered every fetched URL once (a crawl
// that went elsewhere, or fetched twice behind the log's back, shows here).
func checkRequests(t *testing.T, reqs []realweb.Request, got map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range reqs {
		if strings.HasSuffix(r.URI, "/robots.txt") && !got[r.Scheme+"://"+r.Host+"/robots.txt"] {
			continue
		}
		u, err := url.Parse(r.Scheme + "://" + r.Host + r.URI)
		if err != nil {
			t.Errorf("access log URI %q: %v", r.URI, err)
			continue
		}
		seen[realweb.Key(u)]++
	}
	var missing, twice []string
	for k := range got {
		switch seen[k] {
		case 0:
			missing = append(missing, k)
		case 1:
		default:
			twice = append(twice, k)
		}
	}
	if len(missing) > 0 || len(twice) > 0 || len(seen) != len(got) {
		sort.Strings(missing)
		sort.Strings(twice)
		t.Errorf("nginx's access log: %d distinct URLs for %d fetched; not requested %q; requested twice %q",
			len(seen), len(got), missing[:min(5, len(missing))], twice[:min(5, len(twice))])
	}
}
