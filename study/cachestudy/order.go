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
	domain := web.Domain()
	inScope := func(s string) bool {
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
	type qitem struct {
		url   string
		fp    uint64
		prio  int // in-links when pushed
		order int // discovery order (tie break: FIFO)
	}
	q := &pq{}
	var fifo []qitem
	var pool []qitem
	counts := map[uint64]int{} // in-links of every discovered URL; -1 once fetched
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	n := 0
	var ps *politeSched
	if o.Polite > 0 {
		ps = newPoliteSched(o.Polite, func(fp uint64, prio int) bool {
			c := counts[fp]
			return c >= 0 && (o.Order != OrderInlinks || c == prio)
		})
	}
	hostOf := func(s string) string {
		if u, err := url.Parse(s); err == nil {
			return u.Hostname()
		}
		return ""
	}
	push := func(s string, fp uint64) {
		it := qitem{url: s, fp: fp, prio: counts[fp], order: n}
		n++
		if ps != nil {
			prio := 0
			switch o.Order {
			case OrderInlinks:
				prio = it.prio
			case OrderRandom:
				prio = rng.Int()
			}
			ps.push(hostOf(s), pqItem{url: s, fp: fp, prio: prio, order: it.order})
			return
		}
		switch o.Order {
		case OrderBFS:
			fifo = append(fifo, it)
		case OrderRandom:
			pool = append(pool, it)
		default:
			heap.Push(q, pqItem{url: it.url, fp: fp, prio: it.prio, order: it.order})
		}
	}
	pop := func() (string, uint64, bool) {
		if ps != nil {
			it, ok := ps.pop()
			return it.url, it.fp, ok
		}
		switch o.Order {
		case OrderBFS:
			if len(fifo) == 0 {
				return "", 0, false
			}
			it := fifo[0]
			fifo = fifo[1:]
			return it.url, it.fp, true
		case OrderRandom:
			if len(pool) == 0 {
				return "", 0, false
			}
			i := rng.IntN(len(pool))
			it := pool[i]
			pool[i] = pool[len(pool)-1]
			pool = pool[:len(pool)-1]
			return it.url, it.fp, true
		}
		for q.Len() > 0 {
			it := heap.Pop(q).(pqItem)
			if c := counts[it.fp]; c >= 0 && c == it.prio {
				return it.url, it.fp, true
			}
			// stale (re-pushed with a higher count) or already fetched
		}
		return "", 0, false
	}
	switch o.Order {
	case OrderBFS, OrderInlinks, OrderRandom:
	default:
		return st, fmt.Errorf("cachestudy: unknown order %q", o.Order)
	}
	for _, s := range web.Seeds() {
		fp := fingerprint.URL(s)
		counts[fp] = 0
		push(s, fp)
	}
	seenOnPage := map[uint64]bool{}
	lastHost := ""
	for o.MaxPages == 0 || st.Pages < o.MaxPages {
		s, fp, ok := pop()
		if !ok {
			break
		}
		counts[fp] = -1
		u, err := url.Parse(s)
		if err != nil {
			return st, err
		}
		pqs := u.EscapedPath()
		if u.RawQuery != "" {
			pqs += "?" + u.RawQuery
		}
		resp, err := web.RespondScheme(strings.ToLower(u.Hostname()), pqs, u.Scheme == "https")
		if err != nil {
			continue // unknown host or scheme: a network failure, nothing discovered
		}
		st.Pages++
		if h := u.Hostname(); h != lastHost {
			st.HostRuns++
			lastHost = h
		}
		var links []string
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
			c, known := counts[lfp]
			switch {
			case !known:
				counts[lfp] = 1
				push(l, lfp)
			case c >= 0:
				counts[lfp] = c + 1
				if o.Order == OrderInlinks {
					if ps != nil {
						ps.push(hostOf(l), pqItem{url: l, fp: lfp, prio: c + 1, order: n})
					} else {
						heap.Push(q, pqItem{url: l, fp: lfp, prio: c + 1, order: n})
					}
					n++
				}
			}
		}
	}
	st.Distinct = len(counts)
	if ps != nil {
		st.Idle = ps.idle
	}
	return st, nil
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
