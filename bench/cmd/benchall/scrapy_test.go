package main

import (
	"context"
	"os"
	"path/filepath"
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
