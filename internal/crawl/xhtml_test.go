package crawl

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// TestXHTMLSelfClosingScriptE2E is issue #24's minimal reproduction: an
// XHTML page served as application/xhtml+xml with a self-closing <script/>
// in its head. Read with HTML rules the script swallowed the body and
// b.xhtml was never fetched. The same page served as application/xml
// (XHTML root) links to c.xhtml.
func TestXHTMLSelfClosingScriptE2E(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/a.xhtml":
			w.Header().Set("Content-Type", "application/xhtml+xml")
			w.Write([]byte(`<?xml version="1.0"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head>` +
				`<script src="s.js"/></head><body><a href="b.xhtml">b</a></body></html>`))
		case "/b.xhtml":
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head>` +
				`<script src="s2.js"/></head><body><a href="c.xhtml">c</a></body></html>`))
		case "/c.xhtml", "/s.js", "/s2.js":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("leaf " + r.URL.Path))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	n, err := Open(Options{
		DataDir: t.TempDir(), Workers: 2,
		Fetcher:          fetcher.Options{AllowPrivate: true},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 50 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Seed(ctx, []string{srv.URL + "/a.xhtml"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("crawl did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/a.xhtml", "/s.js", "/b.xhtml", "/s2.js", "/c.xhtml"} {
		if hits[p] != 1 {
			t.Errorf("%s fetched %d times, want 1 (all requests: %v)", p, hits[p], hits)
		}
	}
}
