package crawl

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/warc/warctest"
)

// checkArchive validates every WARC file of dir with both readers and
// compares them with the crawl logs: one response (or revisit) record per
// fetch logged with a response, one more per robots.txt response, a CDXJ
// line per response and revisit record, no file left open. It returns the
// records.
func checkArchive(t *testing.T, dir string, logs ...string) []warctest.Rec {
	t.Helper()
	if open, _ := filepath.Glob(filepath.Join(dir, "*.open")); len(open) > 0 {
		t.Errorf("files left open: %v", open)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) == 0 {
		t.Fatal("no WARC file")
	}
	recs, err := warctest.ValidateAll(files)
	if err != nil {
		t.Fatal(err)
	}
	var pages, robots []string
	types := map[string]int{}
	for _, r := range recs {
		types[r.Type]++
		if r.Type != "response" && r.Type != "revisit" {
			continue
		}
		if strings.HasSuffix(r.URI, "/robots.txt") {
			robots = append(robots, r.URI)
		} else {
			pages = append(pages, r.URI)
		}
	}
	var logged []string
	hosts := map[string]bool{}
	for _, p := range logs {
		es, err := ReadLogFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Outcome == OutcomeRobots || e.Status <= 0 {
				continue // no request, or no response to archive
			}
			logged = append(logged, e.URL)
			if u, err := url.Parse(e.URL); err == nil {
				hosts[u.Host] = true
			}
		}
	}
	sort.Strings(pages)
	sort.Strings(logged)
	if missing := diffStrings(logged, pages); len(missing) > 0 {
		t.Errorf("%d fetches of crawl.log not archived, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
	// The other records are the hops of robots.txt redirect chains
	// (simweb's /robots/N.txt), which crawl.log does not list.
	hops := diffStrings(pages, logged)
	for _, h := range hops {
		if u, _ := url.Parse(h); u == nil || !strings.HasPrefix(u.Path, "/robots") {
			t.Errorf("record of %s: not in crawl.log", h)
		}
	}
	robots = append(robots, hops...)
	pages = pages[:len(pages)-len(hops)]
	robotsHosts := map[string]bool{}
	for _, r := range robots {
		u, _ := url.Parse(r)
		robotsHosts[u.Host] = true
	}
	for h := range hosts {
		if !robotsHosts[h] {
			t.Errorf("no robots.txt record for %s", h)
		}
	}
	if types["request"] != len(pages)+len(robots) {
		t.Errorf("%d request records for %d responses", types["request"], len(pages)+len(robots))
	}
	lines := 0
	for _, f := range files {
		b, err := os.ReadFile(strings.TrimSuffix(f, ".warc.gz") + ".cdxj")
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	}
	if lines != len(pages)+len(robots) {
		t.Errorf("%d CDXJ lines, %d response and revisit records", lines, len(pages)+len(robots))
	}
	t.Logf("%d files: %v; %d page fetches, %d robots.txt", len(files), types, len(pages), len(robots))
	return recs
}

// A crawl of simweb with --warc-dir archives every fetch with a response,
// robots.txt included, in files that both readers validate.
func TestCrawlWritesWARC(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	dir := t.TempDir()
	o := testNodeOptions(t, filepath.Join(dir, "data"), srv, web.Domain())
	o.WARCArchive = WARCArchive{Dir: filepath.Join(dir, "warc"), MaxSize: 256 << 10, Metadata: true}
	n, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, web.Seeds(), 2*time.Minute)
	if st.WARCErrors != 0 || st.WARCRecords == 0 {
		t.Errorf("WARC records %d, errors %d", st.WARCRecords, st.WARCErrors)
	}
	checkArchive(t, o.WARCArchive.Dir, filepath.Join(o.DataDir, "crawl.log"))
}

// A 3-node cluster sharing one WARC directory: each node writes its own
// files (PREFIX-NODEID-...), together one record per fetch.
func TestClusterWritesWARC(t *testing.T) {
	web, srv, _ := smallWeb(t, 1<<20)
	root := t.TempDir()
	wdir := filepath.Join(root, "warc")
	ms := startClusterWith(t, root, 3, srv, web.Domain(), func(o *Options) {
		o.WARCArchive = WARCArchive{Dir: wdir, MaxSize: 128 << 10}
	})
	if err := runCluster(t, ms, web.Seeds(), 3*time.Minute); err != nil {
		t.Error(err)
	}
	var logs []string
	for i := range ms {
		logs = append(logs, filepath.Join(root, fmt.Sprintf("node-%d", i), "crawl.log"))
		if fs, _ := filepath.Glob(filepath.Join(wdir, fmt.Sprintf("sextant-node-%d-*.warc.gz", i))); len(fs) == 0 {
			t.Errorf("node-%d wrote no WARC file", i)
		}
	}
	checkArchive(t, wdir, logs...)
}

// diffStrings is what sorted a has more than sorted b (as multisets).
func diffStrings(a, b []string) []string {
	m := map[string]int{}
	for _, s := range b {
		m[s]++
	}
	var out []string
	for _, s := range a {
		if m[s] > 0 {
			m[s]--
		} else {
			out = append(out, s)
		}
	}
	return out
}
