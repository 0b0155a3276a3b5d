package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// stallWeb serves a.test: / links to /slow, whose first request stalls
// until the client gives up (its FetchTimeout) and whose later requests
// answer with a page linking /only — a page no other page links.
type stallWeb struct {
	addr  string
	slows atomic.Int32
}

func (s *stallWeb) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, `<a href="/slow">slow</a>`)
	case "/slow":
		if s.slows.Add(1) == 1 {
			<-r.Context().Done() // the fetcher's FetchTimeout ends it
			return
		}
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, `<a href="/only">only</a>`)
	case "/only":
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(rw, "only")
	default:
		http.NotFound(rw, r)
	}
}

// The cause of TestElasticJoinThenLeave's lost URLs (issue 25): a fetch
// that timed out was logged as an error and dropped, so the pages only it
// linked were never discovered. A timed-out fetch is now tried again
// (Options.FetchAttempts) and only its last failure is logged.
func TestTimedOutFetchIsRetried(t *testing.T) {
	web := &stallWeb{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web.addr = ln.Addr().String()
	srv := &http.Server{Handler: web}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir,
		Workers: 2,
		Fetcher: fetcher.Options{
			AllowPrivate: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, web.addr)
			},
			FetchTimeout: 300 * time.Millisecond,
		},
		Frontier:         frontier.Options{MinDelay: 0, MaxDelay: 10 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 20 * time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
		ContentSeenSize:  -1,
		Sitemaps:         SitemapsOff,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Seed(ctx, []string{"http://a.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	logged := readLog(t, filepath.Join(dir, "crawl.log"))
	want := []string{"ok http://a.test/", "ok http://a.test/slow", "ok http://a.test/only"}
	if fmt.Sprint(logged) != fmt.Sprint(want) {
		t.Errorf("crawl.log fetch lines %v, want %v: a timed-out fetch was not retried", logged, want)
	}
	if st.FetchRetries != 1 || st.FetchErr != 0 {
		t.Errorf("FetchRetries %d, FetchErr %d: want 1, 0", st.FetchRetries, st.FetchErr)
	}
	if k := n.retry.len(); k != 0 {
		t.Errorf("%d attempt counts left after the crawl: want 0 (no leak)", k)
	}
}

// The attempt counts stay bounded: an entry goes when the URL is given up,
// completed or moved to another node; only timeouts and failed connections
// are tried again.
func TestFetchRetryCounts(t *testing.T) {
	var r fetchRetry
	if !r.again("http://a.test/1", 3) || !r.again("http://a.test/1", 3) || r.again("http://a.test/1", 3) {
		t.Error("want attempts 1 and 2 retried, 3 given up")
	}
	r.again("http://a.test/2", 3)
	r.again("http://b.test:8080/3", 3)
	r.forget("http://a.test/2")
	r.forgetMoved(func(host string) bool { return host != "b.test:8080" })
	if k := r.len(); k != 0 {
		t.Errorf("%d entries left, want 0", k)
	}
	if r.again("http://a.test/4", 1) || r.len() != 0 {
		t.Error("FetchAttempts 1: no retry, no entry")
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", fetcher.ErrTimeout), false}, // not a classified fetcher error
		{context.Canceled, false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
