package crawl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/warc"
)

// exportSite: a page robots.txt refuses (seen, not fetched), a redirect,
// an embed and enough links that a stop after 3 fetches leaves URLs queued.
const exportSite = `e.hop.test/robots.txt 200 User-agent: *\nDisallow: /private
e.hop.test/ 200 <a href="/a">a</a><a href="/private">p</a><img src="/i.png"><a href="/old">o</a>
e.hop.test/a 200 <a href="/b">b</a><a href="/c">c</a>
e.hop.test/b 200 b
e.hop.test/c 200 c
e.hop.test/i.png 200 png
e.hop.test/old 301 http://e.hop.test/new
e.hop.test/new 200 new`

func exportAll(t *testing.T, dir, what string) []ExportedURL {
	t.Helper()
	var out []ExportedURL
	if err := Export(dir, what, func(u ExportedURL) error { out = append(out, u); return nil }); err != nil {
		t.Fatalf("Export(%s): %v", what, err)
	}
	return out
}

func urlsOf(us []ExportedURL) []string {
	var s []string
	for _, u := range us {
		s = append(s, u.URL)
	}
	sort.Strings(s)
	return s
}

// Export's three kinds equal what the data directory's stores say: queued
// = the frontier's entries (annotations split off into via and hops),
// fetched = crawl.log's requests, seen = their union plus the URLs
// robots.txt refused; each URL once. While a node has the directory open,
// Export fails and says why.
func TestExportMatchesData(t *testing.T) {
	site := newSpecSite(t)
	site.define(t, exportSite)
	dir := t.TempDir()
	o := site.options(t, dir, "hop.test")
	o.Sitemaps, o.Workers, o.MaxFetches = SitemapsOff, 1, 3
	n, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	crawlToEnd(t, n, []string{"http://e.hop.test/"}, time.Minute)

	// What the stores say, read directly.
	es, err := ReadLogFile(filepath.Join(dir, crawlLogFile))
	if err != nil {
		t.Fatal(err)
	}
	var fetched, refused []string
	for _, e := range es {
		if isRobotsTxtLine(e) {
			continue // robots.txt's own line: no URL the crawl admitted
		}
		if e.Outcome == OutcomeRobots {
			refused = append(refused, e.URL)
		} else {
			fetched = append(fetched, e.URL)
		}
	}
	fr, err := frontier.Open(filepath.Join(dir, frontierDir), frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var queued []frontier.Item
	if _, err := fr.Scan(func(it frontier.Item) error { queued = append(queued, it); return nil }); err != nil {
		t.Fatal(err)
	}
	fr.Close()
	if len(fetched) != 3 || len(queued) == 0 || len(refused) != 1 {
		t.Fatalf("stopped crawl: fetched %v, refused %v, %d queued: want 3, 1, some", fetched, refused, len(queued))
	}

	gotQ := exportAll(t, dir, ExportQueued)
	var wantQ []string
	for _, it := range queued {
		bare, a := splitAnnot(it.URL)
		wantQ = append(wantQ, bare)
		i := slices.IndexFunc(gotQ, func(u ExportedURL) bool { return u.URL == bare })
		if i < 0 || gotQ[i].Via != a.via || gotQ[i].Hops != a.hops || gotQ[i].Via == "" || *gotQ[i].Depth != int(it.Depth) ||
			hopsDepth(a.hops) != it.Depth { // what a peer receiving the URL would give it
			t.Errorf("queued %q (via %q hops %q depth %d) exported as %+v", bare, a.via, a.hops, it.Depth, gotQ)
		}
	}
	sort.Strings(wantQ)
	if g := urlsOf(gotQ); !slices.Equal(g, wantQ) {
		t.Errorf("queued export %v, frontier %v", g, wantQ)
	}
	sort.Strings(fetched)
	if g := urlsOf(exportAll(t, dir, ExportFetched)); !slices.Equal(g, fetched) {
		t.Errorf("fetched export %v, crawl.log %v", g, fetched)
	}
	wantS := slices.Concat(fetched, refused, wantQ)
	sort.Strings(wantS)
	if g := urlsOf(exportAll(t, dir, ExportSeen)); !slices.Equal(g, slices.Compact(wantS)) {
		t.Errorf("seen export %v, want %v", g, wantS)
	}

	// A node on the directory holds the frontier's lock.
	o.MaxFetches = 0
	n, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	err = Export(dir, ExportQueued, func(ExportedURL) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "is a node running") {
		t.Errorf("Export on an open node's directory: %v, want an error saying a node may be running", err)
	}
	n.Close()
	if err := Export(t.TempDir(), ExportSeen, func(ExportedURL) error { return nil }); !errors.Is(err, ErrNotDataDir) {
		t.Errorf("Export of an empty directory: %v, want ErrNotDataDir", err)
	}
	if err := Export(dir, "all", func(ExportedURL) error { return nil }); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Export(all): %v, want ErrInvalidOptions", err)
	}
}

