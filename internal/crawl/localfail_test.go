package crawl

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
)

// TestLocalStorageFailureLosesNothing: when the node's own disk fails (here
// the directory large bodies spill to disappears mid-crawl — in a container
// it was an unwritable /tmp), the node stops with a clear error naming the
// cause instead of logging the page as a fetch error and dropping its
// links; restarted on a working disk it completes the crawl with exactly
// the oracle's set and nothing fetched twice.
func TestLocalStorageFailureLosesNothing(t *testing.T) {
	web, srv, oracle := smallWeb(t, 1<<20)
	dir := t.TempDir()
	spill := filepath.Join(t.TempDir(), "spill")
	if err := os.Mkdir(spill, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := testNodeOptions(t, dir, srv, web.Domain())
	opts.Fetcher.TempDir = spill
	opts.Fetcher.MemThreshold = 4 << 10 // most pages spill
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(spill); err != nil {
		t.Fatal(err)
	}
	err = n.Run(ctx, true)
	if !errors.Is(err, fetcher.ErrLocal) {
		t.Fatalf("Run with a failing spill dir returned %v, want an error wrapping fetcher.ErrLocal", err)
	}
	t.Logf("first run stopped as expected: %v", err)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Mkdir(spill, 0o755); err != nil {
		t.Fatal(err)
	}
	if n, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	fetched, dups := fetchedURLs(t, filepath.Join(dir, "crawl.log"))
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("fetched set differs from the oracle's: %v", err)
	}
}

// TestRobotsOutageLosesNothing: every host refuses its first two
// connections (a web server still starting, a blip): robots.txt fails
// twice per host, and the URLs waiting on it must be held and retried, not
// dropped as "disallowed" — the crawl still fetches exactly the oracle's
// set. (In the container fault suite the nodes started before simweb
// listened and lost their seeds' hosts this way.)
func TestRobotsOutageLosesNothing(t *testing.T) {
	web, srv, oracle := smallWeb(t, 1<<20)
	dir := t.TempDir()
	opts := testNodeOptions(t, dir, srv, web.Domain())
	var mu sync.Mutex
	refused := map[string]int{}
	opts.Fetcher.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// Per host, not per host:port: a robots.txt that redirects http→https
		// dials :443 within the attempt that reached :80 (a per-port count
		// would refuse that hop on the last attempt and lose the origin).
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		mu.Lock()
		refused[host]++
		n := refused[host]
		mu.Unlock()
		if n <= 2 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return srv.DialContext(ctx, network, addr)
	}
	// Two refusals per address, and a robots.txt that redirects to another
	// host meets that host's two refusals as well (the web has such hosts):
	// up to four failed attempts before one succeeds. With 3 attempts the
	// test failed whenever the other host had not been dialled yet.
	opts.Fetcher.RobotsAttempts = 5
	opts.Fetcher.RobotsRetryDelay = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	fetched, dups := fetchedURLs(t, filepath.Join(dir, "crawl.log"))
	if len(dups) > 0 {
		t.Errorf("%d URLs fetched twice, e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	if err := oracle.Check(fetched); err != nil {
		t.Errorf("fetched set differs from the oracle's: %v", err)
	}
}
