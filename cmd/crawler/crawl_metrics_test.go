package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// crawl --metrics-listen serves the node's metrics, the Go heap and the
// process RSS while the crawl runs (make scale samples them).
func TestCrawlMetricsListen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuf
	args := []string{"--simweb", "small", "--data", filepath.Join(t.TempDir(), "d"), "--workers", "4", "--progress", "0",
		"--min-delay", "200ms", "--cache-advice=false", "--metrics-listen", "127.0.0.1:0"}
	errc := make(chan error, 1)
	go func() { errc <- runCrawlWith(ctx, &cmdEnv{stdout: &out, stderr: &errOut}, args, nil) }()
	re := regexp.MustCompile(`metrics on (http://\S+/metrics)`)
	var url string
	for deadline := time.Now().Add(2 * time.Minute); url == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no metrics address printed: %s %s (%v)", out.String(), errOut.String(), <-errc)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"sextant_fetches_total{", "sextant_frontier_urls{", "sextant_due_disk_bytes{",
		"go_memstats_heap_alloc_bytes ", "process_resident_memory_bytes "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("interrupted crawl: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("metrics still served after the crawl returned")
	}
}
