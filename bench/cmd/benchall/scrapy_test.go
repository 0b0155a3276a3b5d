package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScrapyFetchesEachURLOnce crawls a tiny web with Scrapy alone and
// checks its per-fetch log against the oracle: every URL fetched, none
// twice, none extra. Scrapy's own duplicate filter keeps "http://h:80/x" and
// "/d/%2e/p" apart from "http://h/x" and "/d/p", its start requests bypass
// the filter, and its meta-refresh middleware turns a page with a
// <meta http-equiv=refresh> into a redirect whose links are never read: the
// spider must normalise every URL as the oracle does (WHATWG) before
// requesting it, send the seeds through the filter and read a refresh URL as
// a link (as Sextant's extractor does), with the middleware off.
func TestScrapyFetchesEachURLOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and crawls; skipped with -short")
	}
	if _, err := os.Stat(scrapyPython); err != nil {
		t.Skipf("no %s (Debian python3-scrapy)", scrapyPython)
	}
	dir := t.TempDir()
	root := os.Getenv("SEXTANT_BENCH_ROOT")
	if root == "" {
		root = "../../.."
	}
	o := options{out: filepath.Join(dir, "B.md"), work: filepath.Join(dir, "work"), root: root, hosts: 8, pages: 240, reps: 1,
		budget: 10 * time.Minute, workers: 8, nodeWorkers: 3, kinds: []string{"scrapy"},
		runTimeout: 4 * time.Minute, netns: true}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := measure(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(rep.Runs))
	}
	r := rep.Runs[0]
	t.Logf("scrapy: %s", r.summary())
	if r.Err != "" {
		t.Fatalf("scrapy failed: %s", r.Err)
	}
	if r.FetchedTwice != 0 || r.Missing != 0 || r.Extra != 0 || r.Distinct != r.OracleSize {
		t.Errorf("scrapy vs the oracle (%d URLs): %d fetched twice, %d missing %v, %d extra %v, %d distinct; want 0 0 0 %d",
			r.OracleSize, r.FetchedTwice, r.Missing, r.MissingEx, r.Extra, r.ExtraEx, r.Distinct, r.OracleSize)
	}
}

// TestSpiderWHATWG: the spider's whatwg() writes the spellings simweb
// uses as the harness's normURL (the WHATWG parser the oracle uses) does.
func TestSpiderWHATWG(t *testing.T) {
	if _, err := os.Stat(scrapyPython); err != nil {
		t.Skipf("no %s (Debian python3-scrapy)", scrapyPython)
	}
	in := []string{
		"http://h00001.sim.test/",
		"HTTP://H00001.Sim.TEST:80/d0/p1.html",
		"http://h00001.sim.test:80",
		"https://h00001.sim.test:443/a?x=1",
		"http://h00001.sim.test:8080/a",
		"http://h00001.sim.test/d0/%2e/p1.html",
		"http://h00001.sim.test/d0/%2E%2e/p1.html",
		"http://h00001.sim.test/d0/x/../p1.html",
		"http://h00001.sim.test/d0/./p1.html?view=print#frag",
		"http://h00001.sim.test/d0/..",
		"http://h00001.sim.test/d0/.",
		"http://h00001.sim.test/a b/caf\u00e9.html?q=a b'c",
		"http://h00001.sim.test/a%20b/caf%C3%A9.html",
		"http://h00001.sim.test/p?",
		"http://h00001.sim.test/%7e/x", // (no "^": whatwg-url v0.6.2, normURL, predates its escape; internal/urlnorm and the spider escape it)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sextant_spider.py"), scrapySpider, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(scrapyPython, "-c", "import sys, sextant_spider as s\nfor l in sys.stdin.read().split('\\n'):\n    print(s.whatwg(l))")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join(in, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != len(in) {
		t.Fatalf("%d lines out for %d in: %q", len(got), len(in), got)
	}
	for i, u := range in {
		if want := normURL(u); got[i] != want {
			t.Errorf("whatwg(%q) = %q, want %q", u, got[i], want)
		}
	}
}
