package simweb

import (
	"bytes"
	"strconv"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"github.com/temoto/robotstxt"

	"github.com/sextant-crawler/sextant/sitemap"
)

// Sitemaps (Config.SitemapShare): some Normal hosts serve sitemaps in one
// of three layouts (hostInfo.sm):
//
//	smPlain: no Sitemap: line; /sitemap.xml, found by probing it;
//	smIndex: robots.txt names /sitemap_index.xml, which lists two gzip
//	         urlsets, a text sitemap, a nested index (fetched, but its
//	         child is one level too deep) and another host's sitemap
//	         (against the location rule);
//	smLines: robots.txt names /sitemap.xml and /sitemap-pages.txt.
//
// They list a third of the articles each, "sitemap-only" pages
// /only/{a}.html (a < m) that no link reaches and that link on to
// /only/{a+m}.html, and entries a correct crawler drops: another host's
// page, an out-of-scope URL and a URL longer than 2048 bytes.
// /only/{2m}.html is listed only by the too-deep sitemap and, on the
// first smLines host, after the protocol's 50,000 URLs of its text
// sitemap.
const (
	smNone uint8 = iota
	smPlain
	smIndex
	smLines
)

// onlyOf is m, the number of sitemap-only pages listed on a host of n
// articles.
func onlyOf(n int32) int64 { return int64(2 + n/10) }

// assignSitemaps picks the sitemap hosts among the Normal ones: each with
// probability SitemapShare, at least one, layouts in turn.
func (w *Web) assignSitemaps() {
	if w.cfg.SitemapShare == 0 {
		return
	}
	k, first := 0, -1
	for h := range w.hosts {
		if w.hosts[h].kind != Normal {
			continue
		}
		if first < 0 {
			first = h
		}
		if float64(hash3(w.cfg.Seed, uint64(h), 0x517e)>>11)/(1<<53) < w.cfg.SitemapShare {
			w.hosts[h].sm = smPlain + uint8(k%3)
			k++
		}
	}
	if k == 0 && first >= 0 {
		w.hosts[first].sm = smPlain
	}
	w.bigSitemap = -1
	for h := range w.hosts {
		if w.hosts[h].sm == smLines {
			w.bigSitemap = int32(h)
			break
		}
	}
}

// sitemapMaxURLs is the protocol's limit of URLs per sitemap file.
const sitemapMaxURLs = 50_000

// SitemapHosts lists the hosts that serve sitemaps (Config.SitemapShare).
func (w *Web) SitemapHosts() []int {
	var hs []int
	for h := range w.hosts {
		if w.hosts[h].sm != smNone {
			hs = append(hs, h)
		}
	}
	return hs
}

// parseSitemap maps the sitemap paths of a sitemap host; ok is false for
// every other path.
func (w *Web) parseSitemap(t target, hi hostInfo, path string) (target, bool) {
	t.kind = pkNone
	switch {
	case path == "/sitemap.xml" && hi.sm != smIndex:
		t.kind = pkSitemap
	case path == "/sitemap-pages.txt" && hi.sm != smPlain:
		t.kind = pkSitemapTxt
	case path == "/sitemap_index.xml" && hi.sm == smIndex:
		t.kind = pkSitemapIndex
	case (path == "/sitemap-0.xml.gz" || path == "/sitemap-1.xml.gz") && hi.sm == smIndex:
		t.kind, t.a = pkSitemapGz, int64(path[9]-'0')
	case path == "/sitemap-nested.xml" && hi.sm == smIndex:
		t.kind = pkSitemapNested
	case path == "/sitemap-deep.txt" && hi.sm == smIndex:
		t.kind = pkSitemapDeep
	case strings.HasPrefix(path, "/only/"):
		v, ok := numThen(path[len("/only/"):], ".html")
		return bounded(t, pkOnly, v, ok && v <= 2*onlyOf(hi.n)), ok && v <= 2*onlyOf(hi.n)
	}
	return t, t.kind != pkNone
}

