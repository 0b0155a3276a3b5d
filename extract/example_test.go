package extract_test

import (
	"fmt"
	"strings"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// The per-page path of a crawler worker: extract, parse, filter (the URL-seen
// test and the per-host budget come after, in the DUE and the frontier).
func Example() {
	page := `<html><head><base href="/docs/"></head><body>
<a href="intro.html#top">Intro</a> <a href="../Index.html">Home</a>
<a href="HTTP://Example.COM:80/docs/./intro.html">again</a>
<img srcset="a.png 1x, b.png 2x"> <a href="mailto:me@example.com">mail</a>
<a href="http://elsewhere.example/">out</a>
</body></html>`
	docURL, _ := urlnorm.Parse("http://example.com/start.html")

	ex, _ := extract.New(extract.Options{})               // one per worker
	filter, _ := extract.NewFilter(extract.FilterOptions{ // shared
		Scope: extract.ScopeSameDomain,
	})

	if !extract.IsHTML("text/html; charset=utf-8", nil) {
		return
	}
	res, err := ex.Extract(strings.NewReader(page), docURL, "text/html; charset=utf-8", func(l extract.Link) {
		u, err := urlnorm.Parse(l.URL) // cheap: already canonical
		if err != nil {
			return
		}
		if ok, reason := filter.Allow(u, docURL.Host()); !ok {
			fmt.Printf("%-7s %-6s %s (%v)\n", "reject", l.Tag, l.URL, reason)
			return
		}
		fmt.Printf("%-7s %-6s %s\n", "accept", l.Tag, l.URL)
	})
	fmt.Println(res.Links, "links,", res.Duplicates, "duplicate, base", res.Base, err)
	// Output:
	// accept  a      http://example.com/docs/intro.html
	// accept  a      http://example.com/Index.html
	// accept  img    http://example.com/docs/a.png
	// accept  img    http://example.com/docs/b.png
	// reject  a      mailto:me@example.com (scheme)
	// reject  a      http://elsewhere.example/ (scope)
	// 6 links, 1 duplicate, base http://example.com/docs/ <nil>
}
