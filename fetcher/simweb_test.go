package fetcher_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/simweb"
)

// TestSimweb runs the fetcher against simweb's pathological hosts: every
// robots.txt pathology, and stalling, huge, gzip-bomb and redirecting pages.
func TestSimweb(t *testing.T) {
	cfg := simweb.SmallConfig()
	cfg.HugeMax = 8 << 20
	cfg.BombSize = 256 << 20
	cfg.StallTime = 10 * time.Second
	cfg.HTTPSShare, cfg.RedirectHTTPSShare = 0, 0 // the pathologies over plain http (URLs below)
	web, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simweb.Start(web, simweb.Options{NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Some simweb robots.txt redirect to another host: followed inline
	// here (no politeness state; the crawler borrows the host's slot).
	f, err := fetcher.New(fetcher.Options{AllowPrivate: true, DialContext: srv.DialContext,
		TempDir: t.TempDir(), BodyCap: 1 << 20, FetchTimeout: 2 * time.Second, RobotsCrossHostRedirects: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	host := func(p simweb.Pathology) string {
		if p == simweb.Normal {
			return web.HostName(0) // host 0 is always normal
		}
		hs := web.HostsWith(p)
		if len(hs) == 0 {
			panic(fmt.Sprintf("no host with %v", p))
		}
		return web.HostName(hs[0])
	}
	var robots func(h string) *fetcher.RobotsRules

	t.Run("robots", func(t *testing.T) {
		robots = func(h string) *fetcher.RobotsRules {
			r, fetched, _, err := f.Robots(ctx, "http", h)
			if err != nil || !fetched {
				t.Fatalf("%s: robots err %v fetched %v", h, err, fetched)
			}
			return r
		}
		r := robots(host(simweb.Normal))
		if r.Outcome != fetcher.RobotsParsed || !r.Allowed("/") {
			t.Errorf("normal: %v", r.Outcome)
		}
		r = robots(host(simweb.RobotsDisallow))
		if r.Outcome != fetcher.RobotsParsed || r.Allowed("/private/x") || r.Allowed("/doc/1.html") || !r.Allowed("/") {
			t.Errorf("disallow: %v", r.Outcome)
		}
		if r = robots(host(simweb.Robots404)); r.Outcome != fetcher.RobotsAllowAll || !r.Allowed("/private/") {
			t.Errorf("404: %v", r.Outcome)
		}
		if r = robots(host(simweb.Robots5xx)); r.Outcome != fetcher.RobotsUnreachable || r.Allowed("/") {
			t.Errorf("5xx: %v", r.Outcome)
		}
		if r = robots(host(simweb.RobotsGarbage)); r.Allowed("/") != true {
			t.Errorf("garbage: %v disallows", r.Outcome)
		}
		r = robots(host(simweb.RobotsHuge))
		if !r.Truncated || r.Allowed("/private/") || !r.Allowed("/img/x.png") {
			t.Errorf("huge: truncated %v, /private/ %v, /img/ %v", r.Truncated, r.Allowed("/private/"), r.Allowed("/img/x.png"))
		}
		h := host(simweb.CrawlDelay)
		if r = robots(h); r.CrawlDelay() != web.CrawlDelay(h) || r.CrawlDelay() == 0 {
			t.Errorf("crawl-delay %v, simweb announces %v", r.CrawlDelay(), web.CrawlDelay(h))
		}
		for _, i := range web.HostsWith(simweb.RobotsRedirect) {
			h := web.HostName(i)
			before := f.Stats().RobotsFetches
			r := robots(h)
			n := int(f.Stats().RobotsFetches - before) // requests, hops on other hosts included
			t.Logf("%s: robots.txt %v after %d requests", h, r.Outcome, n)
			switch {
			case r.Outcome == fetcher.RobotsParsed && n <= 6:
				if r.Allowed("/img/a.png") {
					t.Errorf("%s: redirected rules not applied", h)
				}
			case r.Outcome == fetcher.RobotsAllowAll && n == 6:
			default:
				t.Errorf("%s: outcome %v after %d requests", h, r.Outcome, n)
			}
		}
	})

	t.Run("pages", func(t *testing.T) {
		get := func(h, pq string) (*fetcher.Response, error) { return f.Fetch(ctx, "http://"+h+pq) }
		// A stall longer than FetchTimeout: a retryable timeout.
		if _, err := get(host(simweb.Stall), "/stall/0.html"); !errors.Is(err, fetcher.ErrTimeout) || !fetcher.IsRetryable(err) {
			t.Errorf("stall: %v", err)
		}
		r, err := get(host(simweb.Huge), "/huge/0.html")
		if err != nil || !r.Truncated || r.Body.Len() != 1<<20 {
			t.Errorf("huge: err %v", err)
		} else {
			r.Close()
		}
		r, err = get(host(simweb.GzipBomb), "/bomb/0.html")
		if err != nil || !r.Truncated || r.Body.Len() != 1<<20 || r.Bytes > 1<<20 {
			t.Errorf("bomb: err %v", err)
		} else {
			if d, _ := readHead(r); !strings.Contains(d, "<html>") {
				t.Errorf("bomb body starts %q", d)
			}
			r.Close()
		}
		hr := host(simweb.Redirects)
		r, err = get(hr, "/r/3/3")
		if err != nil || r.Status < 300 || r.Status > 399 || !strings.HasPrefix(r.Location, "http://") {
			t.Errorf("redirect: err %v status %v location %q", err, statusOf(r), locOf(r))
		} else {
			r.Close()
		}
		if n := len(srv.Log()[hr]); n != 1 {
			t.Errorf("redirect followed: %d requests", n)
		}
	})
}

func readHead(r *fetcher.Response) (string, error) {
	b := make([]byte, 200)
	n, err := r.Body.NewReader().Read(b)
	return string(b[:n]), err
}

func statusOf(r *fetcher.Response) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprint(r.Status)
}

func locOf(r *fetcher.Response) string {
	if r == nil {
		return ""
	}
	return r.Location
}
