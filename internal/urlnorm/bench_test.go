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
// interleaved reference by reference so machine load hits both alike,
// net/url's Parse+ResolveReference+String as the baseline:
// ratio-vs-net/url > 1 means faster than net/url. ns/op covers both.
func BenchmarkResolve(b *testing.B) {
	base := mustParse(b, benchBase)
	nb, _ := url.Parse(benchBase)
	b.ReportAllocs()
	n := 0
	var ours, theirs time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, r := range benchRefs {
			if _, err := Resolve(base, r); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, r := range benchRefs {
			u, err := url.Parse(r)
			if err != nil {
				b.Fatal(err)
			}
			_ = nb.ResolveReference(u).String()
		}
		theirs += time.Since(t1)
		ours += t1.Sub(t0)
		n += len(benchRefs)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(n), "ns/URL")
	b.ReportMetric(float64(theirs.Nanoseconds())/float64(n), "ns/URL-net/url")
	b.ReportMetric(float64(theirs)/float64(ours), "ratio-vs-net/url")
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
