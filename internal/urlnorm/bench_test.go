package urlnorm

import (
	"net/url"
	"testing"
	"time"
)

// benchRefs are the reference forms found on a typical page (see
// extract's bench page), resolved against benchBase.
var benchRefs = []string{
	"/section/3/", "item-7.html", "../archive/2023.html", "./tags/go", "//cdn.example.net/img/1.png",
	"http://WWW.Example.com:80/news/./9/../story.html", "https://shop.example.org/p?id=5&ref=nav", "?page=2",
	"#comment-4", "/search?q=term+1&lang=en", "story-8.html#top", "https://Partner.example/a/b/1",
	"/static/css/site.css?v=3", "http://www.example.com/news/2024/article.html",
}

const benchBase = "http://www.example.com/news/2024/article.html"

// BenchmarkResolve measures Resolve (fast path with fallback) per URL and,
// in the same run, net/url's Parse+ResolveReference+String as the
// baseline: ratio-vs-net/url > 1 means faster than net/url.
func BenchmarkResolve(b *testing.B) {
	base := mustParse(b, benchBase)
	nb, _ := url.Parse(benchBase)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, r := range benchRefs {
			if _, err := Resolve(base, r); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	el := b.Elapsed()
	b.StopTimer()
	t0 := time.Now()
	for range b.N {
		for _, r := range benchRefs {
			u, err := url.Parse(r)
			if err != nil {
				b.Fatal(err)
			}
			_ = nb.ResolveReference(u).String()
		}
	}
	nu := time.Since(t0)
	b.ReportMetric(float64(el.Nanoseconds())/float64(n), "ns/URL")
	b.ReportMetric(float64(nu.Nanoseconds())/float64(n), "ns/URL-net/url")
	b.ReportMetric(float64(nu)/float64(el), "ratio-vs-net/url")
}

// BenchmarkAppendResolved is the extractor's path (no *URL built).
func BenchmarkAppendResolved(b *testing.B) {
	base := mustParse(b, benchBase)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range benchRefs {
			var err error
			if buf, err = AppendResolved(buf[:0], base, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchRefs)), "ns/URL")
}

// BenchmarkResolveReference is the whatwg-url reference parser alone (what
// every URL would cost without the fast path).
func BenchmarkResolveReference(b *testing.B) {
	base := mustParse(b, benchBase)
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range benchRefs {
			if _, err := slowResolve(base, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchRefs)), "ns/URL")
}

// BenchmarkNormalizeCanonical: re-parsing an already canonical URL (the
// crawler parses extracted links again to filter them).
func BenchmarkNormalizeCanonical(b *testing.B) {
	const s = "http://www.example.com/news/2024/story.html?id=42"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(s); err != nil {
			b.Fatal(err)
		}
	}
}
