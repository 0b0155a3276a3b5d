package simweb

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func sitemapConfig() Config {
	c := SmallConfig()
	c.SitemapShare = 0.4
	return c
}

// With Rules.Sitemaps the oracle equals what the independent BFS crawler
// fetches over HTTP when it reads sitemaps with package sitemap, and it
// holds exactly the sitemap files and pages the layouts promise.
func TestSitemapsOracleMatchesHTTPBFS(t *testing.T) {
	defer goleak.VerifyNone(t, serverLeaksOnly()...)
	w := newWeb(t, sitemapConfig())
	res, err := w.Oracle(w.Seeds(), Rules{MaxPagesPerHost: 400, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	fetched := crawlBFS(t, w, res.Rules)
	t.Logf("oracle %d URLs (%d sitemap files, %d entries), BFS %d", res.Size(), res.SitemapFiles, res.SitemapEntries, len(fetched))
	if err := res.Check(fetched); err != nil {
		t.Fatal(err)
	}

	plain, err := w.Oracle(w.Seeds(), Rules{MaxPagesPerHost: 400})
	if err != nil {
		t.Fatal(err)
	}
	in := func(u string) bool { _, ok := res.set[u]; return ok }
	layouts := map[uint8]int{}
	for _, h := range w.SitemapHosts() {
		hi := w.hosts[h]
		layouts[hi.sm]++
		home := w.url(target{host: int32(h), kind: pkHome})
		if !in(home) {
			continue // not reached from the seeds
		}
		m := onlyOf(hi.n)
		u := func(k pageKind, a int64) string { return w.url(target{host: int32(h), kind: k, a: a}) }
		want := map[string]bool{
			u(pkOnly, 0): true, u(pkOnly, m-1): true, u(pkOnly, m): true, // listed; linked from a listed page
			u(pkOnly, 2*m):        false, // listed only by a too-deep sitemap
			u(pkSitemapDeep, 0):   false,
			u(pkSitemap, 0):       hi.sm != smIndex, // probed or named in robots.txt
			u(pkSitemapIndex, 0):  hi.sm == smIndex,
			u(pkSitemapGz, 1):     hi.sm == smIndex,
			u(pkSitemapNested, 0): hi.sm == smIndex, // fetched: only its children are too deep
			u(pkSitemapTxt, 0):    hi.sm != smPlain,
			w.url(target{host: int32((h + 1) % len(w.hosts)), kind: pkOrphan}): false, // location rule
		}
		for s, ok := range want {
			if in(s) != ok {
				t.Errorf("host %d (layout %d): fetched(%s) = %v, want %v", h, hi.sm, s, in(s), ok)
			}
			if _, linked := plain.set[s]; linked {
				t.Errorf("%s is fetched without sitemaps", s)
			}
		}
	}
	big := w.hosts[w.bigSitemap]
	r, err := w.Respond(w.HostName(int(w.bigSitemap)), "/sitemap-pages.txt")
	if err != nil || bytes.Count(r.Body, []byte("\n")) <= 50_000 || big.sm != smLines ||
		!in(w.url(target{host: w.bigSitemap, kind: pkOnly, a: 0})) ||
		in(w.url(target{host: w.bigSitemap, kind: pkOnly, a: 2 * onlyOf(big.n)})) {
		t.Errorf("the over-limit text sitemap of host %d: %v", w.bigSitemap, err)
	}
	if len(layouts) != 3 {
		t.Errorf("layouts %v: want all three", layouts)
	}
	if res.SitemapFiles < len(w.Hosts())/2 || res.Size() <= plain.Size() {
		t.Errorf("%d sitemap files; %d URLs with sitemaps, %d without", res.SitemapFiles, res.Size(), plain.Size())
	}
	// Check notices a crawler that ignores the depth bound or the location rule.
	h := w.SitemapHosts()[0]
	for _, bad := range []string{
		w.url(target{host: int32(h), kind: pkOnly, a: 2 * onlyOf(w.hosts[h].n)}),
		w.url(target{host: int32((h + 1) % len(w.hosts)), kind: pkOrphan}),
	} {
		if err := res.Check(append(slices.Clone(fetched), bad)); !errors.Is(err, ErrMismatch) {
			t.Errorf("Check(+%s) = %v", bad, err)
		}
	}
}

// SitemapShare 0 leaves the web as it was: no host serves sitemaps (the
// presets have some), and with SitemapShare > 0 the oracle without
// Rules.Sitemaps fetches the same set as on the web without sitemaps.
func TestSitemapsOffUnchanged(t *testing.T) {
	for _, c := range []Config{SmallConfig(), DefaultConfig()} {
		if w := newWeb(t, c); len(w.SitemapHosts()) == 0 {
			t.Fatalf("a preset has no sitemap hosts")
		}
		c.SitemapShare = 0
		if w := newWeb(t, c); len(w.SitemapHosts()) != 0 {
			t.Fatalf("SitemapShare 0 gives sitemap hosts %v", w.SitemapHosts())
		}
	}
	bad := SmallConfig()
	bad.SitemapShare = 1.5
	if err := bad.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "SitemapShare") {
		t.Fatalf("SitemapShare 1.5: %v", err)
	}
	a, b := newWeb(t, SmallConfig()), newWeb(t, sitemapConfig())
	ra, err1 := a.Oracle(a.Seeds(), Rules{MaxPagesPerHost: 400})
	rb, err2 := b.Oracle(b.Seeds(), Rules{MaxPagesPerHost: 400})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !slices.Equal(ra.Fetched, rb.Fetched) || fmt.Sprint(ra.ByStatus) != fmt.Sprint(rb.ByStatus) {
		t.Fatalf("sitemap hosts change the oracle without Rules.Sitemaps: %d vs %d URLs", ra.Size(), rb.Size())
	}
}
