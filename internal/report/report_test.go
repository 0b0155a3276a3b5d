package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/mrc"
)

type fixedCurve []mrc.Point

func (c fixedCurve) Curve(string) ([]mrc.Point, error) { return c, nil }

func stats(id string, fetches uint64) crawl.Stats {
	st := crawl.Stats{ID: id, Fetches: fetches, FetchOK: fetches - 2, FetchHTTPErr: 2, Bytes: fetches * 1000,
		LinksFound: 10 * fetches, LinksLocal: 6 * fetches, LinksRemote: 4 * fetches, CacheHits: 3 * fetches, CacheMisses: 3 * fetches}
	st.DUE.EntriesOnDisk, st.DUE.BytesOnDisk = fetches, int64(7*fetches)
	return st
}

func TestBuildCluster(t *testing.T) {
	curve := fixedCurve{{K: 1, MissRatio: 1}, {K: 2, MissRatio: 0.6}, {K: 4, MissRatio: 0.3}, {K: 8, MissRatio: 0.1}}
	var in []Input
	for i, id := range []string{"a", "b"} {
		sp := hostsplit.Stats{Self: hostsplit.NodeID(id), DiscoveredRemote: 400,
			Peers: []hostsplit.PeerStats{{Peer: "a"}, {Peer: "b"}}}
		sp.Total.Discovered, sp.Total.SentURLs, sp.Total.WireBytes, sp.Total.RawBytes = 400, 100, 500, 2000
		in = append(in, Input{Stats: stats(id, uint64(100*(i+1))), Split: &sp, Front: curve, Cross: curve,
			Cache: CacheConfig{Workers: 2, CachePerWorker: 1, PeerCache: 2}})
	}
	r := Build(KindDemo, in, 10*time.Second)
	if r.Fetches != 300 || r.FetchOK != 296 || r.HTTPErrors != 4 || r.PagesPerSecond != 30 || r.Nodes != 2 {
		t.Errorf("totals: %+v", r)
	}
	if r.FrontCacheHit != 0.5 || r.LocalShare != 0.6 || r.TrafficReduction != 0.75 || r.WireBytesPerURL != 5 || r.WireRatio != 0.25 {
		t.Errorf("rates: hit %v local %v reduction %v wire/URL %v ratio %v", r.FrontCacheHit, r.LocalShare, r.TrafficReduction, r.WireBytesPerURL, r.WireRatio)
	}
	if r.DUEBytesPerURL != 7 || r.PerNode[1].DUEBytesPerURL != 7 {
		t.Errorf("DUE bytes per URL %v", r.DUEBytesPerURL)
	}
	n := r.PerNode[0]
	if n.FrontAdvice == nil || n.PeerAdvice == nil || n.Peers != 1 || n.PeerAdvice.Workers != 1 || n.FrontAdvice.CurrentK != 2 {
		t.Fatalf("advice: %+v", n)
	}
	if math.Abs(n.FrontAdvice.CurrentMiss-0.6) > 1e-12 || !n.FrontAdvice.Reached20 || n.FrontAdvice.K20 != 8 {
		t.Errorf("front advice %+v", n.FrontAdvice)
	}
	var b bytes.Buffer
	r.WriteText(&b, "title", "extra line")
	for _, want := range []string{"== title, 10.0 s", "extra line", "fetches         300: ok 296", "traffic reduced by 75.0%",
		"7.00 disk bytes per URL", "cache advice    a front", "b per-peer (cross-machine)", "node      fetches"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil || back.Fetches != 300 || back.PerNode[0].PeerAdvice == nil {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

func TestBuildSingleNode(t *testing.T) {
	r := Build(KindCrawl, []Input{{Stats: stats("n0", 50), Cache: CacheConfig{Workers: 4, CachePerWorker: 8}}}, time.Second)
	var b bytes.Buffer
	r.WriteText(&b, "crawl")
	s := b.String()
	if strings.Contains(s, "private address") {
		t.Errorf("private address line without refusals:\n%s", s)
	}
	if !strings.Contains(s, "cross-machine   none (one node)") || !strings.Contains(s, "cache advice    none") || strings.Contains(s, "node      fetches") {
		t.Errorf("single node without estimator:\n%s", s)
	}
	if r.PerNode[0].FrontAdvice != nil || r.PerNode[0].PeerAdvice != nil {
		t.Errorf("advice without curves: %+v", r.PerNode[0])
	}
}

// Refused private addresses are summed and shown.
func TestPrivateRefused(t *testing.T) {
	a, b := stats("a", 10), stats("b", 10)
	a.PrivateRefused, b.PrivateRefused = 2, 3
	r := Build(KindCrawl, []Input{{Stats: a}, {Stats: b}}, time.Second)
	var buf bytes.Buffer
	r.WriteText(&buf, "crawl")
	if r.PrivateRefused != 5 || !strings.Contains(buf.String(), "private address 5 URLs refused") {
		t.Errorf("PrivateRefused %d, text:\n%s", r.PrivateRefused, buf.String())
	}
	if raw, _ := json.Marshal(r); !strings.Contains(string(raw), `"private_address_refused":5`) {
		t.Errorf("JSON: %s", raw)
	}
}

// The fetcher's TLS, HTTP/2 and DNS counters are summed over nodes; the
// text names each failure kind that occurred, and nothing when none did.
func TestNetStats(t *testing.T) {
	a, b := stats("a", 10), stats("b", 10)
	a.Fetcher.TLSHandshakes, a.Fetcher.TLSResumed, a.Fetcher.HTTP2 = 4, 1, 7
	b.Fetcher.TLSHandshakes, b.Fetcher.TLSResumed = 2, 2
	a.Fetcher.TLSUnknownAuthority, b.Fetcher.TLSUnknownAuthority, b.Fetcher.DNSNotFound = 1, 2, 5
	r := Build(KindCrawl, []Input{{Stats: a}, {Stats: b}}, time.Second)
	var buf bytes.Buffer
	r.WriteText(&buf, "crawl")
	want := "tls / dns       6 TLS handshakes (3 resumed), 7 HTTP/2 responses; failures (robots.txt included): unknown authority 3, dns not found 5\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, buf.String())
	}
	raw, _ := json.Marshal(r)
	for _, w := range []string{`"tls_handshakes":6`, `"tls_resumed":3`, `"tls_unknown_authority":3`, `"dns_not_found":5`} {
		if !strings.Contains(string(raw), w) {
			t.Errorf("JSON lacks %s: %s", w, raw)
		}
	}
	buf.Reset()
	Build(KindCrawl, []Input{{Stats: stats("c", 3)}}, time.Second).WriteText(&buf, "crawl")
	if strings.Contains(buf.String(), "tls / dns") {
		t.Errorf("a plain-HTTP crawl without failures printed the line:\n%s", buf.String())
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := Progress{W: &b, Live: true}
	p.Print("one")
	p.Print("two")
	p.End()
	p.End()
	if got, want := b.String(), "\r\033[Kone\r\033[Ktwo\n"; got != want {
		t.Errorf("live: %q, want %q", got, want)
	}
	b.Reset()
	p = Progress{W: &b}
	p.Print("one")
	p.Print("two")
	p.End()
	if got, want := b.String(), "one\ntwo\n"; got != want {
		t.Errorf("lines: %q, want %q", got, want)
	}
}

// Pages with robots directives and links not followed are summed and
// shown; the line is absent when there were none.
func TestRobotsDirectiveCounts(t *testing.T) {
	a, b := stats("a", 10), stats("b", 10)
	a.PagesNoFollow, a.PagesNoIndex, a.LinksNoFollow = 2, 1, 7
	b.PagesNoFollow, b.LinksNoFollow = 1, 3
	r := Build(KindCrawl, []Input{{Stats: a}, {Stats: b}}, time.Second)
	var buf bytes.Buffer
	r.WriteText(&buf, "crawl")
	if r.PagesNoFollow != 3 || r.PagesNoIndex != 1 || r.LinksNoFollow != 10 ||
		!strings.Contains(buf.String(), "robots meta     3 pages nofollow, 1 noindex (robots <meta>, X-Robots-Tag); 10 links not followed") {
		t.Errorf("report %+v, text:\n%s", r, buf.String())
	}
	if raw, _ := json.Marshal(r); !strings.Contains(string(raw), `"pages_nofollow":3,"pages_noindex":1,"links_not_followed_nofollow":10`) {
		t.Errorf("JSON: %s", raw)
	}
	buf.Reset()
	Build(KindCrawl, []Input{{Stats: stats("c", 10)}}, time.Second).WriteText(&buf, "crawl")
	if strings.Contains(buf.String(), "robots meta") {
		t.Errorf("robots line without directives:\n%s", buf.String())
	}
}

// Sitemap counts are summed over nodes, shown once sitemaps were read,
// and in the JSON.
func TestSitemaps(t *testing.T) {
	a, b := stats("a", 10), stats("b", 10)
	var buf bytes.Buffer
	Build(KindCrawl, []Input{{Stats: a}}, time.Second).WriteText(&buf, "crawl")
	if strings.Contains(buf.String(), "sitemaps") {
		t.Errorf("sitemap line without sitemaps:\n%s", buf.String())
	}
	a.Sitemap = crawl.SitemapStats{Origins: 2, Fetches: 3, Found: 40, Admitted: 38, Filtered: 2, OutOfPath: 1, OverLimit: 1}
	b.Sitemap = crawl.SitemapStats{Origins: 1, Fetches: 1, Found: 5, Admitted: 5, Invalid: 4, Children: 2, TooDeep: 1}
	r := Build(KindCrawl, []Input{{Stats: a}, {Stats: b}}, time.Second)
	buf.Reset()
	r.WriteText(&buf, "crawl")
	s := buf.String()
	for _, want := range []string{"sitemaps        4 fetched", "3 hosts probed", "45 URLs found, 43 admitted, 2 out of scope",
		"dropped 1 against the location rule, 4 invalid, 1 over 50,000 per file", "2 index children, 1 too deep"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
	if raw, _ := json.Marshal(r); !strings.Contains(string(raw), `"sitemaps":{"origins":3,"discovered":0,"fetches":4,`) {
		t.Errorf("JSON: %s", raw)
	}
}
