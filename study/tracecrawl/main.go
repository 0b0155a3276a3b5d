// Command tracecrawl crawls a synthetic web (or a directory of real sites)
// with a loopback Sextant cluster, like `crawler demo --traces`, but writes
// worker-tagged traces: every record of DATA/node-i/{full,cross}.trace
// carries the index (0 … workers-1) of the crawl worker that logged it, so
// that the caching study can replay W per-worker caches against one shared
// cache (study/cachestudy).
//
// The crawler's trace hooks (crawl.Options.FullTrace, MemberOptions.
// CrossTrace) do not pass the worker, but both are called synchronously on
// the worker's goroutine, so the worker is identified by its goroutine id
// (parsed from runtime.Stack, about 1 µs per record) and numbered in order of
// first appearance per node. This is a measurement tool, not crawler code.
//
// Usage:
//
//	go run ./study/tracecrawl --hosts 20000 --pages 1000000 --data /work/study-data/big
//	go run ./study/tracecrawl --dir ../shared/testdata/sites --data /work/study-data/wiki
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/memberserve"
	"github.com/sextant-crawler/sextant/internal/warc"
	"github.com/sextant-crawler/sextant/simweb"
)

func main() {
	hosts := flag.Int("hosts", 0, "hosts of the synthetic web (0: default)")
	pages := flag.Int("pages", 0, "approximate articles of the synthetic web, spread over --hosts (0: default)")
	seed := flag.Uint64("seed", 0, "simweb seed (the demo's default is 0)")
	noPath := flag.Bool("no-pathologies", false, "build the web without pathological hosts")
	locality := flag.Int("nav-links", 0, "simweb Config.NavLinks (0: none, the default)")
	dir := flag.String("dir", "", "crawl a tree of static sites (one directory per host) instead of the synthetic web")
	nodes := flag.Int("nodes", 3, "cluster nodes")
	workers := flag.Int("workers", 32, "workers per node")
	cacheW := flag.Int("cache-per-worker", crawl.DefaultOptions().CachePerWorker, "front cache entries per worker")
	shared := flag.Bool("cache-shared", false, "one shared front cache per node")
	data := flag.String("data", "", "data directory (required)")
	oracle := flag.Bool("oracle", false, "compute simweb's oracle first (for the progress line; minutes on a big web)")
	budget := flag.Int("max-pages-per-host", 0, "per-host URL budget (0: 1000 for the synthetic web as in the demo, 10^6 with --dir)")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "tracecrawl: --data is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *budget == 0 {
		*budget = 1000
		if *dir != "" {
			*budget = 1_000_000
		}
	}
	shape = map[string]any{"hosts": *hosts, "pages": *pages, "nodes": *nodes, "workers": *workers,
		"cache_per_worker": *cacheW, "cache_shared": *shared, "no_pathologies": *noPath, "dir": *dir,
		"max_pages_per_host": *budget, "seed": *seed}
	if err := run(ctx, *oracle, *budget, *hosts, *pages, *seed, *noPath, *locality, *dir, *nodes, *workers, *cacheW, *shared, *data); err != nil {
		fmt.Fprintln(os.Stderr, "tracecrawl:", err)
		os.Exit(1)
	}
}

// tagTrace is one node's pair of tagged traces; the worker numbering is
// shared by both so that a record's tag means the same worker in each.
//
// A record's tag packs the worker index w (0 … workers-1, wbits bits) and
// the worker's page counter p (the rest): tag = w | p<<wbits (mod 2^16).
// The page counter counts the fetches the worker has made (see page), so the
// study can deal one worker's pages out to several virtual workers without
// splitting a page.
type tagTrace struct {
	mu          sync.Mutex
	wbits       uint
	ids         map[uint64]*wstate
	untagged    int
	full, cross *cachesim.TraceWriter
	files       []*os.File
	err         error
}

type wstate struct {
	idx   uint16
	pages uint32
}

func newTagTrace(dir string, workers int) (*tagTrace, error) {
	t := &tagTrace{ids: map[uint64]*wstate{}}
	for 1<<t.wbits < workers {
		t.wbits++
	}
	for i, name := range []string{"full.trace", "cross.trace"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		t.files = append(t.files, f)
		w, err := cachesim.NewTraceWriterOptions(f, cachesim.TraceOptions{WorkerTags: true})
		if err != nil {
			return nil, err
		}
		if i == 0 {
			t.full = w
		} else {
			t.cross = w
		}
	}
	return t, nil
}

