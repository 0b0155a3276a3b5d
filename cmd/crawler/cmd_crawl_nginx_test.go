package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/realweb"
)

// `crawler crawl --resolve HOST=[::1]:PORT` reaches a real server over IPv6
// loopback: nginx (internal/realweb) serves a small site on its [::1]
// plain-HTTP port only (the port no IPv4 listener has), and the crawl
// fetches exactly the site's pages, each once, as nginx's access log
// confirms.
func TestCrawlResolveIPv6Nginx(t *testing.T) {
	root := t.TempDir()
	site := filepath.Join(root, "v6.test")
	pages := map[string]string{
		"index.html": `<a href="a.html">a</a> <a href="/b.html">b</a>`,
		"a.html":     `<a href="c.html">c (a 404)</a>`,
		"b.html":     `<a href="index.html">home</a>`,
	}
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range pages {
		if err := os.WriteFile(filepath.Join(site, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := realweb.StartNginxT(t, realweb.NginxOptions{Root: root})
	seeds := filepath.Join(t.TempDir(), "seeds")
	if err := os.WriteFile(seeds, []byte("http://v6.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	code, out, errOut := runCLI(t, "crawl", "--seeds", seeds, "--data", data, "--allow-private", "--scope", "host",
		"--resolve", "v6.test="+n.HTTP6.String(), "--factor", "0", "--min-delay", "0", "--due-flush", "20ms",
		"--progress", "0", "--cache-advice=false", "--sitemaps", "off")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	es, err := crawl.ReadLogFile(filepath.Join(data, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		if e.Outcome != crawl.OutcomeRobots {
			got = append(got, e.URL)
		}
	}
	sort.Strings(got)
	want := []string{"http://v6.test/", "http://v6.test/a.html", "http://v6.test/b.html", "http://v6.test/c.html", "http://v6.test/index.html"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fetched %q, want %q", got, want)
	}
	reqs, err := n.Settled(6, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range reqs {
		if r.Scheme == "http" && r.Host == "v6.test" {
			seen[r.URI]++
		}
	}
	for _, p := range []string{"/robots.txt", "/", "/a.html", "/b.html", "/c.html", "/index.html"} {
		if seen[p] != 1 {
			t.Errorf("nginx's [::1] listener answered %s %d times, want once (access log %v)", p, seen[p], seen)
		}
	}
}
