package main

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"mime"
	"net/url"
	"strings"

	"github.com/sextant-crawler/sextant/cache/cachesim"
	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"github.com/sextant-crawler/sextant/simweb"
)

// Crawl orders the offline crawl emulation knows.
const (
	OrderBFS     = "bfs"     // FIFO: breadth-first, Mercator's default front queue
	OrderInlinks = "inlinks" // the queued URL with the most in-links seen so far first (backlink count)
	OrderRandom  = "random"  // a uniformly random queued URL next
)

// EmulateOptions configure EmulateCrawl.
type EmulateOptions struct {
	Order    string
	MaxPages int    // stop after this many fetches (0: the whole reachable web)
	Seed     uint64 // of OrderRandom
	// Polite > 0 makes the emulated frontier polite: one queue per host in
	// the order above, and a host is fetched again only Polite fetches
	// after its last one (see politeSched).
	Polite int
	// OnPage, if set, is called with the host of each fetched page before
	// its links are emitted (dispatch.go assigns the page to a worker).
	OnPage func(host string)
}

// EmulateStats summarise an emulated crawl.
type EmulateStats struct {
	Pages, Links, Distinct int
	// HostRuns is the number of maximal runs of consecutive fetches from
	// one host: Pages/HostRuns is how long the crawl stays on a host.
	HostRuns int
	// Idle counts the times a polite crawl had every queued host resting
	// (only then may it fetch a host twice in a row).
	Idle int
}

// EmulateCrawl crawls web offline, through its generator (no HTTP), in the
// given order, and calls emit with the fingerprint of every in-scope link of
// every fetched page, in document order, each URL once per page — the
// stream the live crawler's full trace logs for one node of a one-node
// cluster. Discovery follows simweb.Rules as the oracle does for a web
// without pathologies: a 3xx gives its Location, a 2xx HTML page its links.
func EmulateCrawl(web *simweb.Web, o EmulateOptions, emit func(fp uint64)) (EmulateStats, error) {
	var st EmulateStats
	switch o.Order {
	case OrderBFS, OrderInlinks, OrderRandom:
	default:
		return st, fmt.Errorf("cachestudy: unknown order %q", o.Order)
	}
	f := newFrontier(o)
	inScope := scopeOf(web.Domain())
	for _, s := range web.Seeds() {
		fp := fingerprint.URL(s)
		f.counts[fp] = 0
		f.push(s, fp)
	}
	seenOnPage := map[uint64]bool{}
	lastHost := ""
	for o.MaxPages == 0 || st.Pages < o.MaxPages {
		s, fp, ok := f.pop()
		if !ok {
			break
		}
		f.counts[fp] = -1
		host, links, ok, err := fetch(web, s)
		if err != nil {
			return st, err
		}
		if !ok {
			continue // unknown host or scheme: a network failure, nothing discovered
		}
		st.Pages++
		if host != lastHost {
			st.HostRuns++
			lastHost = host
		}
		if o.OnPage != nil {
			o.OnPage(host)
		}
		clear(seenOnPage)
		for _, l := range links {
			if !inScope(l) {
				continue
			}
			lfp := fingerprint.URL(l)
			if seenOnPage[lfp] {
				continue // the extractor emits each URL once per page
			}
			seenOnPage[lfp] = true
			emit(lfp)
			st.Links++
			f.discovered(l, lfp)
		}
	}
	st.Distinct = len(f.counts)
	if f.ps != nil {
		st.Idle = f.ps.idle
	}
	return st, nil
}

// scopeOf returns the test of a link being in the web of the domain.
func scopeOf(domain string) func(string) bool {
	return func(s string) bool {
		if len(s) > 2048 {
			return false
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return false
		}
		h := u.Hostname()
		return h == domain || strings.HasSuffix(h, "."+domain)
	}
}

// fetch asks the generator for URL s and returns its host and the links it
// gives (a 3xx its Location, a 2xx HTML page its links); ok is false for an
// unknown host or scheme.
func fetch(web *simweb.Web, s string) (host string, links []string, ok bool, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", nil, false, err
	}
	pqs := u.EscapedPath()
	if u.RawQuery != "" {
		pqs += "?" + u.RawQuery
	}
	resp, err := web.RespondScheme(strings.ToLower(u.Hostname()), pqs, u.Scheme == "https")
	if err != nil {
		return "", nil, false, nil
	}
	switch {
	case resp.Status >= 300 && resp.Status < 400:
		if len(resp.Links) > 0 && resp.Links[0].Tag == "location" {
			links = append(links, resp.Links[0].URL)
		}
	case resp.Status >= 200 && resp.Status < 300 && isHTML(resp.Header.Get("Content-Type")):
		for _, l := range resp.Links {
			if l.Tag != "location" {
				links = append(links, l.URL)
			}
		}
	}
	return u.Hostname(), links, true, nil
}

