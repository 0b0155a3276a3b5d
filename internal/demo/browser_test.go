package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// TestStatusPageInBrowser drives headless Chromium (Debian's chromium
// package; .ci/run installs it) against a running 2-node demo cluster: the
// page must render charts with live numbers — the page count changes
// between two loads a few seconds apart, pages/s is positive, the pages/s
// chart has a line — both caches' miss-ratio curves with advice, the busiest
// hosts and the other node in the cluster view (asked over gRPC); a
// screenshot is saved (SEXTANT_SCREENSHOT names the file, default in
// t.TempDir). The crawl is cancelled once the page is checked, so the test
// takes well under a minute. Gated by SEXTANT_BROWSER=1 (set by .ci/run).
func TestStatusPageInBrowser(t *testing.T) {
	if os.Getenv("SEXTANT_BROWSER") != "1" {
		t.Skip("set SEXTANT_BROWSER=1 to drive headless Chromium")
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("SEXTANT_BROWSER=1 but chromium is not installed (apt-get install chromium)")
	}
	dir := t.TempDir()
	shot := os.Getenv("SEXTANT_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "status.png")
	}
	chrome := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-extensions", "--user-data-dir=" + filepath.Join(dir, "chrome"), "--virtual-time-budget=3000"}
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	pagesRe := regexp.MustCompile(`id="pages">([0-9.]+k?)<`)
	rateRe := regexp.MustCompile(`id="rate">([0-9.]+k?)<`)
	var dom1, dom2 []byte
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ready := func(url string) {
		defer cancel()                      // the page is what this test is about: stop the crawl then
		time.Sleep(1500 * time.Millisecond) // let pages be fetched and curves fill
		page := url + "node-0/?cluster=1"
		dom1 = chrome("--dump-dom", page)
		time.Sleep(2 * time.Second)
		dom2 = chrome("--dump-dom", page)
		chrome("--window-size=1300,2150", "--screenshot="+shot, page)
	}
	start := time.Now()
	_, err = Run(ctx, Options{Web: simweb.SmallConfig(), Nodes: 2, Workers: 8, StatusReady: ready,
		Progress: 5 * time.Second}, &bytes.Buffer{})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	t.Logf("demo and browser: %v", time.Since(start).Round(time.Millisecond))
	p1, p2 := pagesRe.FindSubmatch(dom1), pagesRe.FindSubmatch(dom2)
	if p1 == nil || p2 == nil || bytes.Equal(p1[1], p2[1]) {
		t.Errorf("page count did not change between two loads: %q then %q", p1, p2)
	} else {
		t.Logf("pages: %s then %s", p1[1], p2[1])
	}
	if r := rateRe.FindSubmatch(dom2); r == nil || string(r[1]) == "0" {
		t.Errorf("no positive pages/s: %q", r)
	}
	for _, re := range []string{
		`data-polls="[1-9]`, // the page polled status.json
		`<svg id="rateChart"[^>]*><line.*?<path d="M[0-9.]+,[0-9.]+L[^"]+"[^>]*series`, // pages/s line, ≥ 2 points
		`class="mrc"`, `due-front \(per worker\)`, `per-peer splitter caches — size 4096/peer`, // both caches
		`<svg[^>]*class="mrc"[^>]*>.*?<path d="M[0-9.]+,[0-9.]+(L[0-9.]+,[0-9.]+){5,}"`, // a curve of ≥ 6 points
		`knee [0-9.]+k?/worker`, // the advice
		`<table id="busiest"><tr>.*?</tr><tr><td>h[0-9]+\.sim\.test</td>`, // busiest hosts filled
		`<table id="cluster">.*?<td>node-1</td><td>ok</td>`,               // node-1 asked over gRPC
	} {
		if !regexp.MustCompile(re).Match(dom2) {
			t.Errorf("rendered status page lacks %s", re)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%.4000s", dom2)
	}
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 10000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}
