package crawl

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/cputime"
	"github.com/sextant-crawler/sextant/simweb"
)

// TestPagePathHarness runs BenchmarkPagePath's crawl on a small web: it
// must fetch exactly the oracle's set, or the benchmark measures a
// different crawl.
func TestPagePathHarness(t *testing.T) {
	web, pages := cannedWeb(t, simweb.Config{Hosts: 8, PagesPerHost: 10, MinPagesPerHost: 3, MaxPagesPerHost: 30, NoPathologies: true})
	n := openPagePathNode(t, web)
	defer n.Close()
	if err := n.Seed(context.Background(), web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if done := crawlCanned(t, n, web, pages); done != len(pages) || int(n.Stats().Fetches) != len(pages) {
		t.Fatalf("crawled %d pages (%d logged), the oracle %d", done, n.Stats().Fetches, len(pages))
	}
}

// cannedPage is a simweb response prepared before the clock starts.
type cannedPage struct {
	status      int
	header      http.Header
	contentType string
	charset     string
	location    string
	body        []byte
}

// cannedWeb makes the web of cfg and renders in-process every URL its
// oracle fetches from its seeds.
func cannedWeb(tb testing.TB, cfg simweb.Config) (*simweb.Web, map[string]*cannedPage) {
	web, err := simweb.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	oracle, err := web.Oracle(web.Seeds(), simweb.Rules{})
	if err != nil {
		tb.Fatal(err)
	}
	pages := make(map[string]*cannedPage, len(oracle.Fetched))
	for _, s := range oracle.Fetched {
		u, err := url.Parse(s)
		if err != nil {
			tb.Fatal(err)
		}
		r, err := web.RespondScheme(u.Host, u.RequestURI(), u.Scheme == "https")
		if err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
		p := &cannedPage{status: r.Status, header: r.Header, body: r.Body}
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, params, _ := mime.ParseMediaType(ct)
			p.contentType, p.charset = strings.ToLower(mt), strings.ToLower(params["charset"])
		}
		if loc := r.Header.Get("Location"); loc != "" && r.Status >= 300 && r.Status < 400 {
			if l, err := u.Parse(loc); err == nil {
				p.location = l.String()
			}
		}
		pages[s] = p
	}
	return web, pages
}

// response is p as the fetcher would hand it over: its body in a fresh
// RewindBuffer (the fetcher copies every body into one too).
func (p *cannedPage) response(rawURL string) *fetcher.Response {
	body := fetcher.NewRewindBuffer(1<<20, "")
	_, _ = body.Write(p.body)
	return &fetcher.Response{URL: rawURL, Status: p.status, Header: p.header, ContentType: p.contentType,
		Charset: p.charset, Location: p.location, Body: body, Bytes: int64(len(p.body)),
		Duration: time.Millisecond, Proto: "HTTP/1.1"}
}

// tokenizePage is the TLS ceiling's work on a body (bench/cmd/ceiling):
// the bare x/net/html loop over HTML and XHTML.
func tokenizePage(p *cannedPage) {
	if p.contentType != "text/html" && p.contentType != "application/xhtml+xml" {
		return
	}
	z := html.NewTokenizer(bytes.NewReader(p.body))
	for z.Next() != html.ErrorToken {
		_, _ = z.TagName()
	}
}

