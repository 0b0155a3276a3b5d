package crawl

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// TestPrivateAddressRefusedLogged: a host resolving to loopback, crawled
// with the private-address guard on, is logged as "private address refused:
// HOST (ADDR)" for each of its URLs — not as "robots.txt unreachable" — and
// counted in Stats.PrivateRefused; robots.txt is not retried.
func TestPrivateAddressRefusedLogged(t *testing.T) {
	dir := t.TempDir()
	opts := Options{
		DataDir: dir,
		Workers: 2,
		Fetcher: fetcher.Options{
			Resolve:      map[string]string{"intranet.test": "127.0.0.1:9"},
			FetchTimeout: 3 * time.Second,
		},
		Frontier:         frontier.Options{MaxDelay: 200 * time.Millisecond, FailureBackoff: 10 * time.Millisecond, MaxFailureBackoff: 100 * time.Millisecond},
		DUEFlushInterval: 50 * time.Millisecond,
		MaxPagesPerHost:  1000,
		Filter:           mustFilter(t, "intranet.test"),
	}
	n, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	seeds := []string{"http://intranet.test/a", "http://intranet.test/b"}
	st := crawlToEnd(t, n, seeds, 2*time.Minute)
	es, err := ReadLogFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "private address refused: intranet.test (127.0.0.1)"
	logged := map[string]bool{}
	for _, e := range es {
		t.Logf("%s %s %q", e.URL, e.Outcome, e.Note)
		if strings.Contains(e.Note, "unreachable") {
			t.Errorf("%s logged as %q", e.URL, e.Note)
		}
		if e.Note == string(appendField(nil, want, 1<<20)) { // the log writes spaces as '_'
			logged[e.URL] = true
		}
	}
	for _, s := range seeds {
		if !logged[s] {
			t.Errorf("%s not logged with note %q", s, want)
		}
	}
	if st.PrivateRefused != uint64(len(seeds)) || st.RobotsDisallowed != 0 || st.Fetcher.RobotsFetches != 1 {
		t.Errorf("PrivateRefused %d, RobotsDisallowed %d, robots.txt requests %d; want %d, 0, 1",
			st.PrivateRefused, st.RobotsDisallowed, st.Fetcher.RobotsFetches, len(seeds))
	}
}
