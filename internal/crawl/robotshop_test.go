package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// TestRobotsRedirectToOtherHostRefused: a.test's robots.txt redirects to
// b.test. The node does not follow that hop inside a.test's politeness slot:
// b.test gets no request, the crawl log says why, and a.test is crawled as
// if robots.txt were unavailable (allow all).
func TestRobotsRedirectToOtherHostRefused(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.Host+r.URL.Path]++
		mu.Unlock()
		switch {
		case r.Host == "a.test" && r.URL.Path == "/robots.txt":
			http.Redirect(w, r, "http://b.test/robots.txt", http.StatusMovedPermanently)
		case r.Host == "a.test" && r.URL.Path == "/":
			fmt.Fprint(w, `<html><a href="/private/x">x</a></html>`)
		case r.Host == "a.test":
			fmt.Fprint(w, `<html>leaf</html>`)
		default: // b.test: would disallow everything
			fmt.Fprint(w, "User-agent: *\nDisallow: /\n")
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	addr := strings.TrimPrefix(srv.URL, "http://")
	n, err := Open(Options{
		DataDir: dir, Workers: 2,
		Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"a.test": addr, "b.test": addr}},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 10 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Seed(ctx, []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits["b.test/robots.txt"] != 0 || hits["a.test/private/x"] != 1 || hits["a.test/"] != 1 {
		t.Fatalf("server saw %v", hits)
	}
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range es {
		if e.URL == "http://a.test/robots.txt" && e.Outcome == OutcomeRobots && strings.Contains(e.Note, "http://b.test/robots.txt") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no crawl-log line explains the refused hop: %+v", es)
	}
}