// frontier is the emulated crawl's queue in one of the orders, polite or not.
type frontier struct {
	order  string
	q      pq             // OrderInlinks
	fifo   []pqItem       // OrderBFS
	pool   []pqItem       // OrderRandom
	counts map[uint64]int // in-links of every discovered URL; -1 once fetched
	rng    *rand.Rand
	n      int          // discovery counter (tie break: FIFO)
	ps     *politeSched // non-nil when polite
}

func newFrontier(o EmulateOptions) *frontier {
	f := &frontier{order: o.Order, counts: map[uint64]int{}, rng: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
	if o.Polite > 0 {
		f.ps = newPoliteSched(o.Polite, func(fp uint64, prio int) bool {
			c := f.counts[fp]
			return c >= 0 && (o.Order != OrderInlinks || c == prio)
		})
	}
	return f
}

func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Hostname()
	}
	return ""
}

// push queues a newly discovered URL.
func (f *frontier) push(s string, fp uint64) {
	it := pqItem{url: s, fp: fp, prio: f.counts[fp], order: f.n}
	f.n++
	if f.ps != nil {
		switch f.order {
		case OrderBFS:
			it.prio = 0
		case OrderRandom:
			it.prio = f.rng.Int()
		}
		f.ps.push(hostOf(s), it)
		return
	}
	switch f.order {
	case OrderBFS:
		f.fifo = append(f.fifo, it)
	case OrderRandom:
		f.pool = append(f.pool, it)
	default:
		heap.Push(&f.q, it)
	}
}

// discovered counts one more in-link of l: queues it if new, and in the
// in-links order queues it again with its new count (the old entry is
// skipped as stale when popped).
func (f *frontier) discovered(l string, fp uint64) {
	c, known := f.counts[fp]
	switch {
	case !known:
		f.counts[fp] = 1
		f.push(l, fp)
	case c >= 0:
		f.counts[fp] = c + 1
		if f.order == OrderInlinks {
			it := pqItem{url: l, fp: fp, prio: c + 1, order: f.n}
			if f.ps != nil {
				f.ps.push(hostOf(l), it)
			} else {
				heap.Push(&f.q, it)
			}
			f.n++
		}
	}
}

// pop returns the next URL to fetch; false when the frontier is empty.
func (f *frontier) pop() (string, uint64, bool) {
	if f.ps != nil {
		it, ok := f.ps.pop()
		return it.url, it.fp, ok
	}
	switch f.order {
	case OrderBFS:
		if len(f.fifo) == 0 {
			return "", 0, false
		}
		it := f.fifo[0]
		f.fifo = f.fifo[1:]
		return it.url, it.fp, true
	case OrderRandom:
		if len(f.pool) == 0 {
			return "", 0, false
		}
		i := f.rng.IntN(len(f.pool))
		it := f.pool[i]
		f.pool[i] = f.pool[len(f.pool)-1]
		f.pool = f.pool[:len(f.pool)-1]
		return it.url, it.fp, true
	}
	for f.q.Len() > 0 {
		it := heap.Pop(&f.q).(pqItem)
		if c := f.counts[it.fp]; c >= 0 && c == it.prio {
			return it.url, it.fp, true
		}
		// stale (re-pushed with a higher count) or already fetched
	}
	return "", 0, false
}

func isHTML(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

type pqItem struct {
	url         string
	fp          uint64
	prio, order int
}

type pq []pqItem

func (p pq) Len() int { return len(p) }
func (p pq) Less(i, j int) bool {
	if p[i].prio != p[j].prio {
		return p[i].prio > p[j].prio
	}
	return p[i].order < p[j].order
}
func (p pq) Swap(i, j int) { p[i], p[j] = p[j], p[i] }
func (p *pq) Push(x any)   { *p = append(*p, x.(pqItem)) }
func (p *pq) Pop() any {
	old := *p
	it := old[len(old)-1]
	*p = old[:len(old)-1]
	return it
}

// writeTrace is a helper that streams fingerprints into a trace file.
type traceSink struct {
	w   *cachesim.TraceWriter
	err error
}

func (t *traceSink) add(fp uint64) {
	if t.err == nil {
		t.err = t.w.Add(fp)
	}
}