// The JSON form of a crawl log converts back to the same bytes: every
// field, the new provenance fields included, survives `crawler log --json`.
func TestLogJSONRoundTrip(t *testing.T) {
	site := newSpecSite(t)
	site.define(t, exportSite)
	dir := t.TempDir()
	o := site.options(t, dir, "hop.test")
	n, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	crawlToEnd(t, n, []string{"http://e.hop.test/"}, time.Minute)
	orig, err := os.ReadFile(filepath.Join(dir, crawlLogFile))
	if err != nil {
		t.Fatal(err)
	}
	// A line with every field, including a WARC location.
	var extra bytes.Buffer
	l := NewCrawlLog(&extra)
	if err := l.Write(LogEntry{Time: time.UnixMilli(1764000000123), Node: "n1", URL: "http://e.hop.test/w", Status: 200, Outcome: OutcomeOK,
		Bytes: 5, ContentType: "text/html", Duration: 7 * time.Millisecond, Links: 2, Note: "x y", Epoch: 3, Robots: "noindex",
		Canonical: "http://e.hop.test/c", Via: "http://e.hop.test/", Hops: "3+" + strings.Repeat("L", 50), Digest: "sha1:AAAA",
		Proto: "HTTP/2.0", WARCFile: "SEXTANT-n1-20261126-00001.warc.gz", WARCOffset: 12345}); err != nil {
		t.Fatal(err)
	}
	orig = append(orig, extra.Bytes()...)
	var js bytes.Buffer
	st, err := WriteLogJSON(&js, bytes.NewReader(orig))
	if err != nil || st.Malformed != 0 {
		t.Fatalf("WriteLogJSON: %+v, %v", st, err)
	}
	var back bytes.Buffer
	l = NewCrawlLog(&back)
	dec := json.NewDecoder(&js)
	for dec.More() {
		var j LogJSON
		if err := dec.Decode(&j); err != nil {
			t.Fatal(err)
		}
		e, err := j.Entry()
		if err != nil {
			t.Fatal(err)
		}
		if j.Hops != "" && j.HopCount != HopCount(j.Hops) {
			t.Errorf("hop_count %d for %q", j.HopCount, j.Hops)
		}
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if back.String() != string(orig) {
		t.Errorf("round trip through JSON:\n%s\nwant:\n%s", back.String(), orig)
	}
	if !strings.Contains(string(orig), " via=") || !strings.Contains(string(orig), " hops=") || !strings.Contains(string(orig), " digest=") {
		t.Errorf("the crawl's log has no provenance fields:\n%s", orig)
	}
}

// locatingWARC is a WARC writer that says where each record went.
type locatingWARC struct {
	mu sync.Mutex
	n  int64
}

func (w *locatingWARC) WriteFetch(f warc.Fetch) (warc.Location, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return warc.Location{File: "TEST-n1-00001.warc.gz", Offset: 1000 * w.n, PayloadDigest: fmt.Sprintf("sha1:REC%d", w.n)}, nil
}

// A WARC writer's Location has each fetch's line record
// the file and offset of its response record, and its payload digest.
func TestCrawlLogWARCLocation(t *testing.T) {
	site := newSpecSite(t)
	site.define(t, exportSite)
	dir := t.TempDir()
	o := site.options(t, dir, "hop.test")
	o.WARC = &locatingWARC{}
	n, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	crawlToEnd(t, n, []string{"http://e.hop.test/"}, time.Minute)
	es, err := ReadLogFile(filepath.Join(dir, crawlLogFile))
	if err != nil {
		t.Fatal(err)
	}
	offs := map[int64]bool{}
	for _, e := range es {
		if e.Outcome == OutcomeRobots {
			continue
		}
		if e.WARCFile != "TEST-n1-00001.warc.gz" || e.WARCOffset%1000 != 0 || e.Digest != fmt.Sprintf("sha1:REC%d", e.WARCOffset/1000) || offs[e.WARCOffset] {
			t.Errorf("%s: warc %s:%d digest %s", e.URL, e.WARCFile, e.WARCOffset, e.Digest)
		}
		offs[e.WARCOffset] = true
	}
	if len(offs) != 8 { // 7 pages and /sitemap.xml (404); /private refused
		t.Errorf("%d fetches with a WARC location, want 8", len(offs))
	}
}
