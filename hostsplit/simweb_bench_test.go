package hostsplit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/cache"
	"github.com/sextant-crawler/sextant/simweb"
)

// simwebPages crawls simweb's DefaultConfig breadth-first through the
// generator (no HTTP) and returns, per fetched HTML page in crawl order, its
// host and the canonical URLs of its links (redirect targets included), as
// the extractor would hand them to the splitter. At most 500 pages per host
// are fetched, which bounds the trap hosts.
var simwebPages = sync.OnceValues(func() ([]simPage, error) {
	web, err := simweb.New(simweb.DefaultConfig())
	if err != nil {
		return nil, err
	}
	queue := web.Seeds()
	seen := map[string]bool{}
	perHost := map[string]int{}
	for _, s := range queue {
		seen[s] = true
	}
	var pages []simPage
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		host, ok := Host(u)
		if !ok {
			continue
		}
		pq := "/"
		rest := u[strings.Index(u, "://")+3:] // http or https (simweb's HTTPS hosts)
		if i := strings.Index(rest, "/"); i >= 0 {
			pq = rest[i:]
		}
		resp, err := web.RespondScheme(host, pq, strings.HasPrefix(u, "https://"))
		if err != nil {
			continue
		}
		ctype := resp.Header.Get("Content-Type")
		redirect := resp.Status >= 300 && resp.Status < 400
		if !redirect && (resp.Status != 200 || !strings.HasPrefix(ctype, "text/html")) {
			continue
		}
		var links []string
		for i, l := range resp.Links {
			if redirect && i > 0 {
				break
			}
			if h, ok := Host(l.URL); ok && strings.HasPrefix(l.URL, "http") && strings.HasSuffix(h, "."+web.Domain()) {
				links = append(links, l.URL)
				if !seen[l.URL] && perHost[h] < 500 {
					seen[l.URL] = true
					perHost[h]++
					queue = append(queue, l.URL)
				}
			}
		}
		pages = append(pages, simPage{host: host, links: links})
	}
	return pages, nil
})

type simPage struct {
	host  string
	links []string
}

// BenchmarkSimwebCrossTraffic runs the links of a breadth-first crawl of
// simweb (DefaultConfig) through three Splitters, each routing the links of
// the pages it owns, with per-peer CLOCK caches of k entries (k=0: no cache;
// inf: every URL remembered), and reports the local share, the
// cross-machine traffic reduction (1 − sent ÷ discovered remote) and the
// encoded bytes per sent URL. Peers are unreachable: batches stay spooled, so
// this measures what would be sent (as spooled, before the sender
// coalesces batches into larger wire messages).
func BenchmarkSimwebCrossTraffic(b *testing.B) {
	pages, err := simwebPages()
	if err != nil {
		b.Fatal(err)
	}
	links := 0
	for _, p := range pages {
		links += len(p.links)
	}
	b.Logf("%d pages, %d links", len(pages), links)
	for _, k := range []int{0, 64, 256, 1024, 4096, 16384, -1} {
		name := fmt.Sprintf("k=%d", k)
		if k < 0 {
			name = "k=inf"
		}
		b.Run(name, func(b *testing.B) {
			var st [3]Stats
			for b.Loop() {
				st = crossTraffic(b, pages, k)
			}
			var local, remote, sent, supp, wire uint64
			for _, s := range st {
				local += s.DiscoveredLocal
				remote += s.DiscoveredRemote
				sent += s.Total.SentURLs
				supp += s.Total.Suppressed
				wire += s.Total.SpooledBytes
			}
			b.ReportMetric(100*float64(local)/float64(local+remote), "%local")
			b.ReportMetric(100*(1-float64(sent)/float64(remote)), "%reduction")
			b.ReportMetric(100*float64(supp)/float64(remote), "%cache-hits")
			b.ReportMetric(float64(sent), "sentURLs")
			b.ReportMetric(float64(wire)/float64(sent), "wireB/URL")
			b.ReportMetric(float64(wire)/float64(remote), "wireB/remoteURL")
		})
	}
}

func crossTraffic(b *testing.B, pages []simPage, k int) [3]Stats {
	members := []Member{{ID: "node-0", Addr: "127.0.0.1:1"}, {ID: "node-1", Addr: "127.0.0.1:1"}, {ID: "node-2", Addr: "127.0.0.1:1"}}
	var sps [3]*Splitter
	for i := range sps {
		o := Options{
			Self: members[i].ID, Members: members, DataDir: b.TempDir(), Local: &nullSink{}, Insecure: true,
			BatchMaxAge: -1, RetryMin: time.Hour, RetryMax: time.Hour, Logger: slog.New(slog.DiscardHandler),
		}
		switch {
		case k > 0:
			o.PeerCache = func() Cache { return cache.NewClock(k) }
		case k < 0:
			o.PeerCache = func() Cache { return mapCache{} }
		}
		sp, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		sps[i] = sp
	}
	idx := map[NodeID]int{"node-0": 0, "node-1": 1, "node-2": 2}
	ctx := context.Background()
	for _, p := range pages {
		if err := sps[idx[sps[0].Ownership().Owner(p.host)]].Route(ctx, p.links); err != nil {
			b.Fatal(err)
		}
	}
	var out [3]Stats
	for i, sp := range sps {
		if err := sp.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		out[i] = sp.Stats()
		if err := sp.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return out
}