// BenchmarkPagePath is a worker's work per page with the network taken out:
// one worker crawls a 100-host simweb (no pathologies) whose responses are
// rendered before the clock starts, through the whole per-page path —
// lease, content-seen test, extraction, routing through the front cache
// into the DUE, crawl log line with its digest, Done (committed, not
// fsynced) — and the same bodies are then tokenized as the TLS ceiling
// does (bench/cmd/ceiling). One goroutine does the pages and no server
// or network stack shares the cores, unlike the crawl-vs-ceiling
// benchmarks; on a shared machine the figures still move by about ±10 %
// between runs, so compare changes with -count and benchstat. Reported per
// page: the worker's wall time (µs/page), the process CPU (the DUE merges
// and pebble's syncs included, cpu-µs/page), the ceiling's tokenizing
// (tokenize-µs/page) and the ratio of the two wall times.
func BenchmarkPagePath(b *testing.B) {
	web, pages := cannedWeb(b, simweb.Config{Hosts: 100, PagesPerHost: 30, MinPagesPerHost: 3, MaxPagesPerHost: 120, NoPathologies: true})
	var pathD, tokD, cpu time.Duration
	var done int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		n := openPagePathNode(b, web)
		ctx := context.Background()
		if err := n.Seed(ctx, web.Seeds()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0, t0 := cputime.Process(), time.Now()
		done += crawlCanned(b, n, web, pages)
		pathD += time.Since(t0)
		cpu += cputime.Process() - cpu0
		t1 := time.Now()
		for _, p := range pages {
			tokenizePage(p)
		}
		tokD += time.Since(t1)
		b.StopTimer()
		if st := n.Stats(); int(st.Fetches) != len(pages) {
			b.Fatalf("crawled %d pages, the oracle %d", st.Fetches, len(pages))
		}
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(done) }
	b.ReportMetric(per(pathD), "µs/page")
	b.ReportMetric(per(cpu), "cpu-µs/page")
	b.ReportMetric(per(tokD), "tokenize-µs/page")
	b.ReportMetric(tokD.Seconds()/pathD.Seconds(), "ratio")
}

// openPagePathNode opens a node for BenchmarkPagePath: default options but
// no fetching ahead (the worker is driven by hand), no fsync per group of
// Dones (LazyDone: the disk's latency is not the page path's, and in a
// crawl the syncer waits while other workers work), and no timed DUE
// merges (the loop flushes when the frontier runs dry).
func openPagePathNode(b testing.TB, web *simweb.Web) *Node {
	lf, err := NewSeedFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{web.Domain()}, MaxRepeatedSegments: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	n, err := Open(Options{
		DataDir: b.TempDir(), Workers: 64, NoFetchAhead: true, LazyDone: true,
		Fetcher:          fetcher.Options{AllowPrivate: true},
		Frontier:         frontier.Options{MinDelay: 0, Factor: 0, FactorSet: true},
		DUEFlushInterval: time.Hour,
		Filter:           lf,
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// crawlCanned crawls n to its end with one worker, answering each lease
// from pages, and returns the pages done.
func crawlCanned(b testing.TB, n *Node, web *simweb.Web, pages map[string]*cannedPage) int {
	ctx := context.Background()
	w := n.newWorker(0)
	allow := &fetcher.RobotsRules{Outcome: fetcher.RobotsAllowAll}
	closed := make(chan struct{})
	close(closed)
	done := 0
	for {
		l, ok, err := n.fr.TryNextFor(0)
		if err == nil && !ok {
			if err = n.Flush(); err == nil {
				l, ok, err = n.fr.TryNextFor(0)
			}
		}
		if err == nil && !ok {
			if n.fr.Len() == 0 {
				return done
			}
			// Queued but not ready: wait for it rather than end early
			// (TestPagePathHarness would see the pages missing).
			l, err = n.fr.NextFor(ctx, 0)
		}
		if err != nil {
			b.Fatal(err)
		}
		bare, _ := splitAnnot(l.URL)
		p := pages[bare]
		if p == nil {
			// The web links to a host simweb does not serve, whose
			// robots.txt a crawl finds unreachable: no fetch.
			if u, err := url.Parse(bare); err != nil || webServes(web, u.Hostname()) {
				b.Fatalf("leased %s, not in the oracle's set", bare)
			}
			if err := n.fr.Done(l, frontier.Result{}); err != nil {
				b.Fatal(err)
			}
			continue
		}
		w.started = &ahead{lease: l, done: closed, resp: p.response(bare), rules: allow}
		n.busy.Add(1)
		if _, err := w.complete(ctx, l); err != nil {
			b.Fatal(err)
		}
		done++
	}
}

func webServes(web *simweb.Web, host string) bool {
	_, ok := web.HostIndex(host)
	return ok
}
