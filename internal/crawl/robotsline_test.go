package crawl

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
)

// Every robots.txt fetch has a crawl-log line of its own, as Heritrix logs
// prerequisites: the robots.txt URL, its status, a robots outcome (not a
// page fetch), a note saying what was made of it, the URL that needed it
// as via and that URL's hop path plus P. Here a host with rules (200) and
// one without (404); before, only a robots.txt that redirected had a line.
func TestRobotsFetchLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt" && r.Host == "rules.test":
			fmt.Fprint(w, "User-agent: *\nDisallow: /no\n")
		case r.URL.Path == "/robots.txt", r.URL.Path == "/sitemap.xml":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			fmt.Fprintf(w, `<html><a href="http://other.test/x">o</a>%s</html>`, r.Host)
		default:
			fmt.Fprintf(w, `<html>%s%s</html>`, r.Host, r.URL.Path)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	n, err := Open(Options{
		DataDir: dir, Workers: 2,
		Fetcher:          fetcher.Options{AllowPrivate: true, Resolve: map[string]string{"rules.test": addr, "other.test": addr}},
		Frontier:         frontier.Options{MinDelay: time.Millisecond},
		DUEFlushInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlToEnd(t, n, []string{"http://rules.test/"}, time.Minute)
	es, err := ReadLogFile(filepath.Join(dir, crawlLogFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]LogEntry{ // notes as read back: spaces escaped
		"http://rules.test/robots.txt": {Status: 200, Note: "robots.txt_parsed", Via: "http://rules.test/", Hops: "P"},
		"http://other.test/robots.txt": {Status: 404, Note: "robots.txt_allow-all", Via: "http://other.test/x", Hops: "LP"},
	}
	robots := 0
	for _, e := range es {
		if !strings.HasSuffix(e.URL, "/robots.txt") {
			continue
		}
		robots++
		w, ok := want[e.URL]
		if !ok || e.Outcome != OutcomeRobots || e.Status != w.Status || e.Note != w.Note || e.Via != w.Via || e.Hops != w.Hops {
			t.Errorf("robots.txt line %+v, want %+v", e, w)
		}
		delete(want, e.URL)
	}
	if len(want) > 0 || robots != 2 || st.RobotsFetches != 2 {
		t.Errorf("%d robots.txt lines (%d fetches counted); not logged: %v", robots, st.RobotsFetches, want)
	}
	if st.Fetches != uint64(len(es)-robots) {
		t.Errorf("%d fetches counted, %d lines of which %d robots.txt: robots.txt counted as a page fetch", st.Fetches, len(es), robots)
	}
}