// sitemapPath is the path of a sitemap kind (appendPath's part for them).
func sitemapPath(b []byte, t target) []byte {
	switch t.kind {
	case pkSitemap:
		return append(b, "/sitemap.xml"...)
	case pkSitemapTxt:
		return append(b, "/sitemap-pages.txt"...)
	case pkSitemapIndex:
		return append(b, "/sitemap_index.xml"...)
	case pkSitemapGz:
		return append(strconv.AppendInt(append(b, "/sitemap-"...), t.a, 10), ".xml.gz"...)
	case pkSitemapNested:
		return append(b, "/sitemap-nested.xml"...)
	case pkSitemapDeep:
		return append(b, "/sitemap-deep.txt"...)
	case pkOnly:
		return append(strconv.AppendInt(append(b, "/only/"...), t.a, 10), ".html"...)
	}
	return append(b, "/404"...)
}

// robotsSitemapLines appends the Sitemap: lines of host h's robots.txt.
func (g *gen) robotsSitemapLines() {
	h := g.self.host
	switch g.hi.sm {
	case smIndex:
		g.str("\nSitemap: " + g.w.url(target{host: h, kind: pkSitemapIndex}) + "\n")
	case smLines:
		g.str("\nSitemap: " + g.w.url(target{host: h, kind: pkSitemap}) + "\n")
		g.str("sitemap:  " + g.w.url(target{host: h, kind: pkSitemapTxt}) + "\n")
	}
}

// sitemapFile writes the sitemap t.
func (g *gen) sitemapFile() {
	t, h, n := g.self, g.self.host, int64(g.hi.n)
	m := onlyOf(g.hi.n)
	switch t.kind {
	case pkSitemap:
		g.urlset(func() {
			g.articleEntries(0)
			g.onlyEntries(0, m)
			g.badEntries(true)
		})
	case pkSitemapGz:
		g.urlset(func() {
			if t.a == 0 {
				g.articleEntries(1)
			} else {
				g.onlyEntries(0, m)
			}
		})
		g.buf = gzipBytes(g.buf)
		g.ctype = "application/x-gzip"
	case pkSitemapTxt:
		g.ctype = "text/plain; charset=utf-8"
		g.str("\ufeff")
		k := 0
		for a := int64(2); a < n; a += 3 {
			g.str(g.w.url(target{host: h, kind: pkArticle, a: a}) + "\r\n")
			k++
		}
		g.badEntries(false)
		if h == g.w.bigSitemap && n > 1 {
			// Repeats fill the file to the limit; the URL after it must
			// be dropped.
			for i := k; i < sitemapMaxURLs; i++ {
				g.str(g.w.url(target{host: h, kind: pkArticle, a: 1 + int64(i)%(n-1)}) + "\n")
			}
			g.str(g.w.url(target{host: h, kind: pkOnly, a: 2 * m}) + "\n")
		}
	case pkSitemapIndex:
		g.index(target{host: h, kind: pkSitemapGz, a: 0}, target{host: h, kind: pkSitemapGz, a: 1},
			target{host: h, kind: pkSitemapTxt}, target{host: h, kind: pkSitemapNested},
			target{host: (h + 1) % int32(len(g.w.hosts)), kind: pkSitemap})
	case pkSitemapNested:
		g.index(target{host: h, kind: pkSitemapDeep})
	case pkSitemapDeep:
		g.ctype = "text/plain; charset=utf-8"
		g.str(g.w.url(target{host: h, kind: pkOnly, a: 2 * m}) + "\n")
	}
}