var goPrefix = []byte("goroutine ")

// goid returns the calling goroutine's id.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, goPrefix)
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// worker returns goroutine g's state, numbering it if new; t.mu must be held.
func (t *tagTrace) worker(g uint64) *wstate {
	s, ok := t.ids[g]
	if !ok {
		s = &wstate{idx: uint16(len(t.ids))}
		t.ids[g] = s
	}
	return s
}

func (t *tagTrace) add(w *cachesim.TraceWriter, fp uint64) {
	g := goid()
	t.mu.Lock()
	var tag uint16
	if s, ok := t.ids[g]; ok {
		tag = s.idx | uint16(s.pages<<t.wbits)
	} else {
		t.untagged++ // not a worker (seeding): tag 0
	}
	if t.err == nil {
		t.err = w.AddTagged(fp, tag)
	}
	t.mu.Unlock()
}

// WriteFetch is the node's WARC hook, called on the worker's goroutine after
// each fetch and before its links are routed: it marks a page boundary (a
// robots.txt response, which has no links, marks one too). It
// archives nothing.
func (t *tagTrace) WriteFetch(warc.Fetch) (warc.Location, error) {
	g := goid()
	t.mu.Lock()
	t.worker(g).pages++
	t.mu.Unlock()
	return warc.Location{}, nil
}

func (t *tagTrace) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	errs := []error{t.err, t.full.Close(), t.cross.Close()}
	for _, f := range t.files {
		errs = append(errs, f.Close())
	}
	if len(t.ids) > 0 {
		fmt.Printf("trace: %d workers (tag bits for the worker: %d); %d full, %d cross records; %d records from non-workers (seeding) tagged 0\n", len(t.ids), t.wbits, t.full.Count(), t.cross.Count(), t.untagged)
	}
	return errors.Join(errs...)
}

// webServer is the loopback web the crawl fetches from.
type webServer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	TLSClientConfig() *tls.Config
	Close() error
}

func run(ctx context.Context, oracle bool, budget, hosts, pages int, seed uint64, noPath bool, locality int, dir string, nodes, workers, cacheW int, shared bool, data string) error {
	handler, seeds, domain, expect, err := startWeb(oracle, hosts, pages, seed, noPath, locality, dir)
	if err != nil {
		return err
	}
	defer handler.Close()
	fmt.Printf("web: %s, %d seeds, oracle %d URLs\n", domain, len(seeds), expect)

	var ms []*crawl.Member
	var tts []*tagTrace
	defer func() {
		for _, m := range ms {
			m.Close()
		}
		for _, t := range tts {
			t.close()
		}
	}()
	ms, tts, err = startMembers(data, nodes, workers, cacheW, budget, shared, handler, domain)
	if err != nil {
		return err
	}
	shape["loadavg_start"] = loadavg()
	start := time.Now()
	if err := crawlAll(ctx, ms, seeds, expect, start); err != nil {
		return err
	}
	var fetches, hits, misses uint64
	for _, m := range ms {
		st := m.Node.Stats()
		fetches += st.Fetches
		hits += st.CacheHits
		misses += st.CacheMisses
	}
	el := time.Since(start).Seconds()
	fmt.Printf("done: %d fetches in %.1f s (%.0f pages/s); front cache hit rate %.4f (shared=%v, %d per worker × %d workers)\n",
		fetches, el, float64(fetches)/el, float64(hits)/float64(max(hits+misses, 1)), shared, cacheW, workers)
	if err := writeSummary(filepath.Join(data, "summary.json"), fetches, el, hits, misses); err != nil {
		return err
	}
	for _, t := range tts {
		if err := t.close(); err != nil {
			return err
		}
	}
	tts = nil
	return nil
}

