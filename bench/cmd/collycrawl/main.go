// Command collycrawl crawls a synthetic web with gocolly/colly v2, configured
// as the benchmark's peer: the same seeds and scope as Sextant, robots.txt
// obeyed, Async with the same parallelism as Sextant's workers, its visited
// set in memory (colly's default storage), and at most one connection per
// host with no delay between requests.
//
// One connection per host: colly's LimitRule keeps ONE semaphore per rule,
// not per domain (http_backend.go: r.waitChan), so a DomainGlob "*" rule
// with Parallelism 1 would serialise the whole crawl, and one rule per host
// would make every request scan a thousand globs. The limit is therefore
// set where it is exact and cheap: the transport's MaxConnsPerHost = 1,
// with a single "*" LimitRule of Parallelism = --parallelism and no delay.
//
// Links are taken from the same elements and attributes Sextant's
// extractor follows (a/area/link href, img/source src and srcset,
// script/iframe/frame/embed/audio/video/track src, form action, object
// data), resolved by colly against the page's <base href>. Each response's
// status and URL is written to --log, one "STATUS URL" line per fetch
// (robots.txt fetches are not logged, as in Sextant's crawl.log).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gocolly/colly/v2"
)

func main() {
	seedsFile := flag.String("seeds", "", "file of seed URLs, one per line (required)")
	connect := flag.String("connect", "", "HOST:PORT every host name is dialled at (required)")
	domain := flag.String("domain", "sim.test", "registered domain in scope (it and its sub-domains)")
	par := flag.Int("parallelism", 64, "requests in flight (Sextant's workers)")
	logFile := flag.String("log", "", "write one 'STATUS URL' line per fetch here (required)")
	ua := flag.String("user-agent", "Sextant/0.1 (+https://github.com/sextant-crawler/sextant)", "User-Agent header (robots.txt rules are matched against it)")
	flag.Parse()
	if *seedsFile == "" || *connect == "" || *logFile == "" || *par < 1 {
		fmt.Fprintln(os.Stderr, "usage: collycrawl --seeds FILE --connect HOST:PORT --log FILE [--parallelism N] [--domain D]")
		os.Exit(2)
	}
	if err := run(*seedsFile, *connect, *domain, *logFile, *ua, *par); err != nil {
		fmt.Fprintln(os.Stderr, "collycrawl:", err)
		os.Exit(1)
	}
}

// linkSelector lists the elements whose URL attributes Sextant follows.
const linkSelector = "a[href], area[href], link[href], img[src], img[srcset], source[src], source[srcset], " +
	"script[src], iframe[src], frame[src], embed[src], audio[src], video[src], track[src], form[action], object[data]"

func run(seedsFile, connect, domain, logFile, ua string, par int) error {
	seeds, err := readLines(seedsFile)
	if err != nil {
		return err
	}
	lf, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer lf.Close()
	var logMu sync.Mutex
	lw := bufio.NewWriterSize(lf, 1<<16)
	logf := func(status int, u string) {
		logMu.Lock()
		fmt.Fprintf(lw, "%d %s\n", status, u)
		logMu.Unlock()
	}

	scope := regexp.MustCompile(`^https?://([a-z0-9-]+\.)*` + regexp.QuoteMeta(domain) + `(:[0-9]+)?(/|$|\?)`)
	c := colly.NewCollector(
		colly.Async(true),
		colly.UserAgent(ua),
		colly.URLFilters(scope),
		colly.MaxBodySize(16<<20),
	)
	c.IgnoreRobotsTxt = false
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c.WithTransport(&http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, connect)
		},
		DisableCompression:  true,
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		MaxIdleConns:        4 * par,
		IdleConnTimeout:     30 * time.Second,
	})
	c.SetRequestTimeout(time.Minute)
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: par}); err != nil {
		return err
	}
	// visit drops the fragment: colly's AbsoluteURL keeps it (Href(false))
	// and its visited set then holds page#a and page#b as two URLs, both
	// fetched — three times the requests on simweb. Sextant, the oracle and
	// any careful colly user strip it.
	visit := func(e *colly.HTMLElement, raw string) {
		u := e.Request.AbsoluteURL(raw)
		if i := strings.IndexByte(u, '#'); i >= 0 {
			u = u[:i]
		}
		if u != "" {
			_ = e.Request.Visit(u)
		}
	}
	c.OnHTML(linkSelector, func(e *colly.HTMLElement) {
		for _, attr := range []string{"href", "src", "action", "data"} {
			if v, ok := e.DOM.Attr(attr); ok {
				visit(e, v)
			}
		}
		if v, ok := e.DOM.Attr("srcset"); ok {
			for _, cand := range strings.Split(v, ",") {
				if f := strings.Fields(cand); len(f) > 0 {
					visit(e, f[0])
				}
			}
		}
	})
	c.OnResponse(func(r *colly.Response) { logf(r.StatusCode, r.Request.URL.String()) })
	c.OnError(func(r *colly.Response, err error) {
		st := r.StatusCode
		if st == 0 {
			st = -1
		}
		logf(st, r.Request.URL.String())
	})
	start := time.Now()
	for _, s := range seeds {
		// Async: an earlier seed's page may already have linked to and
		// visited this one (CI failed once on "already visited").
		var already *colly.AlreadyVisitedError
		if err := c.Visit(s); err != nil && !errors.As(err, &already) {
			return fmt.Errorf("seed %s: %w", s, err)
		}
	}
	c.Wait()
	if err := lw.Flush(); err != nil {
		return err
	}
	fmt.Printf("collycrawl: done in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}