func (g *gen) urlset(body func()) {
	g.ctype = "application/xml"
	g.str(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	g.str(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">` + "\n")
	body()
	g.str("</urlset>\n")
}

func (g *gen) index(children ...target) {
	g.ctype = "application/xml; charset=utf-8"
	g.str(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	g.str(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, c := range children {
		g.str("  <sitemap>\n    <loc>" + g.w.url(c) + "</loc>\n    <lastmod>2026-11-0")
		g.buf = append(g.buf, byte('1'+g.r.intn(9)))
		g.str("</lastmod>\n  </sitemap>\n")
	}
	g.str("</sitemapindex>\n")
}

// entry writes one <url>; the spelling of loc varies as in real files:
// plain, CDATA, on its own lines, or with an entity for a slash.
func (g *gen) entry(loc string) {
	g.str("<url>")
	switch g.r.intn(4) {
	case 0:
		g.str("<loc>" + loc + "</loc>")
	case 1:
		g.str("<loc><![CDATA[" + loc + "]]></loc>")
	case 2:
		g.str("\n  <loc>\n    " + loc + "\n  </loc>\n  <changefreq>weekly</changefreq>\n")
	case 3:
		i := strings.LastIndexByte(loc, '/')
		g.str("<loc>" + loc[:i] + "&#x2F;" + loc[i+1:] + "</loc><priority>0." + strconv.Itoa(g.r.intn(10)) + "</priority>")
	}
	g.str("<lastmod>2026-0")
	g.buf = append(g.buf, byte('1'+g.r.intn(9)))
	g.str("-1")
	g.buf = append(g.buf, byte('0'+g.r.intn(10)))
	g.str("</lastmod></url>\n")
}

// articleEntries lists the articles a ≡ rem (mod 3), a ≥ 1.
func (g *gen) articleEntries(rem int64) {
	for a := max(rem, 3); a < int64(g.hi.n); a += 3 {
		g.entry(g.w.url(target{host: g.self.host, kind: pkArticle, a: a}))
	}
	if rem > 0 && rem < int64(g.hi.n) {
		g.entry(g.w.url(target{host: g.self.host, kind: pkArticle, a: rem}))
	}
}

func (g *gen) onlyEntries(from, to int64) {
	for a := from; a < to; a++ {
		g.entry(g.w.url(target{host: g.self.host, kind: pkOnly, a: a}))
	}
}

// badEntries lists what a correct crawler drops: another host's orphan
// (location rule), an out-of-scope URL and an over-long one.
func (g *gen) badEntries(xml bool) {
	h := g.self.host
	long := g.w.url(target{host: h, kind: pkOnly, a: 0})
	long = long[:len(long)-len(".html")] + strings.Repeat("x", 2100) + ".html"
	for _, s := range []string{g.w.url(target{host: (h + 1) % int32(len(g.w.hosts)), kind: pkOrphan}),
		"http://www.example.com/from-a-sitemap", long} {
		if xml {
			g.str("<url><loc>" + s + "</loc></url>\n")
		} else {
			g.str(s + "\n")
		}
	}
}

// onlyPage writes a sitemap-only page: it links home, to an article and
// to the next sitemap-only page that no sitemap lists.
func (g *gen) onlyPage() {
	t, h := g.self, g.self.host
	g.smallPage("Listed ", func() {
		g.a(target{host: h, kind: pkHome})
		if g.hi.n > 1 {
			g.a(target{host: h, kind: pkArticle, a: 1 + t.a%int64(g.hi.n-1)})
		}
		if t.a < onlyOf(g.hi.n) {
			g.a(target{host: h, kind: pkOnly, a: t.a + onlyOf(g.hi.n)})
		}
	})
}

// sitemapsOf is what the robots.txt rd of u's origin makes discovered as
// sitemaps (Rules.Sitemaps): its Sitemap: lines, or /sitemap.xml.
func (w *Web) sitemapsOf(rd *robotstxt.RobotsData, u *whatwg.Url) []*whatwg.Url {
	robotsURL, err := u.Parse("/robots.txt")
	if err != nil {
		return nil
	}
	var out []*whatwg.Url
	for _, s := range rd.Sitemaps {
		if v, err := robotsURL.Parse(s); err == nil {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		v, _ := u.Parse("/sitemap.xml")
		out = append(out, v)
	}
	return out
}

// readSitemap is walk for a sitemap file (sm as in the oracle's item): the
// response in g is parsed as Rules.Sitemaps says.
func (res *OracleResult) readSitemap(g *gen, s string, sm uint8) walked {
	o := walked{status: g.status, foundSm: 0}
	if g.status < 200 || g.status >= 300 {
		return o
	}
	opts := sitemap.Options{MaxURLLength: res.Rules.MaxURLLength,
		MaxTokenBytes: max(64<<10, res.Rules.MaxURLLength)}
	var found []*whatwg.Url
	r, _ := sitemap.Parse(bytes.NewReader(g.buf), s, opts, func(e sitemap.Entry) error {
		if v, err := whatwg.Parse(e.Loc); err == nil {
			found = append(found, v)
		}
		return nil
	})
	switch {
	case r.Kind != sitemap.KindIndex:
		o.found = found
	case sm == 1:
		o.found, o.foundSm = found, 2
	}
	return o
}
