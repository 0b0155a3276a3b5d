package crawl_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/crawl"
	"github.com/sextant-crawler/sextant/simweb"
)

// Crawl a small synthetic web served in-process on loopback, counting the
// pages fetched through the OnFetch hook and checking them against the
// web's own list of its pages.
func Example() {
	web, err := simweb.New(simweb.Config{Seed: 1, Hosts: 4, PagesPerHost: 10, MinPagesPerHost: 5, MaxPagesPerHost: 20, NoPathologies: true,
		LatencyMedian: 500 * time.Microsecond})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{Sitemaps: true})
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sextant-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var mu sync.Mutex
	fetched := map[string]bool{}
	o := crawl.DefaultOptions()
	o.DataDir, o.Workers = dir, 4
	// simweb is on loopback: no need to wait long between requests.
	o.MinDelay, o.MaxDelay = -1, 10*time.Millisecond
	o.Domains = []string{web.Domain()}
	// A host simweb links to but does not serve: its robots.txt would be
	// retried for seconds before its URLs are given up.
	o.Exclude = []string{"nohost." + web.Domain()}
	o.AllowPrivate, o.DialContext, o.TLSConfig = true, srv.DialContext, srv.TLSClientConfig()
	o.OnFetch = func(p crawl.Page) {
		mu.Lock()
		defer mu.Unlock()
		fetched[p.URL] = true
	}
	c, err := crawl.Open(o)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Seed(ctx, web.Seeds()); err != nil {
		log.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
	st := c.Stats()
	fmt.Println("every URL fetched once:", st.Fetches == uint64(len(fetched)))
	fmt.Println("the web's URLs fetched:", len(fetched) == oracle.Size(), len(fetched))
	fmt.Println("queued:", st.Queued)
	// Output:
	// every URL fetched once: true
	// the web's URLs fetched: true 103
	// queued: 0
}
