package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/simweb"
)

// TestStatusPageInBrowser drives headless Chromium (Debian's chromium
// package; .ci/run installs it) against a running demo cluster: the page
// must render charts with live numbers and both caches' miss-ratio curves,
// and a screenshot is saved. Gated by SEXTANT_BROWSER=1 (set by .ci/run).
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
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + filepath.Join(dir, "chrome"), "--virtual-time-budget=6000"}
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	var dom []byte
	ready := func(url string) {
		time.Sleep(2 * time.Second) // let pages be fetched and curves fill
		dom = chrome("--dump-dom", url+"node-0/?cluster=1")
		chrome("--window-size=1300,1800", "--screenshot="+shot, url+"node-0/?cluster=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Web: simweb.SmallConfig(), Nodes: 2, Workers: 8, StatusReady: ready,
		Progress: 5 * time.Second}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OracleMatch {
		t.Errorf("crawl differs from the oracle: %s", rep.OracleDiff)
	}
	for _, re := range []string{
		`data-polls="[1-9]`,                                                   // the page polled status.json
		`id="pages">[0-9.]+k?<`,                                               // a live page count
		`<path d="M[0-9.]+,[0-9.]+L[^"]+"[^>]*series`,                         // a chart line with two points or more
		`class="mrc"`, `due-front \(per worker\)`, `per-peer splitter caches`, // both caches' curves
		`node-1`, // the cluster view
	} {
		if !regexp.MustCompile(re).Match(dom) {
			t.Errorf("rendered status page lacks %s", re)
		}
	}
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 10000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}
