package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// `crawler crawl --factor 0` rests 0 × the fetch time between two requests
// to a host (only --min-delay). The flag's 0 used to be replaced by the
// default 10 in the frontier, so a server taking 60 ms a page saw 600 ms
// gaps (seen failing: gaps of ≈ 600 ms on the old code).
func TestCrawlFactorZero(t *testing.T) {
	const pages, fetchTime = 6, 60 * time.Millisecond
	type span struct{ start, end time.Time }
	var mu sync.Mutex
	var spans []span
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
			return
		case "/":
			w.Header().Set("Content-Type", "text/html")
			for i := range pages {
				fmt.Fprintf(w, "<a href=\"/p%d\">p%d</a>\n", i, i)
			}
			return
		}
		time.Sleep(fetchTime)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>leaf</p>")
		mu.Lock()
		spans = append(spans, span{start, time.Now()})
		mu.Unlock()
	}))
	defer srv.Close()
	seeds := filepath.Join(t.TempDir(), "seeds")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "crawl", "--seeds", seeds, "--data", t.TempDir(), "--allow-private", "--scope", "host",
		"--workers", "4", "--factor", "0", "--min-delay", "0", "--max-delay", "10s", "--due-flush", "20ms",
		"--progress", "0", "--cache-advice=false", "--sitemaps", "off")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(spans) != pages {
		t.Fatalf("%d leaf pages fetched, want %d\n%s", len(spans), pages, out)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	var gaps []string
	worst := time.Duration(0)
	for i := 1; i < len(spans); i++ {
		g := spans[i].start.Sub(spans[i-1].end)
		worst = max(worst, g)
		gaps = append(gaps, g.Round(time.Millisecond).String())
	}
	// Factor 10 would rest 600 ms; 0 leaves only the worker's own turnaround.
	// The bound is generous for a loaded machine but far below 10 × 60 ms.
	if worst > 4*fetchTime {
		t.Errorf("--factor 0: gaps between requests to the host %s, want each well under %v (10 × fetch time is %v)",
			strings.Join(gaps, " "), 4*fetchTime, 10*fetchTime)
	}
}
