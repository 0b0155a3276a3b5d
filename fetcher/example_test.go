package fetcher_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sextant-crawler/sextant/fetcher"
)

func Example() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: sextant\nDisallow: /private/\nCrawl-delay: 1\n")
		case "/old":
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<a href=/old>old</a>")
		}
	}))
	defer site.Close()

	// AllowPrivate only because the test server is on loopback.
	f, err := fetcher.New(fetcher.Options{AllowPrivate: true})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	ctx := context.Background()
	host := site.Listener.Addr().String()

	rules, fetched, _, err := f.Robots(ctx, "http", host)
	if err != nil {
		panic(err)
	}
	fmt.Println("robots:", rules.Outcome, "fetched:", fetched, "crawl-delay:", rules.CrawlDelay())
	fmt.Println("/private/x allowed:", rules.Allowed(site.URL+"/private/x"))

	for _, path := range []string{"/", "/old"} {
		resp, err := f.Fetch(ctx, site.URL+path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body.NewReader())
		loc := strings.Replace(resp.Location, site.URL, "http://HOST", 1)
		fmt.Printf("%s: %d %s %d bytes, redirect to %q\n", path, resp.Status, resp.ContentType, len(body), loc)
		resp.Close()
	}
	// Output:
	// robots: parsed fetched: true crawl-delay: 1s
	// /private/x allowed: false
	// /: 200 text/html 20 bytes, redirect to ""
	// /old: 301 text/html 39 bytes, redirect to "http://HOST/new"
}
