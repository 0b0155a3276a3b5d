package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// hangWeb serves two hosts on loopback: a.test/ links to b.test/hang and
// a.test/x; the first request for /hang blocks until the client gives up
// and a.test/x answers only once /hang is in flight, so that a stop after
// two fetches always cuts /hang short.
type hangWeb struct {
	addr    string
	entered chan struct{} // closed when the first /hang arrives
	once    sync.Once
	hangs   atomic.Int32
}

func startHangWeb(t *testing.T) *hangWeb {
	t.Helper()
	w := &hangWeb{entered: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.addr = ln.Addr().String()
	srv := &http.Server{Handler: w}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return w
}

func (w *hangWeb) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, `<a href="http://b.test/hang">h</a> <a href="http://a.test/x">x</a>`)
	case "/x":
		select {
		case <-w.entered:
		case <-time.After(time.Minute):
		}
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(rw, "x")
	case "/hang":
		if w.hangs.Add(1) == 1 {
			w.once.Do(func() { close(w.entered) })
			<-r.Context().Done()
			return
		}
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(rw, "no longer hanging")
	default:
		http.NotFound(rw, r)
	}
}

func (w *hangWeb) options(dir string) Options {
	return Options{
		DataDir: dir,
		Workers: 4,
		Fetcher: fetcher.Options{
			AllowPrivate: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, w.addr)
			},
			FetchTimeout: 2 * time.Minute,
		},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 10 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
		ContentSeenSize:  -1,
		Sitemaps:         SitemapsOff, // the test counts fetches exactly: no /sitemap.xml probes
	}
}

// Defect 5: a fetch cut short by the stop is requeued, not logged — and
// must not be counted as a fetch either: Stats.Fetches (the report's
// "fetches") equals crawl.log's fetch lines, and FetchesRequeued says how
// many were cut short. The resumed run fetches the requeued URL once.
func TestStopCountsOnlyCompletedFetches(t *testing.T) {
	web := startHangWeb(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := Open(web.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- n.Run(rctx, true) }()
	// Stop once a.test/ and a.test/x are logged: /hang is then in flight.
	logPath := filepath.Join(dir, "crawl.log")
	for len(readLog(t, logPath)) < 2 {
		select {
		case err := <-runErr:
			t.Fatalf("Run returned %v before the stop", err)
		case <-ctx.Done():
			t.Fatalf("a.test/ and a.test/x not logged: %v", readLog(t, logPath))
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	logged := readLog(t, logPath)
	if st.Fetches != uint64(len(logged)) || st.Fetches != st.FetchOK+st.FetchRedirect+st.FetchHTTPErr+st.FetchErr {
		t.Errorf("Stats.Fetches %d (ok %d), crawl.log has %d fetch lines %v: a fetch cut short by the stop was counted",
			st.Fetches, st.FetchOK, len(logged), logged)
	}
	if st.FetchesRequeued != 1 {
		t.Errorf("FetchesRequeued %d, want 1 (b.test/hang)", st.FetchesRequeued)
	}

	// Resume: only the requeued URL is left, fetched once.
	if n, err = Open(web.options(dir)); err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	st = n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	set, dups := fetchedURLs(t, logPath)
	if st.Fetches != 1 || st.FetchesRequeued != 0 || len(set) != 3 || len(dups) != 0 {
		t.Errorf("resume: %d fetches, %d requeued; over both runs fetched %v, twice %v; want 1, 0, 3 URLs once each",
			st.Fetches, st.FetchesRequeued, set, dups)
	}
}

// readLog returns the fetch lines (robots lines left out) of a crawl log.
func readLog(t *testing.T, path string) []string {
	t.Helper()
	es, err := ReadLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.Outcome != OutcomeRobots {
			out = append(out, e.Outcome+" "+e.URL)
		}
	}
	return out
}