// startWeb serves the mirror in dir, or else a simweb of the given shape,
// on loopback; expect is the oracle's count when asked for (simweb only).
func startWeb(oracle bool, hosts, pages int, seed uint64, noPath bool, locality int, dir string) (srv webServer, seeds []string, domain string, expect int, err error) {
	if dir != "" {
		ds, err := simweb.StartDir(dir, simweb.Options{NoLog: true})
		if err != nil {
			return nil, nil, "", 0, err
		}
		hs := ds.DirHosts()
		for _, h := range hs {
			seeds = append(seeds, "http://"+h+"/")
		}
		return ds, seeds, hs[0], 0, nil // the filter admits this host only (the mirror has one)
	}
	cfg := simweb.DefaultConfig()
	cfg.Seed = seed
	cfg.NoPathologies = noPath
	if hosts > 0 {
		cfg.Hosts = hosts
	}
	if pages > 0 {
		cfg.PagesPerHost = float64(pages) / float64(cfg.Hosts)
	}
	cfg.NavLinks = locality
	web, err := simweb.New(cfg)
	if err != nil {
		return nil, nil, "", 0, err
	}
	if oracle {
		or, err := web.Oracle(web.Seeds(), simweb.Rules{})
		if err != nil {
			return nil, nil, "", 0, err
		}
		expect = or.Size()
	}
	ws, err := simweb.Start(web, simweb.Options{NoLog: true})
	if err != nil {
		return nil, nil, "", 0, err
	}
	return ws, web.Seeds(), web.Domain(), expect, nil
}

// startMembers starts the loopback cluster, each member logging its
// worker-tagged traces under data/ID. On error the caller closes what was
// returned so far.
func startMembers(data string, nodes, workers, cacheW, budget int, shared bool, handler webServer, domain string) (ms []*crawl.Member, tts []*tagTrace, err error) {
	members, seats, err := crawl.LoopbackCluster(filepath.Join(data, "pki"), nodes)
	if err != nil {
		return nil, nil, err
	}
	filter, err := extract.NewFilter(extract.FilterOptions{Scope: extract.ScopeSuffixes, Suffixes: []string{domain}, MaxRepeatedSegments: -1})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range seats {
		nd := filepath.Join(data, s.ID)
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return ms, tts, err
		}
		tt, err := newTagTrace(nd, workers)
		if err != nil {
			return ms, tts, err
		}
		tts = append(tts, tt)
		m, err := memberserve.Start(crawl.MemberOptions{
			CrossTrace: func(fp uint64) { tt.add(tt.cross, fp) },
			Node: crawl.Options{
				DataDir: nd,
				Workers: workers,
				Fetcher: fetcher.Options{AllowPrivate: true, DialContext: handler.DialContext, TLSConfig: handler.TLSClientConfig(), FetchTimeout: 5 * time.Second},
				Frontier: frontier.Options{MinDelay: 0, MaxDelay: time.Second,
					FailureBackoff: 50 * time.Millisecond, MaxFailureBackoff: time.Second},
				DUEFlushInterval: 200 * time.Millisecond,
				CachePerWorker:   cacheW,
				CacheShared:      shared,
				MaxPagesPerHost:  budget,
				Filter:           crawl.Filter{F: filter},
				FullTrace:        func(fp uint64) { tt.add(tt.full, fp) },
				WARC:             tt,
			},
			Self: s.ID, Members: members, TLS: s.TLS, Listener: s.Listener,
		})
		if err != nil {
			return ms, tts, err
		}
		ms = append(ms, m)
	}
	return ms, tts, nil
}

// crawlAll seeds every member, runs them to the end and logs progress.
func crawlAll(ctx context.Context, ms []*crawl.Member, seeds []string, expect int, start time.Time) error {
	for _, m := range ms {
		if err := m.Seed(ctx, seeds); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Run(ctx) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return errors.Join(errs...)
		case <-tick.C:
			var f uint64
			for _, m := range ms {
				f += m.Node.Stats().Fetches
			}
			fmt.Printf("%6.0fs fetched %d/%d (%.0f pages/s)\n", time.Since(start).Seconds(), f, expect, float64(f)/time.Since(start).Seconds())
		}
	}
}

// writeSummary records the crawl's counts as JSON, so that the study's
// document can state them from data (study/studydoc).
// shape is the run's flags (and the machine's load at the start), copied
// into summary.json so that the document's run parameters are generated too.
var shape = map[string]any{}

// loadavg is /proc/loadavg's 1-minute figure, or -1 where it cannot be read.
func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscanf(string(b), "%f", &l); err != nil {
		return -1
	}
	return l
}

func writeSummary(path string, fetches uint64, seconds float64, hits, misses uint64) error {
	m := map[string]any{
		"fetches": fetches, "elapsed_seconds": seconds,
		"front_cache_hits": hits, "front_cache_misses": misses,
		"loadavg_end": loadavg(),
	}
	for k, v := range shape {
		m[k] = v
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
