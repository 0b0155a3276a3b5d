package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// blockFirstLine is a crawl log writer whose first page line waits until
// release is closed.
type blockFirstLine struct {
	mu      sync.Mutex
	lines   []string
	blocked chan struct{} // closed when the first page line is being written
	release chan struct{}
	once    sync.Once
}

func (b *blockFirstLine) Write(p []byte) (int, error) {
	if !strings.Contains(string(p), "robots.txt") {
		first := false
		b.once.Do(func() { first = true })
		if first {
			close(b.blocked)
			<-b.release
		}
	}
	b.mu.Lock()
	b.lines = append(b.lines, string(p))
	b.mu.Unlock()
	return len(p), nil
}

// TestFetchAheadStartsNextRequest: once a page's response is read, the
// host's next URL is requested while the page is still being finished
// (here: its crawl log line is held), with no politeness delay; with
// NoFetchAhead no request is sent to the host until the page is done. The
// crawl still fetches every URL exactly once.
func TestFetchAheadStartsNextRequest(t *testing.T) {
	for _, ahead := range []bool{true, false} {
		t.Run(fmt.Sprintf("ahead=%v", ahead), func(t *testing.T) { testFetchAhead(t, ahead) })
	}
}

func testFetchAhead(t *testing.T, ahead bool) {
	var mu sync.Mutex
	got := map[string]int{}
	requests := make(chan string, 64)
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(rw, r)
			return
		}
		mu.Lock()
		got[r.URL.Path]++
		mu.Unlock()
		requests <- r.URL.Path
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, "<p>no links</p>")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	log := &blockFirstLine{blocked: make(chan struct{}), release: make(chan struct{})}
	n, err := Open(Options{
		DataDir: t.TempDir(), Workers: 4, NoFetchAhead: !ahead, CrawlLog: NewCrawlLog(log),
		Fetcher:  fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"a.test": ln.Addr().String()}},
		Frontier: frontier.Options{MinDelay: 0, Factor: 0, FactorSet: true},
		Sitemaps: SitemapsOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for i := range 6 {
		seeds = append(seeds, fmt.Sprintf("http://a.test/%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Seed(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- n.Run(ctx, true) }()
	<-requests // the first page
	select {
	case <-log.blocked:
	case <-ctx.Done():
		t.Fatal("the first page was never logged")
	}
	// The first page is being finished (its log line held).
	wait := 20 * time.Second
	if !ahead {
		wait = 500 * time.Millisecond // a negative: how long we look
	}
	select {
	case p := <-requests:
		if !ahead {
			t.Errorf("NoFetchAhead: %s requested while the host's previous page was not done", p)
		}
	case <-time.After(wait):
		if ahead {
			t.Errorf("no request for the host's next URL within %v while its previous page was being finished", wait)
		}
	}
	close(log.release) // requests is buffered for every page
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seeds {
		p := strings.TrimPrefix(s, "http://a.test")
		if got[p] != 1 {
			t.Errorf("%s requested %d times, want 1 (%+v)", p, got[p], st.Frontier)
		}
	}
}
