package extract

import (
	"bytes"
	"fmt"

	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// benchPage builds a deterministic, realistic page: about 20 KB with 60
// links in the forms real pages use (relative, root-relative, dot-segments,
// protocol-relative, absolute with mixed case and default ports, query
// strings, fragments, srcset, scripts, stylesheets) amid ordinary markup.
func benchPage() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Sextant benchmark page</title>
<link rel="stylesheet" href="/static/css/site.css?v=3"><link rel="icon" href="/favicon.ico">
<link rel="canonical" href="http://www.example.com/news/2024/article.html">
<script src="/static/js/app.js" defer></script><script>window.dataLayer=[];function gtag(){dataLayer.push(arguments)}</script>
</head><body><header class="site-header"><nav><ul>`)
	forms := []string{
		"/section/%d/", "item-%d.html", "../archive/%d.html", "./tags/t%d", "//cdn.example.net/img/%d.png",
		"http://WWW.Example.com:80/news/./%d/../story.html", "https://shop.example.org/p?id=%d&ref=nav", "?page=%d",
		"#comment-%d", "/search?q=term+%d&lang=en", "story-%d.html#top", "https://Partner.example/a/b/%d",
	}
	para := `<p class="lead">Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.</p>` + "\n"
	for i := range 54 {
		f := forms[i%len(forms)]
		switch {
		case i < 12:
			fmt.Fprintf(&b, `<li class="nav-item"><a class="nav-link" href="`+f+`">Menu %d</a></li>`, i, i)
		case i%9 == 0:
			fmt.Fprintf(&b, `<img src="`+f+`" srcset="/img/%d-2x.jpg 2x, /img/%d-3x.jpg 3x" alt="photo %d" width="640" height="480">`, i, i, i, i)
		default:
			fmt.Fprintf(&b, `<div class="card"><h3><a href="`+f+`" title="Story %d">Headline number %d</a></h3>%s</div>`, i, i, i, para)
		}
		if i == 11 {
			b.WriteString(`</ul></nav></header><main id="content"><article>`)
		}
	}
	b.WriteString(`</article></main><footer><form action="/subscribe" method="post"><input name="email"></form>` +
		`<p>&copy; 2024 Example &mdash; <a href="/about">About</a> · <a href="/privacy">Privacy</a></p></footer></body></html>`)
	return []byte(b.String())
}

func countLinks(tb testing.TB, page []byte) (links, dups int) {
	e, _ := New(Options{})
	res, err := e.Extract(bytes.NewReader(page), mustURL(tb, "http://www.example.com/news/2024/article.html"), "text/html", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return res.Links, res.Duplicates
}

func TestBenchPageShape(t *testing.T) {
	p := benchPage()
	links, dups := countLinks(t, p)
	t.Logf("bench page: %d bytes, %d distinct links, %d duplicates", len(p), links, dups)
	if len(p) < 15000 || len(p) > 25000 || links+dups < 55 || links+dups > 70 {
		t.Errorf("bench page drifted from ~20 KB / ~60 links: %d bytes, %d links", len(p), links+dups)
	}
}

// tokenizeOnly is the ceiling: a bare x/net/html tokenizer loop.
func tokenizeOnly(page []byte) {
	z := html.NewTokenizer(bytes.NewReader(page))
	for z.Next() != html.ErrorToken {
	}
}

// BenchmarkExtract reports extraction throughput and the ratio of a bare
// tokenizer loop's time to the extractor's on the same page (1.0 =
// extraction costs nothing beyond tokenising). The two run interleaved,
// page by page, so machine load affects both alike; ns/op covers both.
func BenchmarkExtract(b *testing.B) {
	page := benchPage()
	base := mustURL(b, "http://www.example.com/news/2024/article.html")
	e, _ := New(Options{})
	links := 0
	var ext, tok time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := e.Extract(bytes.NewReader(page), base, "text/html", func(Link) {})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		tokenizeOnly(page)
		tok += time.Since(t1)
		ext += t1.Sub(t0)
		links += res.Links + res.Duplicates
	}
	mb := float64(len(page)) * float64(b.N) / 1e6
	b.ReportMetric(float64(links)/ext.Seconds(), "links/s")
	b.ReportMetric(mb/ext.Seconds(), "MB/s-extract")
	b.ReportMetric(mb/tok.Seconds(), "MB/s-tokenize-only")
	b.ReportMetric(tok.Seconds()/ext.Seconds(), "ratio-vs-tokenize")
}

// BenchmarkExtractAfterLargePage is BenchmarkExtract's page extracted by
// an Extractor that once read a page of 4,000 distinct links: the
// document-seen map must not make every later page pay for that one
// (Extractor.resetSeen). Compare its ns/op with BenchmarkExtract's.
func BenchmarkExtractAfterLargePage(b *testing.B) {
	var big strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&big, `<a href="/p%d">x</a>`, i)
	}
	page := benchPage()
	base := mustURL(b, "http://www.example.com/news/2024/article.html")
	e, _ := New(Options{})
	if _, err := e.Extract(strings.NewReader(big.String()), base, "text/html", nil); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if _, err := e.Extract(bytes.NewReader(page), base, "text/html", func(Link) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenizeOnly is the baseline on its own.
func BenchmarkTokenizeOnly(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		tokenizeOnly(page)
	}
}

// BenchmarkExtractSites runs over the real static mirror in testdata/sites
// (every page once per iteration), interleaved
// with the bare tokenizer like BenchmarkExtract.
func BenchmarkExtractSites(b *testing.B) {
	pages, urls := sitePages(b)
	total := 0
	bases := make([]*urlnorm.URL, len(urls))
	for i, p := range pages {
		total += len(p)
		bases[i] = mustURL(b, urls[i])
	}
	e, _ := New(Options{})
	links := 0
	var ext, tok time.Duration
	for b.Loop() {
		for i, p := range pages {
			t0 := time.Now()
			res, err := e.Extract(bytes.NewReader(p), bases[i], "text/html", nil)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			tokenizeOnly(p)
			tok += time.Since(t1)
			ext += t1.Sub(t0)
			links += res.Links + res.Duplicates
		}
	}
	mb := float64(total) * float64(b.N) / 1e6
	b.ReportMetric(mb/ext.Seconds(), "MB/s-extract")
	b.ReportMetric(mb/tok.Seconds(), "MB/s-tokenize-only")
	b.ReportMetric(float64(links)/ext.Seconds(), "links/s")
	b.ReportMetric(float64(len(pages)), "pages")
	b.ReportMetric(tok.Seconds()/ext.Seconds(), "ratio-vs-tokenize")
}
