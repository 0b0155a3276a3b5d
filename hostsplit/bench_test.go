package hostsplit

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sextant-crawler/sextant/internal/fixture"
)

// realisticSimURLs returns n URLs in discovery order as a crawler of a
// simweb-like web sees them: pages on many hosts, most links to the page's
// own host, paths of a few segments drawn from a vocabulary.
func realisticSimURLs(n, hosts int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"index", "news", "about", "products", "archive", "2024", "blog", "docs", "item", "page", "user", "category", "tag", "search", "help"}
	out := make([]string, 0, n)
	for len(out) < n {
		host := r.IntN(hosts)
		links := 1 + r.IntN(60)
		for range min(links, n-len(out)) {
			h := host
			if r.IntN(5) == 0 {
				h = r.IntN(hosts)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "http://h%05d.sim.test/", h)
			for d := r.IntN(4); d > 0; d-- {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte('/')
			}
			fmt.Fprintf(&b, "%d.html", r.IntN(5000))
			out = append(out, b.String())
		}
	}
	return out
}

// wikiURLs returns the absolute http(s) URLs of every href and src in the
// wiki mirror's pages (testdata/sites, unpacked by internal/fixture), in
// page order.
func wikiURLs(tb testing.TB) []string {
	root := filepath.Join(fixture.Sites(tb), fixture.WikiHost)
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		base, err := url.Parse("https://wiki.contextgarden.net/" + filepath.ToSlash(rel))
		if err != nil {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		z := html.NewTokenizer(f)
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				return nil
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			for {
				k, v, more := z.TagAttr()
				if ks := string(k); ks == "href" || ks == "src" {
					if ref, err := url.Parse(strings.TrimSpace(string(v))); err == nil {
						u := base.ResolveReference(ref)
						u.Fragment = ""
						if (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
							out = append(out, u.String())
						}
					}
				}
				if !more {
					break
				}
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// batches cuts a discovery-ordered URL stream into batches of up to size
// distinct URLs, as a peer's buffer does.
func batches(urls []string, size int) [][]string {
	var out [][]string
	seen := map[string]bool{}
	var cur []string
	for _, u := range urls {
		if k := withoutFragment(u); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		cur = append(cur, u)
		if len(cur) == size {
			out = append(out, cur)
			cur = nil
			clear(seen)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

type urlSet struct {
	name string
	urls func(testing.TB) []string
}

var urlSets = []urlSet{
	{"sim", func(testing.TB) []string { return realisticSimURLs(200000, 10000, 1) }},
	{"sim-peer", func(tb testing.TB) []string {
		// What one peer of three receives: URLs of the hosts it owns.
		r, _ := NewRing([]NodeID{"node-0", "node-1", "node-2"}, false)
		var out []string
		for _, u := range realisticSimURLs(300000, 10000, 2) {
			if o, _ := r.OwnerOfURL(u); o == "node-1" {
				out = append(out, u)
			}
		}
		return out
	}},
	{"sim-annotated", func(testing.TB) []string { return annotate(realisticSimURLs(200000, 10000, 1), 1) }},
	{"wiki", wikiURLs},
}

// annotate gives each URL of a realisticSimURLs stream the annotations
// internal/crawl adds (annot.go): a hop path of 1–6 letters and the page
// the link was found on, on the link's host's origin most of the time,
// stored as the length of the prefix it shares with the URL, '.', and
// the rest; the links of one page (runs of up to 60) share it.
func annotate(urls []string, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]string, 0, len(urls))
	var via, hops string
	for i, u := range urls {
		if i == 0 || r.IntN(30) == 0 { // a new page
			o := u[:strings.Index(u[len("http://"):], "/")+len("http://")]
			via = fmt.Sprintf("%s/%s/%d.html", o, []string{"news", "blog", "docs", "tag"}[r.IntN(4)], r.IntN(5000))
			hops = "LLLLLL"[:1+r.IntN(6)]
		}
		n := 0
		for n < len(u) && n < len(via) && u[n] == via[n] {
			n++
		}
		v := via
		if n > strings.Index(u[len("http://"):], "/")+len("http://") {
			v = fmt.Sprintf("%d.%s", n, via[n:])
		}
		out = append(out, u+"#h="+hops+"#v="+v)
	}
	return out
}

// BenchmarkWireSize reports bytes on the wire per URL and as a share of raw
// URL bytes, per URL set, codec and batch size, against protobuf's
// `repeated string` as the baseline in the same run.
func BenchmarkWireSize(b *testing.B) {
	for _, set := range urlSets {
		urls := set.urls(b)
		b.Logf("%s: %d URLs discovered", set.name, len(urls))
		for _, size := range []int{100, 1000} {
			bs := batches(urls, size)
			raw, nURLs, repeated := 0, 0, 0
			for _, batch := range bs {
				for _, u := range batch {
					raw += len(u)
					repeated += 1 + uvarintLen(len(u)) + len(u) // tag, length, bytes
					nURLs++
				}
			}
			b.Run(fmt.Sprintf("%s/batch=%d/repeated-string", set.name, size), func(b *testing.B) {
				for b.Loop() {
				}
				b.ReportMetric(float64(repeated)/float64(nURLs), "wireB/URL")
				b.ReportMetric(float64(raw)/float64(nURLs), "rawB/URL")
				b.ReportMetric(100*float64(repeated)/float64(raw), "%raw")
				b.ReportMetric(float64(nURLs), "URLs")
			})
			for _, c := range codecs {
				b.Run(fmt.Sprintf("%s/batch=%d/%s", set.name, size, c), func(b *testing.B) {
					wire := 0
					for b.Loop() {
						wire = 0
						for _, batch := range bs {
							enc, err := EncodeBatch(nil, batch, c)
							if err != nil {
								b.Fatal(err)
							}
							wire += len(enc) + 12 // + Batch fields: sender, epoch, seq, count
						}
					}
					b.SetBytes(int64(raw))
					b.ReportMetric(float64(wire)/float64(nURLs), "wireB/URL")
					b.ReportMetric(float64(raw)/float64(nURLs), "rawB/URL")
					b.ReportMetric(100*float64(wire)/float64(raw), "%raw")
				})
			}
		}
	}
}

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

// BenchmarkDecode measures decoding speed (MB/s of raw URL bytes) of
// 1000-URL batches.
func BenchmarkDecode(b *testing.B) {
	bs := batches(realisticSimURLs(100000, 10000, 3), 1000)
	for _, c := range codecs {
		var encs [][]byte
		raw := 0
		for _, batch := range bs {
			enc, _ := EncodeBatch(nil, batch, c)
			encs = append(encs, enc)
			raw += totalLen(batch)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(raw))
			for b.Loop() {
				for _, enc := range encs {
					if _, err := DecodeBatch(enc, Limits{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

type nullSink struct{ n atomic.Int64 }

func (s *nullSink) Deliver(_ context.Context, urls []string) error {
	s.n.Add(int64(len(urls)))
	return nil
}

// BenchmarkRoute measures URLs/s through Route on node-0 of a 3-node
// loopback cluster with mTLS: "local" routes only URLs node-0 owns (the
// local sink's cost is nil), "mixed" routes the whole stream (about 1/3
// local, 2/3 to peers: peer cache off, batches spooled with fsync and sent).
// Every node's Local sink only counts URLs.
// The clock stops when every remote URL has been acknowledged.
func BenchmarkRoute(b *testing.B) {
	all := realisticSimURLs(200000, 10000, 4)
	for _, mode := range []string{"local", "mixed"} {
		b.Run(mode, func(b *testing.B) {
			// Batches here are full (1000 URLs) and go at once; only the
			// last, partial ones would wait CoalesceMaxAge for company,
			// which measures the timer, not Route.
			c := newTestCluster(b, 3, func(o *Options) { o.Local, o.CoalesceMaxAge = &nullSink{}, -1 })
			src := c.nodes[0]
			urls := all
			if mode == "local" {
				urls = nil
				for _, u := range all {
					if o, _ := src.sp.Ownership().Ring().OwnerOfURL(u); o == src.id {
						urls = append(urls, u)
					}
				}
			}
			ctx := context.Background()
			routed := 0
			for b.Loop() {
				for s := 0; s < len(urls); s += 60 { // a page's links per call
					if err := src.sp.Route(ctx, urls[s:min(s+60, len(urls))]); err != nil {
						b.Fatal(err)
					}
				}
				routed += len(urls)
				if err := src.sp.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				for src.sp.Stats().Total.SpoolBatches > 0 {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(float64(routed)/b.Elapsed().Seconds(), "URLs/s")
			st := src.sp.Stats()
			b.ReportMetric(100*st.LocalShare(), "%local")
			if st.Total.SentURLs > 0 {
				b.ReportMetric(float64(st.Total.WireBytes)/float64(st.Total.SentURLs), "wireB/URL")
			}
		})
	}
}
